"""The lock-based baseline as an informer: what the demo and the benchmarks compare against.

:class:`LockedInformer` is the library's :class:`~aioinformer.Informer` over the baseline
store (:mod:`~aioinformer._harness.locked_store`, client-go's ThreadSafeStore shape): its
writer takes the write lock around each batch, which waits for every reader inside
:meth:`LockedInformer.read`, exactly as client-go's does. It runs on the caller's loop only
(its lock is an asyncio one). Its synchronous reads (``snapshot()``, and what controllers
and the manager read through it) see the live dicts, valid until the next await.

:class:`LockedFactory` makes LockedInformers, and :class:`LockedManager` a manager whose
factory is one: the demo's ``locked+scan`` and ``locked+index`` configurations run the
example operators on it unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, cast

from aioinformer._cache.deltas import Delta
from aioinformer._cache.factory import InformerFactory, InformerSpec
from aioinformer._cache.index import IndexFunc
from aioinformer._cache.informer import Changes, Informer
from aioinformer._cache.snapshot_store import Snapshot, SnapshotReader, SnapshotWriter
from aioinformer._core.errors import ConfigError
from aioinformer._harness.locked_store import LockedReader, LockedView, LockedWriter, locked_store
from aioinformer._runtime.manager import Manager

__all__ = ["LockedFactory", "LockedInformer", "LockedManager", "reading"]


class LockedInformer(Informer):
    """An informer over the lock-based baseline store (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self._host.threaded:
            raise ConfigError("the lock-based baseline runs on the caller's loop only")

    def _open_store(
        self, indexers: Mapping[str, IndexFunc] | None
    ) -> tuple[SnapshotReader, SnapshotWriter]:
        reader, writer = locked_store(indexers)
        # (the same reader and writer API, over live dicts instead of snapshots)
        return cast(SnapshotReader, reader), cast(SnapshotWriter, writer)

    async def _write(self, batch: Sequence[Delta]) -> Changes:
        async with cast(LockedWriter, self._writer).writing():  # waits for the readers
            return self._apply(batch)

    def read(self) -> AbstractAsyncContextManager[LockedView]:
        """``async with informer.read() as view``: the live view under the read lock, for
        reads across awaits (the writer waits for the body to end)."""
        return cast(LockedReader, self._reader).read()


class LockedFactory(InformerFactory):
    """An informer factory whose informers are :class:`LockedInformer` s, on the caller's
    loop (``pipeline="loop"``, whatever is asked)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "pipeline": "loop"})

    def _new_informer(
        self, spec: InformerSpec, indexers: Mapping[str, IndexFunc] | None
    ) -> Informer:
        return self._build_informer(LockedInformer, spec, indexers)


class LockedManager(Manager):
    """A manager whose informers are :class:`LockedInformer` s."""

    _factory_class = LockedFactory


def reading(informer: Informer) -> AbstractAsyncContextManager[Snapshot | LockedView]:
    """``async with reading(informer) as view``: a read across awaits, as each store allows
    it: the baseline's under its read lock, a snapshot store's on a snapshot (no lock)."""
    if isinstance(informer, LockedInformer):
        return informer.read()
    return contextlib.nullcontext(informer.snapshot())

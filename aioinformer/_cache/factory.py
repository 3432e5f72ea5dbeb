"""InformerFactory: one shared informer per resource and options, run as a group.

``async with InformerFactory(api_client) as factory:`` starts every informer created
through ``factory.informer(...)`` (before or after entering) and stops them all on exit.
Asking twice for the same resource with the same options returns the same informer (its
indexers are merged), as client-go's SharedInformerFactory does. Cancelling the task that
runs the factory stops every child task; an error in one informer's watcher is retried by
that watcher and never stops the others; an informer that dies all the same (e.g. an index
function raising in its writer) is logged at ERROR when it dies, and the others go on.
:meth:`InformerFactory.stop` is idempotent.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from aioinformer._cache.index import IndexFunc
from aioinformer._cache.informer import Informer, StoreKind
from aioinformer._client.listwatch import ListWatch
from aioinformer._core.errors import ConfigError, FreshnessTimeout
from aioinformer._core.objects import Transform

__all__ = ["InformerFactory"]

log = logging.getLogger("aioinformer.factory")

_ALL = object()


class InformerFactory:
    """Creates, shares and runs informers on one kubernetes_asyncio ``ApiClient``.

    ``namespace`` is the default namespace of the informers (None: all namespaces);
    ``store`` the default store kind ("snapshot", or "locked" for the baseline);
    ``watcher_options`` are passed to every informer's watcher (timeouts, backoff, ...).
    """

    def __init__(
        self,
        api_client: Any,
        namespace: str | None = None,
        *,
        store: StoreKind = "snapshot",
        staleness_bound: float | None = None,
        watcher_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self.store = store
        self.staleness_bound = staleness_bound
        self.watcher_options = dict(watcher_options or {})
        self._informers: dict[tuple[Any, ...], Informer] = {}
        self._tasks: dict[Informer, asyncio.Task[None]] = {}
        self._running = False
        self._closed = False

    def informer(
        self,
        group_version: str,
        plural: str,
        *,
        namespace: Any = _ALL,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        store: StoreKind | None = None,
        streaming_list: bool = False,
    ) -> Informer:
        """The shared informer for ``group_version``/``plural`` (e.g. ``"v1", "pods"`` or
        ``"apps/v1", "statefulsets"``) and these options; created on first use."""
        if self._closed:
            raise ConfigError("this InformerFactory has been closed")
        if not group_version or not plural or "/" in plural:
            raise ConfigError(f"bad resource: group_version={group_version!r} plural={plural!r}")
        ns = self.namespace if namespace is _ALL else namespace
        kind = store or self.store
        key = (
            group_version,
            plural,
            ns,
            label_selector,
            field_selector,
            metadata_only,
            kind,
            transform,
            streaming_list,
        )
        inf = self._informers.get(key)
        if inf is not None:
            for name, fn in (indexers or {}).items():
                if name not in inf.indexers:
                    if self._running:
                        raise ConfigError(
                            f"indexer {name!r} for a running informer: use "
                            "`await informer.add_indexer(name, fn)`"
                        )
                    inf.merge_indexer(name, fn)
            return inf
        group = group_version.split("/")[0] if "/" in group_version else ""
        name = f"{plural}.{group}" if group else plural
        if ns:
            name = f"{name}[{ns}]"
        lw = ListWatch(
            self.api_client,
            group_version,
            plural,
            namespace=ns,
            label_selector=label_selector,
            field_selector=field_selector,
            metadata_only=metadata_only,
        )
        inf = Informer(
            lw,
            name=name,
            store=kind,
            indexers=indexers,
            transform=transform,
            staleness_bound=self.staleness_bound,
            streaming_list=streaming_list,
            watcher_options=self.watcher_options,
        )
        self._informers[key] = inf
        if self._running:
            self._start(inf)
        return inf

    @property
    def informers(self) -> list[Informer]:
        """Every informer this factory created."""
        return list(self._informers.values())

    def _start(self, inf: Informer) -> None:
        task = asyncio.create_task(inf.run(), name=f"informer-{inf.name}")
        task.add_done_callback(functools.partial(_report_death, inf.name))
        self._tasks[inf] = task

    async def start(self) -> None:
        """Start every informer (and any created later)."""
        if self._closed:
            raise ConfigError("this InformerFactory has been closed")
        self._running = True
        for inf in self._informers.values():
            if inf not in self._tasks:
                self._start(inf)

    async def wait_for_sync(self, timeout: float | None = None) -> None:
        """Wait until every informer has applied its initial list; after ``timeout``
        seconds, ``FreshnessTimeout`` naming each informer still waiting and its last
        list/watch error."""
        try:
            await asyncio.wait_for(
                asyncio.gather(*(inf.wait_synced() for inf in self._informers.values())),
                timeout,
            )
        except TimeoutError:
            pending = [
                f"{i.name} ({i.stats().last_error or 'no error seen'})"
                for i in self._informers.values()
                if not i.has_synced
            ]
            raise FreshnessTimeout(f"not synced after {timeout}s: {'; '.join(pending)}") from None

    async def stop(self) -> None:
        """Stop every informer and wait for their tasks. A second call is harmless."""
        self._running = False
        self._closed = True
        for inf in self._informers.values():
            inf.stop()
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # failures were logged
        self._tasks.clear()

    async def __aenter__(self) -> InformerFactory:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


def _report_death(name: str, task: asyncio.Task[None]) -> None:
    """Log an informer that ended with an error, when it ends (not at the factory's stop):
    its cache no longer follows the server; the other informers keep running."""
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.error("informer %s stopped: %r; the others keep running", name, exc, exc_info=exc)

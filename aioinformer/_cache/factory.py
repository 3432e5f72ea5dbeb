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
import enum
import functools
import logging
import time
import warnings
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final, Literal

from aioinformer._cache.index import IndexFunc
from aioinformer._cache.informer import Informer, Pipeline
from aioinformer._cache.store import STORE_KINDS, StoreKind
from aioinformer._cache.watcher import WatchOptions
from aioinformer._client.listwatch import ListWatch
from aioinformer._client.rest import RestClient
from aioinformer._core.backoff import Backoff
from aioinformer._core.errors import ConfigError, FreshnessTimeout
from aioinformer._core.objects import Transform

__all__ = [
    "ALL_NAMESPACES",
    "FACTORY_NAMESPACE",
    "InformerFactory",
    "NamespaceDefault",
    "watch_options_from",
]

log = logging.getLogger("aioinformer.factory")


class NamespaceDefault(enum.Enum):
    """The type of :data:`FACTORY_NAMESPACE`."""

    FACTORY = "the factory's namespace"


FACTORY_NAMESPACE: Final = NamespaceDefault.FACTORY
"""``namespace=FACTORY_NAMESPACE`` (the default): the factory's own namespace."""
ALL_NAMESPACES: Final = None
"""``namespace=ALL_NAMESPACES`` (None): watch every namespace."""


def watch_options_from(options: WatchOptions | Mapping[str, Any] | None) -> WatchOptions:
    """A :class:`WatchOptions` from itself, None (the defaults) or a mapping of its field
    names (the older ``watcher_options`` form; a ``backoff`` entry, a Backoff, gives its
    settings). An unknown name is a :class:`ConfigError`."""
    if options is None:
        return WatchOptions()
    if isinstance(options, WatchOptions):
        return options
    fields = dict(options)
    backoff = fields.pop("backoff", None)
    if isinstance(backoff, Backoff):
        fields.update(
            backoff_initial=backoff.initial,
            backoff_maximum=backoff.maximum,
            backoff_reset_after=backoff.reset_after,
            backoff_jitter=backoff.jitter,
        )
    try:
        return WatchOptions(**fields)
    except TypeError as exc:
        raise ConfigError(f"watch options: {exc}") from None


class InformerFactory:
    """Creates, shares and runs informers on one kubernetes_asyncio ``ApiClient``.

    Args:
        api_client: a kubernetes_asyncio ``ApiClient`` (its configuration gives the host,
            credentials and TLS settings), or a :class:`~aioinformer._client.rest.RestClient`.
        namespace: the default namespace of the informers (None: all namespaces).
        store: the default store kind: "snapshot" (immutable snapshots, readers take no
            lock) or "locked" (the lock-based baseline, for comparisons).
        staleness_bound: seconds; freshness-aware reads of every informer also wait while
            its store lags the watcher by more than this (None: no bound).
        watch_options: how every informer lists, watches and recovers
            (:class:`~aioinformer.WatchOptions`: page size, watch timeouts, watchdog,
            limits, backoff).
        watcher_options: deprecated (a DeprecationWarning): the same as a mapping of
            :class:`~aioinformer.WatchOptions` field names.
        clock: the informers' clock (``time.monotonic``): receive times and staleness.
        batch_size: the most deltas each informer's writer applies per published state
            (per write lock for the locked baseline; client-go's RealFIFO PopBatch takes
            1000, its DeltaFIFO Pop before 1.33 one).
        pipeline: where each informer's watcher and writer run: "thread" (a thread of
            their own per informer, so that readers keeping this loop busy cannot delay
            them; the default for the snapshot store) or "loop" (this event loop; always
            for the locked baseline).
        compact: the informers' default for ``compact`` (see :meth:`informer`): bodies
            kept compressed with a dictionary per resource, for huge caches.
    """

    def __init__(
        self,
        api_client: Any,
        namespace: str | None = None,
        *,
        store: StoreKind = "snapshot",
        staleness_bound: float | None = None,
        watch_options: WatchOptions | None = None,
        watcher_options: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        pipeline: Pipeline | None = None,
        batch_size: int = 1000,
        compact: bool = False,
    ) -> None:
        if store not in STORE_KINDS:
            raise ConfigError(f"store must be one of {STORE_KINDS}, not {store!r}")
        if watcher_options is not None:
            if watch_options is not None:
                raise ConfigError("give watch_options or watcher_options, not both")
            warnings.warn(
                "watcher_options= is deprecated: pass watch_options=WatchOptions(...)",
                DeprecationWarning,
                stacklevel=2,
            )
        self.api_client = api_client
        self.rest = api_client if isinstance(api_client, RestClient) else RestClient(api_client)
        """The client layer every informer's requests go through."""
        self.namespace = namespace
        self.store: StoreKind = store
        self.staleness_bound = staleness_bound
        self.watch_options = watch_options_from(watch_options or watcher_options)
        self.clock = clock
        self.pipeline = pipeline
        self.batch_size = batch_size
        """Used for the informers created from now on."""
        self.compact = compact
        """The informers' default for ``compact`` (see :meth:`informer`)."""
        self._informers: dict[tuple[object, ...], Informer] = {}
        self._tasks: dict[Informer, asyncio.Task[None]] = {}
        self._running = False
        self._closed = False

    def informer(
        self,
        group_version: str,
        plural: str,
        *,
        namespace: str | Literal[NamespaceDefault.FACTORY] | None = FACTORY_NAMESPACE,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        store: StoreKind | None = None,
        streaming_list: bool = False,
        pipeline: Pipeline | None = None,
        compact: bool | None = None,
    ) -> Informer:
        """The shared informer for ``group_version``/``plural`` (e.g. ``"v1", "pods"`` or
        ``"apps/v1", "statefulsets"``) and these options; created on first use.

        Args:
            group_version: ``"v1"`` for the core group, else ``"GROUP/VERSION"``.
            plural: the resource's plural name (``"pods"``).
            namespace: one namespace, or None for all (default: the factory's).
            indexers: extra indexes, name -> function (merged when the informer is shared).
            transform: applied to each object before it is stored (e.g.
                :func:`~aioinformer.drop_managed_fields`); None drops the object.
            label_selector: a server-side label selector (``"app=web,tier!=db"``).
            field_selector: a server-side field selector (``"spec.nodeName=node-1"``).
            metadata_only: cache PartialObjectMetadata only.
            store: this informer's store kind (default: the factory's).
            streaming_list: sync with a streaming list (WatchList) instead of a list.
            pipeline: where its watcher and writer run (default: the factory's; see
                :class:`InformerFactory`).
            compact: keep the objects' bodies compressed with a dictionary trained on the
                first objects (for huge caches: a fraction of the memory, a decompression
                per body access; default: the factory's).
        """
        if self._closed:
            raise ConfigError("this InformerFactory has been closed")
        if not group_version or not plural or "/" in plural:
            raise ConfigError(f"bad resource: group_version={group_version!r} plural={plural!r}")
        kind = store or self.store
        if kind not in STORE_KINDS:
            raise ConfigError(f"store must be one of {STORE_KINDS}, not {kind!r}")
        ns = self.namespace if namespace is FACTORY_NAMESPACE else namespace
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
            pipeline or self.pipeline,
            self.compact if compact is None else compact,
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
        options = self.watch_options
        lw = ListWatch(
            self.rest,
            group_version,
            plural,
            namespace=ns,
            label_selector=label_selector,
            field_selector=field_selector,
            metadata_only=metadata_only,
            max_line_bytes=options.max_line_bytes,
            max_list_bytes=options.max_list_bytes,
            header_timeout=options.header_timeout,
            list_timeout=options.list_timeout,
            watch_deadline_margin=options.watch_deadline_margin,
        )
        inf = Informer(
            lw,
            name=name,
            store=kind,
            indexers=indexers,
            transform=transform,
            staleness_bound=self.staleness_bound,
            streaming_list=streaming_list,
            watch_options=options,
            clock=self.clock,
            batch_size=self.batch_size,
            pipeline=pipeline or (self.pipeline if kind == "snapshot" else None),
            compact=self.compact if compact is None else compact,
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
                asyncio.gather(*(inf.wait_for_sync() for inf in self._informers.values())),
                timeout,
            )
        except TimeoutError:
            pending = [
                f"{i.name} ({i.statistics().last_error or 'no error seen'})"
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

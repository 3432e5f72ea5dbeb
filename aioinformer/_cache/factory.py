"""InformerFactory: one shared informer per :class:`InformerSpec`, run as a group.

``async with InformerFactory(api_client) as factory:`` runs every informer created through
``factory.informer(...)`` (before or after entering) and stops them all on exit: each runs
as a task of the factory's own task group, so none outlives the block. Asking twice for the
same spec returns the same informer (its indexers are merged), as client-go's
SharedInformerFactory does.

Contracts:

* **One pipeline host per factory.** With ``pipeline="thread"`` (the default) every
  informer's watch -> FIFO -> writer runs on the factory's one pipeline thread, with one
  event loop and one HTTP session (:mod:`~aioinformer._cache.pipeline`); with ``"loop"``,
  on the caller's loop. The thread starts with the first informer and ends when the
  factory exits. What the factory does to the process beyond that is its
  :class:`~aioinformer.ProcessSettings`, and nothing else.
* **Sharing.** The spec is the sharing key. A transform is the same when it is the same
  function, or a function of the same code over the same captured objects (a lambda
  written once but made anew per call: ``lambda o: project(o, FIELDS)``); any other
  difference makes a second informer, with its own watch and cache, and is logged at
  WARNING when it is for a resource the factory already watches in the same scope.
* **Dynamic informers.** :meth:`InformerFactory.acquire` holds an informer for as long as
  its caller needs it (:class:`~aioinformer.InformerHandle`); :meth:`InformerFactory.informer`
  pins one for the factory's life. An informer runs while it is pinned or held, starts
  when first asked for if the factory runs (else with the factory), and is stopped and
  forgotten when its last hold is released (see :mod:`~aioinformer._cache.handle`).
  :attr:`InformerFactory.informers` and :meth:`InformerFactory.wait_for_sync` follow the
  current set.
* **Sharded informers.** ``shards=`` (a :class:`~aioinformer.ShardSelector`) makes an
  informer that lists, watches and caches only those hash ranges (KEP-5866; see
  :meth:`~aioinformer.Informer.rescope`). The key holds whether an informer is sharded,
  not its ranges: one sharded informer per scope, whose ranges its owner changes with
  ``rescope``. Asking again with its current ranges (or without ``shards`` for the
  unsharded one) shares it; asking with other ranges is a
  :class:`~aioinformer.ConfigError` (rescope it instead).
* **Failures.** An error in one informer's watcher is retried by that watcher and never
  stops the others; an informer that dies all the same (e.g. an index function raising in
  its writer) is logged at ERROR when it dies, and the others go on. Cancelling the task
  that runs the factory stops every informer.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Final, TypedDict, Unpack

from aioinformer._cache.handle import InformerHandle
from aioinformer._cache.index import IndexFunc, check_indexers
from aioinformer._cache.informer import PIPELINES, Informer, Pipeline
from aioinformer._cache.pipeline import LoopHost, PipelineHost, ThreadHost
from aioinformer._cache.process import ProcessSettings
from aioinformer._cache.watcher import WatchOptions
from aioinformer._client.listwatch import ListWatch
from aioinformer._client.rest import ApiClientLike, RestClient
from aioinformer._core import logs
from aioinformer._core.callables import check_callable
from aioinformer._core.errors import ConfigError, FreshnessTimeout
from aioinformer._core.objects import Transform
from aioinformer._core.service import Service, wait_ended
from aioinformer._core.shardkeys import ShardSelector

__all__ = [
    "ALL_NAMESPACES",
    "FACTORY_NAMESPACE",
    "InformerFactory",
    "InformerOptions",
    "InformerSpec",
    "NamespaceDefault",
]

log = logs.logger("aioinformer.factory")


class NamespaceDefault(enum.Enum):
    """The type of :data:`FACTORY_NAMESPACE`."""

    FACTORY = "the factory's namespace"


FACTORY_NAMESPACE: Final = NamespaceDefault.FACTORY
"""``namespace=FACTORY_NAMESPACE`` (the default): the factory's own namespace."""
ALL_NAMESPACES: Final = None
"""``namespace=ALL_NAMESPACES`` (None): watch every namespace."""


def _transform_key(transform: Transform | None) -> object:
    """What makes two transforms the same: the function itself, or its code over the same
    captured objects and defaults (so a lambda made anew per call is still the same one);
    a ``functools.partial`` by its function and arguments. Identities (``id``) stand for
    the captured objects: the spec keeps the transform, so they stay alive and unique."""
    if transform is None:
        return None
    if isinstance(transform, functools.partial):
        return (
            "partial",
            _transform_key(transform.func),
            tuple(map(id, transform.args)),
            tuple((k, id(v)) for k, v in sorted(transform.keywords.items())),
        )
    code = getattr(transform, "__code__", None)
    if code is None:  # a callable object: only itself
        return ("object", id(transform))
    cells = getattr(transform, "__closure__", None) or ()
    return (
        "function",
        code,
        id(getattr(transform, "__self__", None)),
        tuple(id(c.cell_contents) for c in cells),
        tuple(map(id, getattr(transform, "__defaults__", None) or ())),
        tuple((k, id(v)) for k, v in sorted((transform.__kwdefaults__ or {}).items())),
    )


class InformerOptions(TypedDict, total=False):
    """The options of an informer request, declared once for
    :meth:`InformerFactory.informer` and :meth:`aioinformer.Manager.informer` (a misspelled
    one is a type error); each may be left out."""

    namespace: str | NamespaceDefault | None
    """One namespace, or None for all (default: the factory's, :data:`FACTORY_NAMESPACE`)."""
    indexers: Mapping[str, IndexFunc] | None
    """Extra indexes, name -> function (merged when the informer is shared)."""
    transform: Transform | None
    """Applied to each object before it is stored (e.g.
    :func:`~aioinformer.drop_managed_fields`); returning None drops the object."""
    label_selector: str | None
    """A server-side label selector (``"app=web,tier!=db"``)."""
    field_selector: str | None
    """A server-side field selector (``"spec.nodeName=node-1"``)."""
    metadata_only: bool
    """Cache PartialObjectMetadata only."""
    streaming_list: bool
    """Sync with a streaming list (WatchList) instead of a list."""
    compact: bool | None
    """Keep the bodies compressed with a dictionary trained on the first objects (huge
    caches: a fraction of the memory, a decompression per body access; default: the
    factory's)."""
    shards: ShardSelector | None
    """List, watch and cache only these hash ranges of the key space (KEP-5866
    ``shardSelector``, filtered client-side where the server ignores it); None: every
    object. See :meth:`~aioinformer.Informer.rescope`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InformerSpec:
    """What one informer caches and how: the factory's sharing key (see the module
    docstring). :meth:`InformerFactory.informer` builds it from its arguments."""

    group_version: str
    """``"v1"`` for the core group, else ``"GROUP/VERSION"``."""
    plural: str
    """The resource's plural name (``"pods"``)."""
    namespace: str | None = None
    """One namespace, or None for all (or a cluster-scoped resource)."""
    label_selector: str | None = None
    """A server-side label selector (``"app=web,tier!=db"``)."""
    field_selector: str | None = None
    """A server-side field selector (``"spec.nodeName=node-1"``)."""
    metadata_only: bool = False
    """Cache PartialObjectMetadata only."""
    transform: Transform | None = field(default=None, compare=False)
    """Applied to each object before it is stored; returning None drops the object."""
    streaming_list: bool = False
    """Sync with a streaming list (WatchList) instead of a list."""
    compact: bool = False
    """Keep the bodies compressed with a dictionary trained on the first objects."""
    shards: ShardSelector | None = field(default=None, compare=False)
    """The hash ranges listed, watched and cached (None: every object). Not part of the
    key: whether there are any is (see the module docstring)."""
    _transform: object = field(init=False, repr=False, default=None)
    _sharded: bool = field(init=False, repr=False, default=False)

    def __post_init__(self) -> None:
        if not self.group_version or not self.plural or "/" in self.plural:
            raise ConfigError(
                f"bad resource: group_version={self.group_version!r} plural={self.plural!r}"
            )
        if self.shards is not None and not isinstance(self.shards, ShardSelector):
            raise ConfigError(f"shards must be a ShardSelector, not {type(self.shards).__name__}")
        object.__setattr__(self, "_transform", _transform_key(self.transform))
        object.__setattr__(self, "_sharded", self.shards is not None)

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.group_version.rpartition("/")[0]

    @property
    def name(self) -> str:
        """The informer's name: ``plural[.group]``, plus ``[namespace]``, plus what else
        scopes it in braces (``{label=SELECTOR,field=SELECTOR,metadata}``), so informers of
        one resource with different scopes have different names (in logs, ``top`` and
        the ``informer`` label of ``/metrics``)."""
        name = f"{self.plural}.{self.group}" if self.group else self.plural
        if self.namespace:
            name = f"{name}[{self.namespace}]"
        scope = [
            *([f"label={self.label_selector}"] if self.label_selector else ()),
            *([f"field={self.field_selector}"] if self.field_selector else ()),
            *(["metadata"] if self.metadata_only else ()),
        ]
        return f"{name}{{{','.join(scope)}}}" if scope else name

    def scope(self) -> tuple[object, ...]:
        """What the informer watches (resource, namespace, selectors, metadata only),
        without how it keeps it: two specs of one scope hold the same objects."""
        return (
            self.group_version,
            self.plural,
            self.namespace,
            self.label_selector,
            self.field_selector,
            self.metadata_only,
        )

    def differences(self, other: InformerSpec) -> list[str]:
        """The names of the fields in which ``other`` differs (``transform`` by the rule
        of the module docstring)."""
        names = [f.name for f in fields(self) if f.compare and not f.name.startswith("_")]
        found = [n for n in names if getattr(self, n) != getattr(other, n)]
        if self._transform != other._transform:
            found.append("transform")
        if self._sharded != other._sharded:
            found.append("shards")
        return found


class InformerFactory(Service):
    """Creates, shares and runs informers on one API server (see the module docstring).

    Args:
        api_client: a kubernetes_asyncio ``ApiClient`` (its configuration gives the host,
            credentials and TLS settings), or a :class:`~aioinformer._client.rest.RestClient`.
        namespace: the default namespace of the informers (None: all namespaces).
        staleness_bound: seconds; freshness-aware reads of every informer also wait while
            its store lags the watcher by more than this (None: no bound).
        watch_options: how every informer lists, watches and recovers
            (:class:`~aioinformer.WatchOptions`: page size, watch timeouts, watchdog,
            limits, backoff).
        clock: the informers' clock (``time.monotonic``): receive times and staleness.
        batch_size: the most deltas each informer's writer applies per published state
            (client-go's RealFIFO PopBatch takes 1000).
        pipeline: where the informers' watchers and writers run: "thread" (one thread
            for all of them, so that readers keeping this loop busy cannot delay them) or
            "loop" (this event loop).
        compact: the informers' default for ``compact`` (see :meth:`informer`): bodies
            kept compressed with a dictionary per resource, for huge caches.
        process: the process-wide effects the factory may have
            (:class:`~aioinformer.ProcessSettings`).
    """

    def __init__(
        self,
        api_client: ApiClientLike | RestClient,
        namespace: str | None = None,
        *,
        staleness_bound: float | None = None,
        watch_options: WatchOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
        batch_size: int = 1000,
        pipeline: Pipeline = "thread",
        compact: bool = False,
        process: ProcessSettings | None = None,
    ) -> None:
        if pipeline not in PIPELINES:
            raise ConfigError(f"pipeline must be one of {PIPELINES}, not {pipeline!r}")
        self.rest = api_client if isinstance(api_client, RestClient) else RestClient(api_client)
        """The client layer every informer's requests go through."""
        self.namespace = namespace
        self.staleness_bound = staleness_bound
        self.watch_options = watch_options or WatchOptions()
        self.clock = clock
        self.batch_size = batch_size
        self.compact = compact
        """The informers' default for ``compact`` (see :meth:`informer`)."""
        self.process = process or ProcessSettings()
        """The process-wide effects this factory may have."""
        self.host: PipelineHost = (
            ThreadHost(f"{id(self):x}", self.process)
            if pipeline == "thread"
            else LoopHost(self.process)
        )
        """Where every informer's pipeline runs."""
        self._informers: dict[InformerSpec, Informer] = {}
        # the holds are on informers, not specs (an informer's spec may change: re-scoping)
        self._pinned: set[Informer] = set()  # asked for with informer(): never stopped
        self._holders: dict[Informer, int] = {}  # handles not yet released (none: no key)
        self._changed = asyncio.Event()  # set (and replaced) when the set of informers changes
        self._group: asyncio.TaskGroup | None = None
        self._tasks: dict[Informer, asyncio.Task[None]] = {}
        self._deferred: set[Informer] = set()  # started only by start_deferred()
        self._closed = False

    def __repr__(self) -> str:
        return f"<InformerFactory {self.rest!r} informers={len(self._informers)}>"

    @property
    def pipeline(self) -> Pipeline:
        """Where the informers' pipelines run: "thread" or "loop"."""
        return "thread" if self.host.threaded else "loop"

    def informer(
        self, group_version: str, plural: str, **options: Unpack[InformerOptions]
    ) -> Informer:
        """The shared informer for ``group_version``/``plural`` (e.g. ``"v1", "pods"`` or
        ``"apps/v1", "statefulsets"``) and ``options`` (:class:`InformerOptions`: the
        namespace, indexers, transform, selectors, ...); created on first use, pinned:
        it runs as long as the factory (use :meth:`acquire` for one that may stop).

        Args:
            group_version: ``"v1"`` for the core group, else ``"GROUP/VERSION"``.
            plural: the resource's plural name (``"pods"``).
        """
        return self.informer_for(
            self._spec(group_version, plural, **options), options.get("indexers")
        )

    def acquire(
        self, group_version: str, plural: str, **options: Unpack[InformerOptions]
    ) -> InformerHandle:
        """A hold on the shared informer :meth:`informer` would return (the same
        arguments), created on first use and started at once if the factory runs;
        ``await handle.release()`` (or ``async with``) gives it back, and the last release
        of an informer nobody pinned stops and forgets it (see
        :class:`~aioinformer.InformerHandle` for what happens to its handlers, its
        waiters and its memory). :class:`ConfigError` once the factory has ended.

        Args:
            group_version: ``"v1"`` for the core group, else ``"GROUP/VERSION"``.
            plural: the resource's plural name (``"pods"``).
        """
        return self.acquire_for(
            self._spec(group_version, plural, **options), options.get("indexers")
        )

    def _spec(
        self, group_version: str, plural: str, **options: Unpack[InformerOptions]
    ) -> InformerSpec:
        """The :class:`InformerSpec` :meth:`informer` and :meth:`acquire` share informers
        by, with this factory's defaults filled in (its namespace, its ``compact``)."""
        namespace = options.get("namespace", FACTORY_NAMESPACE)
        compact = options.get("compact")
        return InformerSpec(
            group_version=group_version,
            plural=plural,
            namespace=self.namespace if namespace is FACTORY_NAMESPACE else namespace,
            label_selector=options.get("label_selector"),
            field_selector=options.get("field_selector"),
            metadata_only=options.get("metadata_only", False),
            transform=options.get("transform"),
            streaming_list=options.get("streaming_list", False),
            compact=self.compact if compact is None else compact,
            shards=options.get("shards"),
        )

    def informer_for(
        self, spec: InformerSpec, indexers: Mapping[str, IndexFunc] | None = None
    ) -> Informer:
        """The shared informer of ``spec`` (created on first use), with ``indexers``
        merged into it, pinned (see :meth:`informer`)."""
        inf = self._shared(spec, indexers)
        self._pinned.add(inf)
        return inf

    def acquire_for(
        self, spec: InformerSpec, indexers: Mapping[str, IndexFunc] | None = None
    ) -> InformerHandle:
        """A hold on the shared informer of ``spec``, with ``indexers`` merged into it
        (see :meth:`acquire`)."""
        inf = self._shared(spec, indexers)
        self._holders[inf] = self._holders.get(inf, 0) + 1
        return InformerHandle(inf, self._release)

    def holders(self, informer: Informer) -> int:
        """How many handles hold ``informer`` now (0 for one only pinned, or one this
        factory no longer runs)."""
        return self._holders.get(informer, 0)

    def is_pinned(self, informer: Informer) -> bool:
        """Whether ``informer`` was asked for with :meth:`informer` (it runs as long as
        the factory)."""
        return informer in self._pinned

    async def _release(self, handle: InformerHandle) -> None:
        """One hold on ``handle.informer`` given back: the last one of an unpinned
        informer stops it (its task cancelled and awaited; closed, if it never ran) and
        forgets it."""
        inf = handle.informer
        held = self._holders.pop(inf, 0)
        if held == 0:  # (cannot happen: a handle releases once, and only its own hold)
            return
        left = held - 1
        if left > 0:
            self._holders[inf] = left
        if left > 0 or inf in self._pinned:
            return
        spec = next((s for s, i in self._informers.items() if i is inf), None)
        if spec is not None:
            del self._informers[spec]
            self._membership_changed()
        task = self._tasks.pop(inf, None)
        if task is not None:
            task.cancel()
            await wait_ended(task)
        elif not inf.closed:  # never started (the factory has not run yet)
            await inf.close_unstarted()
        log.debug("informer %s released by its last holder: stopped", inf.name)

    def defer(self, informer: Informer) -> None:
        """Start ``informer`` (one of this factory's, not started yet) only when
        :meth:`start_deferred` is called, not with the factory; until then
        :meth:`wait_for_sync` does not wait for it. A manager in sharded-cache mode defers
        its sharded informers until the replica owns some buckets."""
        if informer in self._tasks or informer.closed:
            raise ConfigError(f"informer {informer.name} has started: it cannot be deferred")
        self._deferred.add(informer)

    def is_deferred(self, informer: Informer) -> bool:
        """Whether ``informer`` waits for :meth:`start_deferred`."""
        return informer in self._deferred

    def start_deferred(self, informer: Informer) -> None:
        """Start a deferred informer (at once if the factory runs, else with it)."""
        if informer not in self._deferred:
            return
        self._deferred.discard(informer)
        self._membership_changed()
        if self._group is not None and informer not in self._tasks:
            self._start(informer)

    def _membership_changed(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _shared(self, spec: InformerSpec, indexers: Mapping[str, IndexFunc] | None) -> Informer:
        """The informer of ``spec`` (created, and started if the factory runs, on first
        use), with ``indexers`` merged into it."""
        if self._closed:
            raise ConfigError("this InformerFactory has been closed")
        check_indexers(indexers)
        if spec.transform is not None:
            check_callable(spec.transform, "transform")
        inf = self._informers.get(spec)
        if inf is not None and spec.shards is not None and inf.shards != spec.shards:
            raise ConfigError(
                f"this factory's informer of {spec.name} is sharded to "
                f"{inf.shards.text if inf.shards else None!r}, not {spec.shards.text!r}: "
                "one sharded informer per scope (use `await informer.rescope(shards)`)"
            )
        if inf is not None:
            for name, fn in (indexers or {}).items():
                if name not in inf.indexers:
                    if inf in self._tasks:
                        raise ConfigError(
                            f"indexer {name!r} for a running informer: use "
                            "`await informer.add_indexer(name, fn)`"
                        )
                    inf.merge_indexer(name, fn)
            return inf
        for other in self._informers:
            if other.scope() == spec.scope():
                log.warning(
                    "a second informer of %s: it differs from the one this factory already "
                    "runs in %s, so it keeps its own watch and cache (ask with the same "
                    "options to share one)",
                    spec.name,
                    ", ".join(other.differences(spec)),
                )
                break
        inf = self._informers[spec] = self._new_informer(spec, indexers)
        self._membership_changed()
        if self._group is not None:
            self._start(inf)
        return inf

    def _new_informer(
        self, spec: InformerSpec, indexers: Mapping[str, IndexFunc] | None
    ) -> Informer:
        """The informer of a new ``spec``."""
        return self._build_informer(Informer, spec, indexers)

    def _build_informer(
        self,
        cls: type[Informer],
        spec: InformerSpec,
        indexers: Mapping[str, IndexFunc] | None,
    ) -> Informer:
        options = self.watch_options
        list_watch = ListWatch(
            self.rest,
            spec.group_version,
            spec.plural,
            namespace=spec.namespace,
            label_selector=spec.label_selector,
            field_selector=spec.field_selector,
            metadata_only=spec.metadata_only,
            max_line_bytes=options.max_line_bytes,
            max_list_bytes=options.max_list_bytes,
            header_timeout=options.header_timeout,
            list_timeout=options.list_timeout,
            watch_deadline_margin=options.watch_deadline_margin,
            shards=spec.shards,
        )
        return cls(
            list_watch,
            name=spec.name,
            host=self.host,
            indexers=indexers,
            transform=spec.transform,
            staleness_bound=self.staleness_bound,
            streaming_list=spec.streaming_list,
            watch_options=options,
            clock=self.clock,
            batch_size=self.batch_size,
            compact=spec.compact,
        )

    @property
    def informers(self) -> list[Informer]:
        """Every informer this factory runs (or will run once started): those pinned and
        those held, not those released by their last holder."""
        return list(self._informers.values())

    def _start(self, inf: Informer) -> None:
        assert self._group is not None
        self._tasks[inf] = self._group.create_task(_run(inf), name=f"informer-{inf.name}")

    async def wait_for_sync(self, timeout: float | None = None) -> None:
        """Wait until every informer of the factory has applied its initial list: the set
        as it is while it waits (one acquired meanwhile is waited for too; one released
        meanwhile no longer is, and its ClosedError is not raised). After ``timeout``
        seconds, ``FreshnessTimeout`` naming each informer still waiting and its last
        list/watch error; the ``ClosedError`` of an informer of the factory that stops
        first, at once.

        Whatever ends the wait (a sync, an error, a timeout, a cancellation), it returns
        only once the per-informer waits it started have ended and their outcomes were
        read: nothing is left running, no "exception was never retrieved", and a
        cancellation stays a cancellation."""
        waits: dict[Informer, asyncio.Task[None]] = {}
        try:
            async with asyncio.timeout(timeout):  # (not wait_for: it may lose a cancellation)
                while True:
                    current = [i for i in self._informers.values() if i not in self._deferred]
                    for inf in current:
                        if inf not in waits and not inf.has_synced:
                            waits[inf] = asyncio.create_task(
                                inf.wait_for_sync(), name=f"wait-for-sync-{inf.name}"
                            )
                    if _failure(waits, current) is not None or all(
                        inf.has_synced for inf in current
                    ):
                        break
                    changed = asyncio.create_task(self._changed.wait())
                    try:
                        pending = [w for i, w in waits.items() if i in current and not w.done()]
                        await asyncio.wait([changed, *pending], return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        changed.cancel()
                        await wait_ended(changed)
        except TimeoutError:
            pending_names = [
                f"{i.name} ({i.statistics().last_error or 'no error seen'})"
                for i in self._informers.values()
                if not i.has_synced and i not in self._deferred
            ]
            raise FreshnessTimeout(
                f"not synced after {timeout}s: {'; '.join(pending_names)}"
            ) from None
        finally:
            for wait in waits.values():
                wait.cancel()
            for wait in waits.values():
                await wait_ended(wait)
            failed = _failure(waits, self._informers.values())  # (every outcome read)
        if failed is not None:
            raise failed

    def _service_name(self) -> str:
        return f"informer-factory-{id(self):x}"

    async def run(self) -> None:
        """Run every informer (and those created while it runs) until cancelled, each on
        the factory's pipeline host; then stop them (each ends its pipeline first) and the
        pipeline thread. ``async with factory:`` runs it in a task of its own. A factory
        runs once."""
        if self._closed:
            raise ConfigError("this InformerFactory has run already")
        self._begin()
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for inf in self._informers.values():
                    if inf not in self._deferred:
                        self._start(inf)
                self._ready()
                await asyncio.get_running_loop().create_future()  # until cancelled
        finally:
            self._closed = True
            self._group = None
            self._tasks.clear()
            try:
                await self.host.aclose()
            finally:
                self._end()


def _failure(
    waits: Mapping[Informer, asyncio.Task[None]], current: Iterable[Informer]
) -> BaseException | None:
    """The error of the first ended wait of an informer in ``current`` (those of informers
    released meanwhile do not count); every ended wait's outcome is read."""
    members = set(current)
    found = None
    for inf, wait in waits.items():
        if wait.done() and not wait.cancelled():
            error = wait.exception()
            if error is not None and inf in members and found is None:
                found = error
    return found


async def _run(inf: Informer) -> None:
    """Run ``inf``; an informer that dies is logged when it dies (its cache no longer
    follows the server) and the others keep running."""
    try:
        await inf.run()
    except Exception as exc:
        log.error("informer %s stopped: %r; the others keep running", inf.name, exc, exc_info=exc)

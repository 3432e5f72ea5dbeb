"""The informer: watch -> FIFO -> store writer -> handlers, and freshness-aware reads.

An :class:`Informer` keeps a local cache of one resource (one group/version/plural, one
namespace or all, optional selectors) in sync with the API server. Its data flow is one
direction with one writer, and reads top to bottom in :meth:`Informer.run`:

    Watcher task --ObjectDelta/Replace/Bookmark--> RealFIFO --pop_batch--> store writer
        --publish--> readers (no lock)      --changes--> Dispatcher (handlers)

Contracts:

* Readers never block the writer. ``informer.snapshot()`` is O(1), takes no lock and
  never awaits; a Snapshot never changes, so it can be iterated across awaits.
* resourceVersions compare as integers. ``wait_for_rv(rv)`` returns a snapshot whose RV is
  at least ``rv``, of the server's current history (a reset of that history starts a new
  epoch: see :meth:`Informer.wait_for_rv`); ``query(index, value, min_rv=...)`` combines
  freshness and an index; ``wait_until(predicate)`` re-evaluates after every publish. The
  store's RV is the RV of the last event, bookmark or relist applied (not the largest ever
  seen), so it follows the server when the server's resourceVersions go backwards.
* The writer never dies of one item: a batch the store fails to apply is applied again one
  item at a time, and an item that fails alone is skipped, counted (``apply_errors``) and
  logged with its key, once a harmless probe (a bookmark at the current RV) shows the store
  itself still works; a store that fails even that is broken, and the informer stops
  (the factory logs it).
* After each sync or relist is published, the heap's free memory is returned to the
  operating system (:mod:`~aioinformer._cache.trim`), unless the host's
  :class:`~aioinformer.ProcessSettings` say not to: RSS follows the cache's size, not the
  peak of decoding the list.
* ``staleness`` is how long the oldest delta the watcher has received but the store has not
  yet published has been waiting (0 when caught up), by the informer's ``clock``. With
  ``staleness_bound`` set, the reads that await freshness (``wait_for_rv``, ``wait_fresh``
  and every ``query``, with or without ``min_rv``) also wait while the staleness exceeds
  the bound; ``snapshot()`` never waits.
* Handlers run in their own tasks (see :mod:`~aioinformer._cache.handlers`): a slow async
  handler delays only itself (a blocking sync one blocks the loop). Each change reaches
  each subscriber exactly once, in order: every batch's changes are handed over tagged
  with the number of the state they made, and a subscriber added later starts from the
  snapshot it was given (the changes up to it are in that snapshot, those after reach it).
* **Where the pipeline runs** is its :class:`~aioinformer._cache.pipeline.PipelineHost`'s
  business: the factory's pipeline thread (the default; one for all its informers) or the
  caller's loop. Either way each snapshot is published by one reference assignment,
  visible to every thread at once, and the handlers, the freshness waiters and the sync
  state are woken on the caller's loop once per batch of publishes (through the host's
  ``notify``: one wake-up while one is pending), and not at all for a publish nobody
  there waits for (no subscriber, no freshness waiter, the sync already delivered): a
  publish then costs the caller's loop nothing, and the pipeline thread no system call
  (each gives the interpreter's lock away, and getting it back from busy readers costs
  up to a switch interval). Neither side can miss the other: a subscriber announces
  itself (:meth:`_listen`) before it reads the snapshot it starts from, a waiter
  registers before it checks its condition, and the writer looks for either only after
  it has published. :meth:`on_publish` and :meth:`on_receive`
  listeners run where the pipeline runs. Cancelling :meth:`Informer.run` ends the pipeline
  before ``run`` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from aioinformer._cache.deltas import Bookmark, Change, Delta, Evict, ObjectDelta, Replace
from aioinformer._cache.fifo import RealFIFO
from aioinformer._cache.handlers import (
    DEFAULT_MAX_QUEUE,
    ChangeStream,
    Dispatcher,
    OnAdd,
    OnDelete,
    OnUpdate,
    Subscription,
    SubscriptionStatistics,
)
from aioinformer._cache.index import IndexFunc
from aioinformer._cache.pipeline import LoopHost, PipelineHost
from aioinformer._cache.snapshot_store import (
    Snapshot,
    SnapshotReader,
    SnapshotWriter,
    snapshot_store,
)
from aioinformer._cache.trim import release_free_memory
from aioinformer._cache.watcher import ListerWatcher, Watcher, WatchOptions
from aioinformer._client.discovery import ApiResource
from aioinformer._client.shardfilter import ShardFilter, ShardMode
from aioinformer._core import logs
from aioinformer._core.callables import check_callable
from aioinformer._core.errors import ClosedError, ConfigError, FreshnessTimeout
from aioinformer._core.failurelog import FailureLog
from aioinformer._core.labels import label_matcher
from aioinformer._core.objects import KubeObject, Transform
from aioinformer._core.service import Service
from aioinformer._core.shardkeys import ShardSelector

__all__ = ["PIPELINES", "Informer", "InformerStatistics", "Pipeline"]

log = logs.logger("aioinformer.informer")

Pipeline: TypeAlias = Literal["thread", "loop"]
"""Where an informer's watcher and writer run: its factory's pipeline thread, or the
caller's loop."""
PIPELINES: tuple[Pipeline, ...] = ("thread", "loop")

Changes: TypeAlias = "list[Change] | Callable[[], list[Change]]"
"""A published batch's changes: built, or a function that builds them when needed (see
:meth:`Informer._apply`)."""


@dataclass(frozen=True, slots=True)
class InformerStatistics:
    """A point-in-time view of one informer's health."""

    name: str
    """The informer's name (``plural[.group]``, plus the namespace when it has one)."""
    objects: int
    """Objects in the store."""
    resource_version: int
    """RV of the last published state."""
    seq: int
    """Number of the last published state (one per applied batch)."""
    has_synced: bool
    """Whether the initial list has been applied."""
    fifo_depth: int
    """Items waiting in the FIFO."""
    fifo_peak: int
    """Largest FIFO depth seen (since start, or since :meth:`Informer.reset_fifo_peak`),
    counted by the FIFO's puts: exact whichever thread drains it."""
    staleness: float
    """Seconds the oldest unapplied delta has waited (0 when caught up)."""
    deltas_per_second: float
    """Deltas applied per second, averaged over the last few seconds."""
    applied_total: int
    """Deltas applied since start."""
    batches: int
    """Batches applied (one published state each)."""
    in_place_batches: int
    """Batches the snapshot store applied in place (nobody held the current snapshot)."""
    relists: int
    """Syncs after the first (after a 410, a resourceVersion regression, a restart)."""
    watch_restarts: int
    """Watches re-established after a close, a drop or a stall."""
    decode_errors: int
    """Lines or list items skipped because they were not valid watch events or objects."""
    transform_errors: int = 0
    """Objects the transform raised on (skipped)."""
    index_errors: int = 0
    """Index function calls that raised (the object left out of that index)."""
    stream_errors: int = 0
    """Failed requests without an HTTP status (connection, cut or stalled stream, non-JSON)."""
    errors_by_code: Mapping[int, int] = field(default_factory=dict)
    """HTTP status (or watch ERROR event code) -> times seen, 410s included."""
    last_error: str = ""
    """The most recent failed list or watch (``WatcherStatistics.last_error``); "" if none."""
    history_resets: int = 0
    """Times the server's resourceVersion went backwards (each one relisted at RV "")."""
    requests: int = 0
    """List pages, watches and history checks the watcher sent."""
    throttled: int = 0
    """Requests that waited for the request ceiling (``WatchOptions.request_rate``)."""
    apply_errors: int = 0
    """Items the store failed to apply (skipped; the writer went on)."""
    listener_errors: int = 0
    """Calls of a publish listener (``on_publish``) that raised (the writer went on)."""
    handlers: tuple[SubscriptionStatistics, ...] = ()
    """Each handler subscription's queue depth, peak, overflows and counters."""
    pipeline: Pipeline = "loop"
    """Where the watcher and the writer run: "thread" (the factory's pipeline thread) or
    "loop" (the caller's)."""
    pipeline_priority: int | None = None
    """The pipeline thread's real-time priority (``ProcessSettings.pipeline_priority``,
    where the kernel granted it); None: the normal scheduling policy."""
    cached_bytes: int = 0
    """The bytes of JSON the cached objects hold outside their typed metadata, as held:
    each body as stored (compressed in compact mode) plus its raw managedFields. Kept by
    the writer as it applies each delta (O(1), no walk), exact for the published objects.
    A lower bound of the cache's memory: typed metadata and per-object overhead (about
    1.2 KB for a pod with a few labels) come on top (see :mod:`aioinformer._cache.footprint`)."""
    plain_bytes: int = 0
    """:attr:`cached_bytes` with every body uncompressed: equal to it without compact
    mode; ``plain_bytes - cached_bytes`` is what compact mode saves."""
    shard_selector: str = ""
    """A sharded informer's ``shardSelector`` (its hash ranges); "" when not sharded."""
    parked: bool = False
    """Whether the informer is parked: an empty scope, no request, nothing cached
    (:meth:`Informer.park`)."""
    shard_mode: ShardMode | None = None
    """Who filters a sharded informer's objects: "server" (the last list echoed the
    selector) or "client" (the informer, before decoding); None when not sharded."""
    objects_received: int = 0
    """List items and watch events (ADDED/MODIFIED/DELETED) received."""
    objects_kept: int = 0
    """Of those, the ones in the informer's shard ranges (all of them when not sharded)."""
    objects_dropped: int = 0
    """Of those, the ones outside its shard ranges: never built, never cached."""
    bytes_received: int = 0
    """Bytes of the list and watch responses its watcher read (list bodies, watch lines;
    ``WatcherStatistics.bytes_received``): what it cost the API server's egress."""


def _threaded(fn: Callable[..., object] | None) -> Callable[..., Awaitable[None]] | None:
    """``fn`` (a sync handler) as a coroutine function running it in a thread."""
    if fn is None:
        return None
    if inspect.iscoroutinefunction(fn):
        raise ConfigError(f"in_thread is for sync handlers; {fn!r} is a coroutine function")

    async def run_in_thread(*args: object) -> None:
        await asyncio.to_thread(fn, *args)

    return run_in_thread


class _Rate:
    """Events per second over a sliding window of one-second buckets."""

    def __init__(self, window: int = 5) -> None:
        self._window = window
        self._buckets: dict[int, int] = {}

    def add(self, n: int, now: float) -> None:
        sec = int(now)
        self._buckets[sec] = self._buckets.get(sec, 0) + n
        for old in [s for s in self._buckets if s <= sec - self._window]:
            del self._buckets[old]

    def rate(self, now: float) -> float:
        sec = int(now)
        buckets = list(self._buckets.items())  # (one C call: the writer may add meanwhile)
        total = sum(v for s, v in buckets if sec - self._window < s <= sec)
        return total / self._window


class Informer(Service):
    """A shared, indexed, freshness-aware cache of one resource.

    Create it through :meth:`aioinformer.InformerFactory.informer` (the factory runs it);
    the parameters below are what the factory passes. Alone, run it with ``await
    informer.run()`` (until cancelled) or ``async with informer:``.

    Args:
        list_watch: lists and watches the resource (the factory's ``ListWatch``).
        name: the informer's name in logs, statistics and metrics (``plural[.group]``,
            plus ``[namespace]``).
        host: where the pipeline runs (the factory's pipeline thread, shared by its
            informers; default: the caller's loop).
        indexers: extra indexes, name to function, beside "namespace" and "controller".
        transform: applied to each decoded object before it is stored.
        staleness_bound: seconds; freshness-aware reads also wait while the store lags the
            watcher by more than this (None: no bound).
        batch_size: the most deltas the writer applies as one published state.
        streaming_list: sync with a streaming list (WatchList) instead of a list.
        watch_options: how the watcher lists, watches and recovers.
        clock: stamps every delta's receive time and measures staleness and the rate of
            deltas (default ``time.monotonic``).
        compact: keep every object's body compressed with a dictionary trained on the
            first objects of the resource (:mod:`~aioinformer._core.compact`): a fraction
            of the memory, an extra decompression per body access.
    """

    def __init__(
        self,
        list_watch: ListerWatcher,
        *,
        name: str,
        host: PipelineHost | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        staleness_bound: float | None = None,
        batch_size: int = 1000,
        streaming_list: bool = False,
        watch_options: WatchOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
        compact: bool = False,
    ) -> None:
        self._host: PipelineHost = host or LoopHost()
        if self._host.threaded and not callable(getattr(list_watch, "using", None)):
            raise ConfigError(
                f"a pipeline thread needs a lister-watcher with using(), not {list_watch!r}"
            )
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, not {batch_size}")
        if staleness_bound is not None and staleness_bound <= 0:
            raise ConfigError(f"staleness_bound must be positive, not {staleness_bound}")
        if transform is not None:
            check_callable(transform, "transform")
        self.name = name
        self._namespace: str | None = getattr(list_watch, "namespace", None) or None
        self.group: str = getattr(list_watch, "group", "")
        """The API group of the resource ("" for core)."""
        self.version: str = getattr(list_watch, "version", "")
        """The API version of the resource ("v1")."""
        self.plural: str = getattr(list_watch, "plural", "") or list_watch.resource
        """The resource's plural name ("pods")."""
        self.label_selector: str | None = getattr(list_watch, "label_selector", None) or None
        """The server-side label selector of its list and watch (None: none)."""
        self.field_selector: str | None = getattr(list_watch, "field_selector", None) or None
        """The server-side field selector of its list and watch (None: none)."""
        self.selective: bool = bool(self.label_selector or self.field_selector)
        """Whether a label or field selector leaves some of the resource's objects out."""
        self._labels_match = label_matcher(self.label_selector or "")
        self.api_resource: ApiResource | None = None
        """What discovery says the resource is (set when a manager or factory resolved it)."""
        self._clock = clock
        self._fifo = RealFIFO(clock=clock)
        self._reader, self._writer = self._open_store(indexers)
        self._list_watch = list_watch
        self._dispatcher = Dispatcher(name)
        self.compact = compact
        """Whether bodies are kept compressed (see ``compact`` above)."""
        self._watcher = Watcher(
            list_watch,
            self._fifo,
            transform=_compacting(transform) if compact else transform,
            streaming_list=streaming_list,
            options=watch_options,
            clock=clock,
            name=name,
        )
        self._batch_size = batch_size
        self._staleness_bound = staleness_bound
        self._running = False
        # (seq, changes, synced) per publish, from the host to the caller's loop
        self._outbox: deque[tuple[int, Changes, bool]] = deque()
        self._delivery_pending = False
        self._listening = 0  # subscriptions being made (see _listen)
        self._delivered = 0  # seq of the last state whose changes were handed over
        self._replaced = False  # a Replace was published (the writer's view of the sync)
        self._replaces = 0  # Replaces published (numbered as the watcher numbers them)
        self._synced = asyncio.Event()
        self._waiters: list[asyncio.Future[None]] = []  # one per waiting reader, woken by a publish
        self._applied_total = 0
        self._rate = _Rate()
        self._closed = False
        self._pending_indexers: dict[str, IndexFunc] = {}
        self._applying_since: float | None = None
        self._publish_listeners: list[Callable[[int, int], None]] = []
        self._listener_failures = FailureLog(log)
        self._apply_failures = FailureLog(log)
        self._shards: ShardFilter | None = getattr(list_watch, "shards", None)
        self._evicts_put = 0  # Evicts put into the FIFO (on the host)
        self._evicts = 0  # Evicts published

    def _open_store(
        self, indexers: Mapping[str, IndexFunc] | None
    ) -> tuple[SnapshotReader, SnapshotWriter]:
        """The store: its reader (for everyone) and its one writer (for the pipeline)."""
        return snapshot_store(indexers, threaded=self._host.threaded)

    @property
    def pipeline(self) -> Pipeline:
        """Where the watcher and the writer run: "thread" (the factory's pipeline thread)
        or "loop" (the caller's)."""
        return "thread" if self._host.threaded else "loop"

    def __repr__(self) -> str:
        return f"<Informer {self.name} rv={self._reader.resource_version}>"

    def _service_name(self) -> str:
        return f"informer-{self.name}"

    @property
    def closed(self) -> bool:
        """Whether the informer has stopped (its run ended, or it was closed before it
        ran): its snapshot is the last state it published and follows the server no
        more, and a freshness wait that state does not satisfy raises
        :class:`ClosedError`."""
        return self._closed

    async def close_unstarted(self) -> None:
        """Close an informer that never ran (released before its factory started): its
        waiters raise :class:`ClosedError`, its subscriptions end, and it can no longer
        run. A running informer is stopped by cancelling its :meth:`run` instead
        (:class:`ConfigError` here)."""
        if self._running:
            raise ConfigError(f"informer {self.name} runs: cancel its run to stop it")
        self._closed = True
        self._wake_waiters()
        await self._dispatcher.aclose()

    @property
    def namespace(self) -> str | None:
        """The namespace this informer watches; None when it watches all namespaces (or
        a cluster-scoped resource)."""
        return self._namespace

    def follows(
        self, namespace: str, labels: Mapping[str, str] | None, uid: str | None = None
    ) -> bool:
        """Whether an object of this informer's resource in ``namespace`` (``""``:
        cluster-scoped) with ``labels`` (and ``uid``) is one this informer caches and is told
        about: the informer watches that namespace (or all of them), its label selector, if
        any, matches ``labels``, and a sharded informer's ranges hold it (by ``uid`` or
        ``namespace``, per its field). Unknown labels (None) satisfy no label selector, an
        unknown uid no uid-sharded informer; an informer with a field selector follows
        nothing (that cannot be told from here)."""
        if self._namespace is not None and self._namespace != namespace:
            return False
        if self.field_selector:
            return False
        if self._shards is not None:
            shards = self._shards.selector
            value = namespace if shards.field == "namespace" else uid
            if value is None or not shards.matches(value):
                return False
        if self.label_selector:
            return labels is not None and self._labels_match(labels)
        return True

    @property
    def shards(self) -> ShardSelector | None:
        """The hash ranges this informer lists, watches and caches (None: not sharded)."""
        return self._shards.selector if self._shards is not None else None

    async def rescope(self, shards: ShardSelector, timeout: float | None = None) -> None:
        """Change a sharded informer's ranges while it runs; return once the cache holds
        the new scope.

        * **Narrowing** (ranges given up): the objects outside the new ranges leave the
          cache at once, as one published state, and the watch is sent again with the new
          selector (resumed from its resourceVersion, no relist). Handlers are told
          nothing for them: nothing happened to them in the cluster, they only left this
          cache (a handler that keeps state per object checks :attr:`shards`). Returns
          once that state is published.
        * **Widening** (ranges gained): a relist with the new selector (filtered here when
          the server ignores it), swapped in as one Replace: handlers see ADDED for the
          objects gained (and the usual UPDATED/DELETED for what changed meanwhile).
          Returns once that Replace is published, like a sync of the new scope.
        * Both at once (ranges moved): the narrowing first, then the widening.

        Readers never see fewer objects than the old and the new ranges share: only what
        is outside the new ranges leaves, and what they gain arrives in one publish.
        Before the informer runs, only its ranges change. The factory's key is unaffected
        (it holds whether an informer is sharded, not its ranges: see
        :class:`~aioinformer.InformerFactory`).

        Args:
            shards: the new ranges (the field may change too: a change of field is a
                relist).
            timeout: seconds to wait for the new scope
                (:class:`~aioinformer.FreshnessTimeout`; the change itself stays).
        """
        filt = self._shards
        if filt is None:
            raise ConfigError(
                f"informer {self.name} is not sharded: ask the factory for one with shards=..."
            )
        if not isinstance(shards, ShardSelector):
            raise ConfigError(f"shards must be a ShardSelector, not {type(shards).__name__}")
        if self._closed:
            raise ClosedError(f"informer {self.name} has stopped")
        if not self._running:
            filt.rescope(shards)
            return
        replace, evict = await self._host.submit(self._rescope_here(filt, shards))

        def scoped() -> bool:
            return self._replaces >= replace and self._evicts >= evict

        await self._wait(scoped, timeout, lambda: f"its new shard scope {shards.text}")

    async def _rescope_here(self, filt: ShardFilter, shards: ShardSelector) -> tuple[int, int]:
        """On the host: apply the new ranges (see :meth:`rescope`); the numbers of the
        Replace and of the Evict to wait for (0: none)."""
        old = filt.selector
        parked = self._watcher.parked
        if shards == old and not parked:
            return 0, 0
        filt.rescope(shards)
        evict = 0
        if not shards.covers(old) and not parked:
            self._evicts_put += 1
            evict = self._evicts_put
            self._fifo.put_nowait(Evict(lambda obj: filt.keeps_meta(obj.metadata), self._clock()))
        relist = parked or not old.covers(shards)
        replace = self._watcher.rescope(relist)
        log.info(
            "%s: shard scope %s -> %s%s",
            self.name,
            old.text,
            shards.text,
            " (relisting)" if relist else "",
        )
        return (replace if relist else 0), evict

    def shard(self, shards: ShardSelector) -> None:
        """Make an informer that has not run yet a sharded one, scoped to ``shards`` (what
        a manager in sharded-cache mode does to its controllers' primary informers; then
        :meth:`rescope` changes the ranges). The factory that made it keeps it under its
        spec: asking it for that spec again returns this (sharded) informer.

        Args:
            shards: the ranges it lists, watches and caches.
        """
        if not isinstance(shards, ShardSelector):
            raise ConfigError(f"shards must be a ShardSelector, not {type(shards).__name__}")
        if self._running or self._closed:
            raise ConfigError(f"informer {self.name} has run: shard it before it starts")
        if self._shards is not None:
            self._shards.rescope(shards)
            return
        if not hasattr(self._list_watch, "shards"):
            raise ConfigError(f"{self._list_watch!r} cannot be sharded")
        filt = ShardFilter(shards, name=self.name)
        self._list_watch.shards = filt
        self._shards = filt

    async def relabel(
        self, label_selector: str, *, relist: bool = True, timeout: float | None = None
    ) -> None:
        """Change the label selector of this informer's list and watch (what a manager in
        sharded-cache mode does to its controllers' owned informers as buckets move). The
        objects the new selector does not match leave the cache at once, as one published
        state, told to no handler (as for a narrowing :meth:`rescope`); with ``relist``
        (the new selector may match objects the old one did not) a list with the new
        selector follows, swapped in as one Replace (ADDED for what it gains), and this
        returns once it is published. Before the informer runs, only the selector changes.

        Args:
            label_selector: the new selector (the whole of it).
            relist: whether the new selector may match objects the old did not.
            timeout: seconds to wait for the new scope
                (:class:`~aioinformer.FreshnessTimeout`; the change itself stays).
        """
        if self._closed:
            raise ClosedError(f"informer {self.name} has stopped")
        matcher = label_matcher(label_selector)
        old = self.label_selector
        self.label_selector = label_selector or None
        self.selective = bool(self.label_selector or self.field_selector)
        self._labels_match = matcher
        if not self._running:
            _set_labels(self._list_watch, label_selector, matcher)
            return
        replace, evict = await self._host.submit(
            self._relabel_here(old, label_selector, matcher, relist)
        )

        def scoped() -> bool:
            return self._replaces >= replace and self._evicts >= evict

        await self._wait(scoped, timeout, lambda: f"its new label selector {label_selector}")

    async def _relabel_here(
        self,
        old: str | None,
        label_selector: str,
        matcher: Callable[[Mapping[str, str]], bool],
        relist: bool,
    ) -> tuple[int, int]:
        """On the host: apply the new label selector (see :meth:`relabel`); the numbers of
        the Replace and of the Evict to wait for (0: none)."""
        parked = self._watcher.parked
        if old == (label_selector or None) and not parked:
            return 0, 0
        _set_labels(self._watcher.list_watch, label_selector, matcher)
        if self._watcher.list_watch is not self._list_watch:
            _set_labels(self._list_watch, label_selector, matcher)
        evict = 0
        if not parked:
            self._evicts_put += 1
            evict = self._evicts_put
            self._fifo.put_nowait(Evict(lambda obj: matcher(obj.labels), self._clock()))
        relist = relist or parked
        replace = self._watcher.rescope(relist)
        log.info("%s: label selector %r -> %r%s", self.name, old, label_selector,
                 " (relisting)" if relist else "")  # fmt: skip
        return (replace if relist else 0), evict

    @property
    def parked(self) -> bool:
        """Whether the informer is parked (see :meth:`park`)."""
        return self._watcher.parked

    async def park(self, timeout: float | None = None) -> None:
        """Give this running informer an empty scope (what a manager with sharded caches
        does when its replica holds no shard any more: a selector cannot be empty). Its
        watcher ends the request under way and sends none, and every object leaves the
        cache at once, as one published state, told to no handler (as for a narrowing
        :meth:`rescope`: nothing happened to them in the cluster). Returns once that
        empty state is published. The informer stays synced; its resourceVersion stays
        the last one it saw, so a freshness wait for a later one waits until it runs
        again. The next :meth:`rescope` or :meth:`relabel` unparks it with a relist of its
        (new or same) scope and returns once that is published. Idempotent.

        Args:
            timeout: seconds to wait for the empty state
                (:class:`~aioinformer.FreshnessTimeout`; the parking itself stays).
        """
        if self._closed:
            raise ClosedError(f"informer {self.name} has stopped")
        if not self._running:
            raise ConfigError(
                f"informer {self.name} has not run: there is nothing to park (a factory "
                "defers an informer that should not start yet: InformerFactory.defer)"
            )
        evict = await self._host.submit(self._park_here())

        def parked() -> bool:
            return self._evicts >= evict

        await self._wait(parked, timeout, lambda: "its empty (parked) scope")

    async def _park_here(self) -> int:
        """On the host: park the watcher and empty the cache (see :meth:`park`); the number
        of the Evict to wait for (0: parked already)."""
        if self._watcher.parked:
            return 0
        self._watcher.park()
        self._evicts_put += 1
        self._fifo.put_nowait(Evict(_nothing, self._clock()))
        log.info("%s: parked (an empty scope): its objects left the cache", self.name)
        return self._evicts_put

    @property
    def kind(self) -> str | None:
        """The kind of the cached objects: from discovery, else from the first object
        cached; None before either."""
        if self.api_resource is not None:
            return self.api_resource.kind
        for obj in self._reader.snapshot().list()[:1]:
            return obj.kind
        return None

    @property
    def indexers(self) -> list[str]:
        """Names of this informer's indexes."""
        return [*self._reader.indexers, *self._pending_indexers]

    def merge_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index before the informer runs (the factory merges requests with it)."""
        self._pending_indexers[name] = fn

    # -- the data flow ------------------------------------------------------------------------

    async def run(self) -> None:
        """Run the pipeline on its host until cancelled: the watcher lists and watches into
        the FIFO, the one writer applies what it queued and publishes. Returns (or raises)
        only once the pipeline has ended, wherever it ran. ``async with informer:`` runs it
        in a task of its own (entered once started, not synced). An informer runs once."""
        if self._running or self._closed:
            raise ConfigError(f"informer {self.name} runs once")
        self._begin()
        self._running = True
        try:
            for name, fn in self._pending_indexers.items():
                await self._writer.add_indexer(name, fn)
            self._pending_indexers.clear()
            self._ready()
            await self._host.run(self._main, name=self.name)
        finally:
            self._closed = True
            self._fifo.close()
            self._deliver()
            try:
                await self._dispatcher.aclose()
            finally:
                self._end()

    async def _main(self) -> None:
        """The data flow, on the host: watch -> FIFO -> writer -> publish."""
        fifo = self._fifo
        self._watcher.use(self._host.adopt(self._list_watch))  # (its HTTP session)
        async with asyncio.TaskGroup() as tg:
            # 1. list+watch: the server's watch events become deltas in the FIFO
            tg.create_task(self._watcher.run(), name=f"{self.name}-watcher")
            while True:
                # 2. the writer takes everything queued, up to a batch (oldest first)
                try:
                    batch = await fifo.pop_batch(self._batch_size)
                except ClosedError:  # the FIFO is closed and drained
                    break
                self._applying_since = batch[0].received  # still lag until published
                # 3. apply the batch and publish one state
                changes = await self._write(batch)
                self._applying_since = None
                # 4. count, tell the publish listeners, and hand the changes to the
                # subscribers and wake the waiters (on the caller's loop)
                self._published(batch, changes)
                # the batch and its changes are let go now, not when the next batch comes:
                # a quiet informer would hold on to its whole list's (a Change per object)
                del batch, changes

    async def _write(self, batch: Sequence[Delta]) -> Changes:
        """Apply ``batch`` and publish it; its changes. (A store whose writer must wait
        for its readers, as the lock-based baseline of the benchmarks does, waits here.)"""
        return self._apply(batch)

    def _apply(self, batch: Sequence[Delta]) -> Changes:
        """Apply ``batch`` (publishing) and return its changes: item by item when the whole
        batch fails, skipping the items the store cannot apply. No change is built when no
        one subscribes: on the caller's loop none can subscribe meanwhile, so there are
        none; on a pipeline thread one may subscribe before the batch is delivered, so the
        changes come as a function that works them out then, from the state the batch was
        applied to (:meth:`_deliver` calls it only if a subscriber needs them: a sync
        nobody listens to builds no Change per object)."""
        writer = self._writer
        subscribed = self._dispatcher.has_subscribers or self._listening > 0
        later = self._host.threaded and not subscribed
        base = writer.snapshot_now if later else None
        try:
            applied = writer.apply(batch, changes=subscribed)
        except MemoryError:
            raise
        except Exception:
            if len(batch) == 1:
                self._skip_item(batch[0])
                return []
        else:
            if base is not None:
                return functools.partial(writer.changes_of, base, batch)
            return applied
        changes: list[Change] = []  # (item by item: built whatever happens next)
        for item in batch:
            try:
                changes += writer.apply((item,), changes=subscribed or later)
            except MemoryError:
                raise
            except Exception:
                self._skip_item(item)
        return changes

    def _skip_item(self, item: Delta) -> None:
        """``item`` failed alone: skip it (counted, logged with its key) if the store still
        applies a harmless bookmark at its own RV; otherwise the store itself is broken and
        the exception propagates (the informer stops)."""
        error = sys.exc_info()[1]
        self._writer.apply((Bookmark(self._reader.resource_version, item.received),))
        what = item.obj.key if isinstance(item, ObjectDelta) else type(item).__name__
        self._apply_failures.failed(
            error, "%s: the store failed to apply %s (%r); skipped", self.name, what, error
        )

    def _published(self, batch: Sequence[Delta], changes: Changes) -> None:
        """After each published batch, on the writer's loop: count, tell the publish
        listeners, then deliver (see :meth:`_deliver`)."""
        replaces = sum(type(item) is Replace for item in batch)
        if self._evicts != self._evicts_put:
            self._evicts += sum(type(item) is Evict for item in batch)
        replaced = replaces > 0
        self._replaces += replaces  # (after the publish: see _in_current_history)
        synced = not self._replaced and replaced
        self._replaced = self._replaced or synced
        if replaced and self._host.process.release_memory:  # the list's transient memory
            release_free_memory()
        self._applied_total += len(batch)
        self._rate.add(len(batch), self._clock())
        seq, rv = self._reader.seq, self._reader.resource_version
        for listener in self._publish_listeners:
            try:
                listener(seq, rv)
            except Exception as exc:  # against its contract: logged, and the writer goes on
                self._listener_failures.failed(
                    exc, "%s: publish listener %r raised: %r", self.name, listener, exc
                )
        # (read after the publish: see _listen and _wait for the other side)
        if (
            synced
            or not self._synced.is_set()  # (a subscriber starts from _delivered until then)
            or self._listening
            or self._dispatcher.has_subscribers
        ):
            self._outbox.append((seq, changes, synced))
        if self._delivery_pending or not (self._outbox or self._waiters):
            return  # one wake-up of the caller's loop at a time; none when nothing waits
        self._delivery_pending = True
        self._host.notify(self._deliver)

    def _deliver(self) -> None:
        """On the caller's loop: hand every published batch's changes to the subscribers
        in order, note the sync, then wake every freshness waiter once."""
        self._delivery_pending = False  # (first: a publish from now on wakes us again)
        outbox, dispatcher = self._outbox, self._dispatcher
        while outbox:
            seq, changes, synced = outbox.popleft()
            if not isinstance(changes, list):  # not built: only if someone needs them
                changes = changes() if dispatcher.wants(seq) else []
            dispatcher.dispatch(changes, seq)
            self._delivered = seq
            if synced and not self._synced.is_set():
                self._synced.set()
                dispatcher.mark_synced()
        self._wake_waiters()

    def on_publish(self, listener: Callable[[int, int], None]) -> Callable[[], None]:
        """Call ``listener(seq, resource_version)`` from the writer right after each batch
        is published (before any waiter wakes); returns a function that removes it.

        For instrumentation: the listener runs on the writer's path (on the pipeline
        thread when there is one: touch no asyncio object there), so it must be quick.
        An exception it raises is logged (:mod:`~aioinformer._core.failurelog`) and the writer
        goes on."""
        self._publish_listeners.append(listener)

        def remove() -> None:
            if listener in self._publish_listeners:
                self._publish_listeners.remove(listener)

        return remove

    def on_receive(self, listener: Callable[[Sequence[Delta]], None]) -> Callable[[], None]:
        """Call ``listener(items)`` with the FIFO items of every read of the watch (and each
        relist), as the watcher queues them, before the writer can apply them; returns a
        function that removes it. Each item has ``received`` (the informer clock's time)
        and, for a ObjectDelta, ``obj.rv``: with :meth:`on_publish` this times every event from
        the socket to the published state. Quick listeners only (on the pipeline thread
        when there is one); exceptions are logged."""
        return self._fifo.on_put(listener)

    def reset_fifo_peak(self) -> int:
        """Return :attr:`InformerStatistics.fifo_peak` and start it over from the FIFO's
        current depth: the peak of one period (a load phase, a scrape interval). Sampling
        ``fifo_depth`` instead misses the peaks a pipeline thread drains between samples."""
        return self._fifo.reset_peak()

    # -- reads --------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The latest published state: O(1), no lock, no await."""
        return self._reader.snapshot()

    @property
    def has_synced(self) -> bool:
        """Whether the initial list has been applied to the store."""
        return self._synced.is_set()

    async def wait_for_sync(self, timeout: float | None = None) -> None:
        """Wait until the initial list has been applied (:class:`FreshnessTimeout` after
        ``timeout`` seconds, naming the last list/watch error; :class:`ClosedError` if
        the informer stops first)."""
        try:
            await self._wait(lambda: self.has_synced, timeout, lambda: "its initial sync")
        except FreshnessTimeout:
            last = self._watcher.statistics().last_error or "no error seen"
            raise FreshnessTimeout(
                f"informer {self.name} not synced after {timeout}s ({last})"
            ) from None

    async def wait_fresh(
        self, min_rv: int | str | None = None, timeout: float | None = None
    ) -> None:
        """Wait until the store's resourceVersion is at least ``min_rv`` (RVs compare as
        integers) and, with a staleness bound, until the store lags the FIFO by no more than
        the bound. What that promises is said at :meth:`wait_for_rv`."""
        target = int(min_rv) if min_rv is not None else 0
        reader = self._reader
        current = self._in_current_history if min_rv is not None else _always

        def what() -> str:
            have = reader.resource_version
            if not current():
                return f"resourceVersion {target} (have {have}, not yet confirmed current)"
            return f"resourceVersion {target} (have {have})"

        await self._wait(
            lambda: reader.resource_version >= target and self._within_bound() and current(),
            timeout,
            what,
        )

    def _in_current_history(self) -> bool:
        """Whether the published state is known to belong to the server's current history:
        the watcher has confirmed its position (:attr:`Watcher.confirmed`) and the Replace
        that started that history (:attr:`Watcher.epoch_start`) has been published."""
        watcher = self._watcher
        return watcher.confirmed and self._replaces >= watcher.epoch_start

    async def wait_for_rv(self, rv: int | str, timeout: float | None = None) -> Snapshot:
        """A snapshot whose resource_version is at least ``rv``, of the server's current
        history.

        The promise: the snapshot returned reflects the server's state as of resourceVersion
        ``rv`` or later *in the server's current history*: every write the server had
        committed by ``rv`` is in it (read-your-writes for the RV a write returned).

        Resets start a new epoch. When the server's history is reset (an etcd restore, a
        new server at the same address: its resourceVersions start again lower), the
        relist brings the store's RV down with it, and a wait for ``rv`` waits until the
        new history reaches ``rv``: the old history's numbers never satisfy a wait. To
        know which history it holds, a freshness wait with an RV returns only a state the
        watcher has confirmed to be current (:attr:`Watcher.confirmed
        <aioinformer._cache.watcher.Watcher.confirmed>`): from the moment a watch ends
        (dropped, cut, timed out) until the next watch brings an event or bookmark, or a
        history check (a one-item list, :data:`~aioinformer._cache.watcher.CONFIRM_AFTER`
        s into a quiet watch) finds the server at or past the cache's RV, such a wait
        waits, even for an RV the cache has passed; once a reset is found, it waits for
        the relist. The limits: a reset under a watch that stays open and silent is found
        when that watch ends (its ``timeoutSeconds``, or the idle watchdog); a new history
        that has already passed the cache's RV cannot be told from the old one. An ``rv``
        from before a reset is satisfied by the new history's number, which says nothing
        about the old write (a restore may have lost it): across a reset, wait for RVs the
        new server returned.
        """
        await self.wait_fresh(rv, timeout)
        return self.snapshot()

    async def wait_until(
        self, predicate: Callable[[Snapshot], bool], timeout: float | None = None
    ) -> Snapshot:
        """The first published snapshot for which ``predicate`` holds (re-evaluated after
        every publish)."""
        holder: list[Snapshot] = []

        def check() -> bool:
            snap = self.snapshot()
            if predicate(snap):
                holder.append(snap)
                return True
            return False

        await self._wait(check, timeout, lambda: "predicate")
        return holder[-1]

    async def wait_gone(
        self, key: str, uid: str | None = None, timeout: float | None = None
    ) -> None:
        """Wait until the store no longer holds the object ``key`` (with ``uid``: or holds
        another object under that key): a deletion has been seen."""
        reader = self._reader

        def gone() -> bool:
            obj = reader.get_now(key)
            return obj is None or (uid is not None and obj.uid != uid)

        await self._wait(gone, timeout, lambda: f"{key} to be deleted")

    async def query(
        self,
        index: str,
        value: str,
        *,
        min_rv: int | str | None = None,
        timeout: float | None = None,
    ) -> list[KubeObject]:
        """``by_index(index, value)`` on a state at least as fresh as ``min_rv`` and, with a
        ``staleness_bound``, no staler than the bound (see the module docstring)."""
        if min_rv is not None or self._staleness_bound is not None:
            await self.wait_fresh(min_rv, timeout)
        return self.snapshot().by_index(index, value)

    def _within_bound(self) -> bool:
        if self._staleness_bound is None:
            return True
        return self.staleness() <= self._staleness_bound

    def staleness(self) -> float:
        """Seconds the oldest unapplied delta has been waiting (0 when caught up)."""
        return self._lag(self._fifo.statistics().oldest_age)

    def _lag(self, fifo_oldest_age: float) -> float:
        since = self._applying_since  # (read once: the writer's thread may clear it)
        if since is None:
            return fifo_oldest_age
        return max(fifo_oldest_age, self._clock() - since)

    async def _wait(
        self, ready: Callable[[], bool], timeout: float | None, what: Callable[[], str]
    ) -> None:
        """Return once ``ready()`` holds, checked after every publish; FreshnessTimeout after
        ``timeout`` seconds, ClosedError once stopped. One timer for the whole wait and one
        future per wake-up: waiting costs next to nothing per publish."""
        if ready():
            return
        loop = asyncio.get_running_loop()
        # a staleness bound is time-based: re-check at least every 50 ms
        poll = self._staleness_bound is not None
        try:
            async with asyncio.timeout(timeout):
                while not ready():
                    if self._closed:
                        raise ClosedError(
                            f"informer {self.name} stopped while waiting for {what()}"
                        )
                    waiter = loop.create_future()
                    self._waiters.append(waiter)
                    try:
                        if ready():  # published before the writer could see the waiter
                            return
                        if poll:
                            await asyncio.wait((waiter,), timeout=0.05)
                        else:
                            await waiter
                    finally:
                        # not woken (timed out, cancelled): drop it unless a publish just did
                        if (waiter.cancelled() or not waiter.done()) and waiter in self._waiters:
                            self._waiters.remove(waiter)
        except TimeoutError:
            raise FreshnessTimeout(
                f"informer {self.name}: timed out waiting for {what()}"
            ) from None

    def _wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- handlers ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _listen(self) -> Iterator[None]:
        """Around making a subscription (reading the state it starts from, then
        registering it): the writer hands over every publish's changes meanwhile, so those
        published after that state reach it even before it is registered."""
        self._listening += 1
        try:
            yield
        finally:
            self._listening -= 1

    def _initial(self, namespace: str | None = None) -> tuple[Iterable[KubeObject], int]:
        """What a new subscriber starts from: the objects of the latest state (none before
        the sync is delivered) and that state's number (later batches reach it)."""
        if not self.has_synced:
            return (), self._delivered
        snap = self._reader.snapshot()
        return snap.list(namespace), snap.seq

    def add_handler(
        self,
        on_add: OnAdd | None = None,
        on_update: OnUpdate | None = None,
        on_delete: OnDelete | None = None,
        *,
        coalesce: bool = False,
        name: str | None = None,
        max_queue: int | None = DEFAULT_MAX_QUEUE,
        namespace: str | None = None,
        in_thread: bool = False,
    ) -> Subscription:
        """Subscribe handlers (sync or async): ``on_add(obj)``, ``on_update(old, new)``,
        ``on_delete(obj)``. Each subscription has its own queue and task; a late one first
        receives ADDED for every cached object. ``max_queue`` caps an exact subscriber's
        backlog (None: unbounded); ``namespace`` restricts it to the objects of one
        namespace, the others never queued (see :mod:`aioinformer._cache.handlers`).

        A sync handler runs on the event loop: it must not block (a blocking one stalls the
        whole process; the manager's watchdog names it). With ``in_thread`` sync handlers
        run in the default thread pool instead, one call at a time per subscription, in
        order: they may block, and must not touch the loop's objects."""
        if in_thread:
            on_add, on_update, on_delete = (_threaded(f) for f in (on_add, on_update, on_delete))
        with self._listen():
            initial, after = self._initial(namespace)
            return self._dispatcher.add_handler(
                on_add,
                on_update,
                on_delete,
                coalesce=coalesce,
                name=name,
                max_queue=max_queue,
                initial=initial,
                after=after,
                namespace=namespace,
            )

    def changes(
        self,
        *,
        coalesce: bool = False,
        name: str | None = None,
        max_queue: int | None = DEFAULT_MAX_QUEUE,
        namespace: str | None = None,
    ) -> ChangeStream:
        """``async for change in informer.changes()``: the changes, in order (only those of
        ``namespace``'s objects, if given)."""
        with self._listen():
            initial, after = self._initial(namespace)
            return self._dispatcher.changes(
                coalesce=coalesce,
                name=name,
                max_queue=max_queue,
                initial=initial,
                after=after,
                namespace=namespace,
            )

    async def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index after start; readers and the writer keep going while it builds
        (where the writer runs: on the pipeline's host)."""
        if self._running and not self._closed:
            await self._host.submit(self._writer.add_indexer(name, fn))
        else:
            await self._writer.add_indexer(name, fn)

    # -- statistics ----------------------------------------------------------------------------

    def statistics(self) -> InformerStatistics:
        """Objects, RV, FIFO depth and peak, staleness, deltas/s, relists, restarts, errors."""
        fifo = self._fifo.statistics()
        ws = self._watcher.statistics()
        reader, writer = self._reader, self._writer
        return InformerStatistics(
            name=self.name,
            objects=len(reader),
            resource_version=reader.resource_version,
            seq=reader.seq,
            has_synced=self.has_synced,
            fifo_depth=fifo.depth,
            fifo_peak=fifo.peak_depth,
            staleness=self._lag(fifo.oldest_age),
            deltas_per_second=self._rate.rate(self._clock()),
            applied_total=self._applied_total,
            batches=writer.batches,
            in_place_batches=writer.in_place_batches,
            relists=ws.relists,
            watch_restarts=ws.watch_restarts,
            decode_errors=ws.decode_errors,
            transform_errors=ws.transform_errors,
            index_errors=reader.index_errors,
            stream_errors=ws.stream_errors,
            errors_by_code=ws.errors_by_code,
            last_error=ws.last_error,
            history_resets=ws.history_resets,
            requests=ws.requests,
            throttled=ws.throttled,
            apply_errors=self._apply_failures.count,
            listener_errors=self._listener_failures.count,
            handlers=tuple(self._dispatcher.statistics()),
            pipeline=self.pipeline,
            pipeline_priority=self._host.priority,
            cached_bytes=reader.cached_bytes,
            plain_bytes=reader.plain_bytes,
            shard_selector=self._shards.text if self._shards is not None else "",
            parked=self._watcher.parked,
            shard_mode=self._shards.mode if self._shards is not None else None,
            objects_received=ws.objects_received,
            objects_kept=ws.objects_received - ws.objects_dropped,
            objects_dropped=ws.objects_dropped,
            bytes_received=ws.bytes_received,
        )


def _nothing(obj: KubeObject) -> bool:
    """Keeps no object (a parked informer's Evict)."""
    return False


def _always() -> bool:
    return True


def _compacting(transform: Transform | None) -> Transform:
    """``transform`` (if any), then a :class:`~aioinformer._core.compact.Compactor` of
    this informer's own; an object the user's transform drops stays dropped.
    :class:`ConfigError` without zstandard (the ``compact`` extra)."""
    try:
        from aioinformer._core.compact import Compactor
    except ImportError as exc:
        raise ConfigError(
            f"compact=True needs zstandard: pip install 'aioinformer[compact]' ({exc})"
        ) from None
    compactor = Compactor()
    if transform is None:
        return compactor

    def transform_then_compact(obj: KubeObject) -> KubeObject:
        result = transform(obj)
        return compactor(result) if isinstance(result, KubeObject) else result

    return transform_then_compact


def _set_labels(
    list_watch: ListerWatcher, selector: str, matcher: Callable[[Mapping[str, str]], bool]
) -> None:
    """Make ``list_watch`` send ``selector`` and accept only objects ``matcher`` keeps."""
    list_watch.label_selector = selector or None  # type: ignore[attr-defined]
    expected = getattr(list_watch, "expected", None)
    if expected is not None:
        expected.labels = matcher if selector else None

"""The Watcher (client-go's reflector, kube-rs's watcher): list+watch one resource into a FIFO.

:class:`Watcher` feeds a :class:`FifoSink` (the informer's FIFO) from a :class:`ListerWatcher`
(:class:`~aioinformer._client.listwatch.ListWatch` over HTTP) until cancelled, :meth:`Watcher.stop`
ped, or the FIFO is closed. Recovery:

* **Sync**: a paged list (``limit``/``continue``) at RV "" (a consistent read) pushed as
  ONE :class:`Replace` at the list RV; or, with ``streaming_list``, a watch with
  ``sendInitialEvents=true`` whose initial events are buffered until the bookmark annotated
  ``k8s.io/initial-events-end``, pushed as ONE Replace at its RV, the stream then going on
  as a watch. A 422 (WatchList gate off), or no end bookmark within
  ``initial_events_timeout`` or after :data:`INITIAL_EVENTS_QUIET` seconds without a line
  (a server that ignores ``sendInitialEvents``), falls back to list+watch for good,
  logged once. One streaming attempt per sync: any other failure
  before the end bookmark (a stream that ends or is cut, as a proxy's or a server's that
  ignores ``sendInitialEvents`` does, an error) makes the sync's next attempt, after the
  backoff, a plain list; the next sync (a relist) streams again.
* **Paged lists**: a continue token that expires before the list is done (a list slower
  than the server's compaction) is followed at once by one unpaged list (client-go's
  ``FullListIfExpired``); only if that fails too does the watcher back off. A continue token
  sent twice, more than ``max_list_pages`` pages, or a page body over its limit fail the
  list (no server can make a list loop or grow without bound). Each response's limit
  follows what it may keep
  (:meth:`~aioinformer._client.listwatch.ListWatch.body_limit`: 64 KiB per item asked
  for; an unpaged list twice the largest whole list read), never more than
  ``max_list_bytes``; a page over its limit makes the next pages ask for fewer items, so a
  large cluster's list is never refused for its total size.
* **Watch** from the last RV with bookmarks and ``timeoutSeconds`` drawn from
  [``min_watch_timeout``, ``max_watch_timeout``]: ADDED/MODIFIED/DELETED become
  :class:`ObjectDelta` ADDED/UPDATED/DELETED, BOOKMARK a :class:`Bookmark`; all advance the RV.
  The items made from one read of the stream go to the FIFO together, in order, when the
  read is done (an ERROR event among them still lets those before it through).
* **Resume without relisting** after a clean close, a dropped or cut stream, or a silent
  one (the watchdog aborts a stream with no byte for ``idle_timeout`` s; the client ends a
  watch its server keeps open past its ``timeoutSeconds``). A clean close or the watchdog
  re-watch at once, failures after the backoff; a watch closed cleanly within 1 s of its
  start is a failure whatever it carried, so no server or proxy behaviour makes a tight loop.
* **Relist on 410** (HTTP 410, or the ERROR event with code 410 that kube-apiserver really
  sends, conformance 08a) at RV "": consistent, never older than the cache (client-go lists
  at the last RV, cheaper for etcd but possibly served by a lagging cache). The first relist
  in a row is immediate, the next ones wait for the backoff.
* **The server's resourceVersion going backwards** (an etcd restore, a new server at the
  same address) is a reset of its history: an event or bookmark below the watch's position,
  a list below the last RV seen, a watch that saw nothing while a one-item list shows the
  server below the watch's RV (conformance 05d: such a watch gets no event at all), or
  ``too_large_rv_retries`` watches in a row answered 504 ResourceVersionTooLarge all lead
  to a relist at RV "" (logged once at WARNING, counted in ``history_resets``), whose
  Replace swaps the whole cache at once at the new, lower RV.
* **Other errors** (HTTP statuses, ERROR events with other codes) are logged (401/403/404
  as errors naming verb, resource, namespace and permission), counted in
  ``stats.errors_by_code`` (``stats.last_error`` keeps the latest failure) and retried
  after the backoff (0.8 s doubling to 30 s, jittered), or after ``Retry-After`` if longer.
* **One backoff, reset only by progress**: every retry delay comes from the watcher's
  :class:`~aioinformer._core.backoff.Backoff`, which starts again from its first delay only
  after ``backoff_reset_after`` seconds of real progress (valid events, bookmarks or a
  completed list, with no failure in between), never on one event.
* **A ceiling on requests**: every request (list page, watch, history check) first takes a
  token from a bucket of ``request_burst`` tokens refilled at ``request_rate`` per second.
* **Bad items** (a line or list item that is malformed, of an unknown type, without
  metadata/name, with a resourceVersion that is not a uint64, nested too deeply to decode,
  or over the length limit) are logged briefly with the object's key when it can be read,
  counted in ``stats.decode_errors`` and skipped; the stream and the sync go on.
* **Transform** errors (an exception, or a result that is neither a KubeObject nor None)
  are logged and counted; the object is skipped (a deletion is
  queued untransformed). A list's pages are transformed one by one as they arrive, so
  what the transform frees (the managedFields :func:`~aioinformer.drop_managed_fields`
  drops) is reused by the next page's objects instead of staying resident as a hole
  beside each cached object.
* **Secrets**: ``last_error`` and the log lines are cleaned of every known credential
  (:func:`~aioinformer._core.redact.redact_known`), whatever the server sent.
* **Cancellation** closes the HTTP response and propagates; :meth:`Watcher.stop` makes
  :meth:`Watcher.run` return normally.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from aioinformer._cache.deltas import Bookmark, ChangeType, Delta, ObjectDelta, Replace
from aioinformer._client.listwatch import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_LIST_TIMEOUT,
    DEFAULT_MAX_LIST_BYTES,
    WATCH_DEADLINE_MARGIN,
    IdleStreamError,
)
from aioinformer._core import logs
from aioinformer._core.backoff import Backoff
from aioinformer._core.errors import (
    ClosedError,
    ConfigError,
    DecodeError,
    Expired,
    StatusError,
    TransportError,
    in_namespace,
)
from aioinformer._core.failurelog import FailureLog, Lazy
from aioinformer._core.jsonscan import peek_key
from aioinformer._core.objects import (
    BadItem,
    KubeObject,
    Transform,
    decode_event,
    parse_resource_version,
)
from aioinformer._core.redact import REDACTED, redact_known
from aioinformer._core.throttle import TokenBucket

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "FifoSink",
    "ListerWatcher",
    "WatchOptions",
    "Watcher",
    "WatcherStatistics",
]

log = logs.logger("aioinformer.watch")

_T = TypeVar("_T")

DEFAULT_IDLE_TIMEOUT = 90.0
"""Seconds without a byte after which a watch is presumed dead. kube-apiserver sends a
bookmark about every minute while the resourceVersion moves; 90 s leaves room for its 1 s
delivery buckets and progress-notify lag. A false alarm only costs a cheap resume."""

_INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_DELTA_TYPES = {
    "ADDED": ChangeType.ADDED,
    "MODIFIED": ChangeType.UPDATED,
    "DELETED": ChangeType.DELETED,
}
_MAX_RETRY_AFTER = 300.0  # a bogus Retry-After must not park a watcher for hours
_SHORT_WATCH = 1.0
_LOUD_ERRORS = frozenset({401, 403, 404})
_MAX_ERROR_TEXT = 2000  # last_error keeps this much of a message
TRANSFORM_SLICE = 0.01
"""Seconds of transform work after which the watcher lets the loop run (a cancellation
point between two objects: a stop waits for the object being transformed, never for the
rest of a list or of a read)."""
INITIAL_EVENTS_QUIET = 5.0
"""Seconds a streaming list may send nothing before its initial-events-end bookmark (at
most ``initial_events_timeout``): kube-apiserver sends its initial events at once, and the
bookmark right after them once its cache has caught up (it waits 3 s at most for that),
so a stream quiet for longer comes from a server that ignores ``sendInitialEvents``."""
CONFIRM_AFTER = 0.2
"""Seconds a resumed watch may go without a valid event or bookmark before the watcher
checks the server's history with a one-item list (see :attr:`Watcher.confirmed`)."""


class _HistoryReset(Exception):
    """The server's resourceVersions went backwards: relist from RV "" (internal)."""


class _NoInitialEventsEnd(Exception):
    """A streaming list without its end bookmark in time (internal)."""


class ListerWatcher(Protocol):
    """What the watcher needs from the HTTP side (:class:`~aioinformer._client.listwatch.ListWatch`
    implements it; tests may pass a fake)."""

    resource: str
    namespace: str | None

    async def list_page(
        self, resource_version: str, limit: int, continue_: str | None
    ) -> tuple[list[KubeObject], str, str | None]:
        """One page: ``(items, list resourceVersion, continue token or None)``. Items left
        out as undecodable may be listed in ``items.bad`` (:class:`BadItem` s), and the
        body's size given as ``items.nbytes`` (see :class:`~aioinformer._core.objects.ItemList`)."""
        ...

    def watch(
        self,
        resource_version: str,
        timeout_seconds: int,
        *,
        send_initial_events: bool = False,
        allow_bookmarks: bool = True,
        idle_timeout: float | None = None,
        on_oversized: Callable[[int], None] | None = None,
    ) -> AsyncGenerator[list[bytes], None]:
        """The raw event lines of one watch request, a list per read (never empty)."""
        ...

    def error_from_status(self, status: Mapping[str, Any], verb: str) -> StatusError:
        """The error for a Status object (a watch ERROR event)."""
        ...


class FifoSink(Protocol):
    """The subset of :class:`~aioinformer._cache.fifo.RealFIFO` the watcher uses."""

    def put_nowait(self, item: Delta) -> None:
        """Queue ``item``; raises :class:`ClosedError` once closed (the stop signal)."""
        ...

    def put_many(self, items: Sequence[Delta]) -> None:
        """Queue ``items`` in order; raises :class:`ClosedError` once closed."""
        ...


@dataclass
class WatcherStatistics:
    """Counters of one :class:`Watcher` (a copy: :meth:`Watcher.statistics`)."""

    lists: int = 0
    """Initial syncs completed (a Replace pushed), by list or streaming list."""
    relists: int = 0
    """Syncs completed after the first one (after a 410, a reset of the server's history,
    or a CRD coming back)."""
    history_resets: int = 0
    """Times the server's resourceVersion went backwards (a restore, a new server): each
    made the watcher relist at RV ""."""
    watch_restarts: int = 0
    """Watches started from a previous watch's RV (after a close, a drop, a stall, an error)."""
    events_total: int = 0
    """ADDED/MODIFIED/DELETED events received (initial events of streaming lists included)."""
    bookmarks: int = 0
    """BOOKMARK events received."""
    decode_errors: int = 0
    """Lines and list items skipped: not a valid event or object, or longer than the line
    limit."""
    transform_errors: int = 0
    """Objects the transform raised on."""
    stream_errors: int = 0
    """Failures without an HTTP status: connection errors, cut or stalled streams, bodies
    that are not JSON."""
    requests: int = 0
    """Requests sent: list pages, watches and history checks."""
    throttled: int = 0
    """Requests that waited for the request ceiling (``request_rate``)."""
    errors_by_code: dict[int, int] = field(default_factory=dict)
    """HTTP status (or ERROR event code) -> times seen."""
    last_error: str = ""
    """The most recent failed list or watch (class and message; 410s, which only mean
    "relist", excluded), kept after recovery: compare ``last_error_at`` with
    ``last_event_at``. Never holds a credential."""
    last_error_at: float | None = None
    """``clock()`` when ``last_error`` happened."""
    last_rv: str = ""
    """The last resourceVersion seen (list, event or bookmark)."""
    last_event_at: float | None = None
    """``clock()`` when the last line arrived."""
    backoff_current: float = 0.0
    """The base of the next backoff delay, in seconds."""
    has_synced: bool = False
    """Whether the first Replace has been pushed."""
    objects_received: int = 0
    """Objects received: list items and ADDED/MODIFIED/DELETED events (those of streaming
    lists included), kept or not."""
    objects_dropped: int = 0
    """Objects received outside a sharded informer's ranges, left out before they were
    built (``objects_received - objects_dropped`` were kept)."""
    bytes_received: int = 0
    """Bytes of the list and watch responses read: each list page's body and each watch
    line with its newline (keep-alive blank lines not counted), as decoded (after any
    gzip). Counted once per page and once per read of a watch, not per object."""


@dataclass(frozen=True, slots=True)
class WatchOptions:
    """How a watcher lists, watches and recovers (client-go's defaults).

    Checked when the watcher is made (:class:`~aioinformer.ConfigError` for a bad value).
    """

    page_size: int = 500
    """List page limit (0: one unpaged list)."""
    min_watch_timeout: float = 300.0
    """Each watch asks the server for a ``timeoutSeconds`` drawn from
    [``min_watch_timeout``, ``max_watch_timeout``] (5-10 minutes, as client-go)."""
    max_watch_timeout: float = 600.0
    """See ``min_watch_timeout``."""
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    """Seconds without a byte after which a watch is presumed dead (the watchdog)."""
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    """Seconds from sending a list or watch to its response headers."""
    list_timeout: float = DEFAULT_LIST_TIMEOUT
    """Seconds one list page may take in all."""
    max_list_bytes: int = DEFAULT_MAX_LIST_BYTES
    """The hard cap on one list response body (decompressed). Each response has a
    smaller limit of its own that follows what it may keep (``ListWatch.body_limit``: 64
    KiB per item a page asked for, at least one ``max_line_bytes`` object; an unpaged list
    256 MiB or twice the largest whole list read), so a gzip bomb or a body that never
    ends costs about that, not this. It bounds each page, not the list."""
    max_list_pages: int = 10_000
    """The most pages one list may have (a server that pages for ever fails the list)."""
    max_line_bytes: int = 16 * 1024 * 1024
    """The longest watch line accepted; longer ones are skipped (counted)."""
    watch_deadline_margin: float = WATCH_DEADLINE_MARGIN
    """Seconds past its ``timeoutSeconds`` after which the client ends a watch the server
    keeps open."""
    initial_events_timeout: float = 60.0
    """Seconds a streaming list may wait for its initial-events-end bookmark before the
    watcher falls back to list+watch (raise it for collections that take longer to stream).
    A stream that sends nothing for :data:`INITIAL_EVENTS_QUIET` seconds before that
    bookmark falls back sooner."""
    too_large_rv_retries: int = 3
    """Watches in a row answered 504 "Too large resource version" after which the watcher
    takes the server's history as reset and relists at RV ""."""
    request_rate: float = 20.0
    """The ceiling on requests per second (list pages, watches, history checks), on
    average, whatever the server does."""
    request_burst: int = 200
    """Requests that may go at once before ``request_rate`` applies (the pages of a big
    list)."""
    backoff_initial: float = 0.8
    """The first retry delay after a failure, in seconds (doubling, jittered)."""
    backoff_maximum: float = 30.0
    """The cap on the retry delay's base, in seconds."""
    backoff_reset_after: float = 120.0
    """Seconds of real progress after which the retry delay starts from the beginning."""
    backoff_jitter: float = 1.0
    """Up to this fraction of each delay's base is added at random."""

    def __post_init__(self) -> None:
        if self.page_size < 0:
            raise ConfigError(f"page_size must be >= 0, not {self.page_size}")
        if not 1 <= self.min_watch_timeout <= self.max_watch_timeout:
            raise ConfigError("need 1 <= min_watch_timeout <= max_watch_timeout")
        for name in (
            "idle_timeout",
            "header_timeout",
            "list_timeout",
            "watch_deadline_margin",
            "initial_events_timeout",
            "request_rate",
        ):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be positive, not {getattr(self, name)}")
        for name in ("max_list_bytes", "max_line_bytes", "max_list_pages", "request_burst"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.too_large_rv_retries < 1:
            raise ConfigError(
                f"too_large_rv_retries must be at least 1, not {self.too_large_rv_retries}"
            )

    def new_bucket(self) -> TokenBucket:
        """A fresh request ceiling with these settings (each watcher owns its own)."""
        return TokenBucket(self.request_rate, self.request_burst)

    def new_backoff(self) -> Backoff:
        """A fresh :class:`~aioinformer._core.backoff.Backoff` with these settings (each
        watcher owns its own)."""
        return Backoff(
            initial=self.backoff_initial,
            maximum=self.backoff_maximum,
            reset_after=self.backoff_reset_after,
            jitter=self.backoff_jitter,
        )


class Watcher:
    """Lists and watches one resource into a FIFO, recovering from every failure.

    ``options`` say how (:class:`WatchOptions`); ``streaming_list`` uses a watch with
    initial events instead of a list; ``backoff`` (default: a new one from ``options``) is
    owned by this watcher; ``clock`` stamps ``received``, ``last_event_at`` and ``last_error_at``
    (durations of its own requests, such as a very short watch or a healthy run long enough
    to reset the backoff, are measured on the event loop's clock, like its timeouts);
    ``sleep`` (default ``asyncio.sleep``) waits out each retry delay: a test can pass one
    that records the delays and decides when each retry happens.

    Example::

        watcher = Watcher(ListWatch(api, "v1", "pods"), fifo)
        task = asyncio.create_task(watcher.run())
        await watcher.wait_for_sync()
    """

    def __init__(
        self,
        list_watch: ListerWatcher,
        fifo: FifoSink,
        *,
        transform: Transform | None = None,
        streaming_list: bool = False,
        options: WatchOptions | None = None,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        name: str | None = None,
    ) -> None:
        options = options or WatchOptions()
        self.options = options
        self.page_size = options.page_size
        self.min_watch_timeout = options.min_watch_timeout
        self.max_watch_timeout = options.max_watch_timeout
        self.idle_timeout = options.idle_timeout
        self.streaming_list = streaming_list
        """Whether the next sync is a streaming list (False after a 422 fallback)."""
        self.backoff = backoff if backoff is not None else options.new_backoff()
        self._lw = list_watch
        self._fifo = fifo
        self._transform = transform
        self._clock = clock
        self._sleep = sleep
        ns = list_watch.namespace
        self.name = name or (f"{list_watch.resource}[{ns}]" if ns else list_watch.resource)
        self._stats = WatcherStatistics(backoff_current=self.backoff.current)
        self._transform_failures = FailureLog(log, clock=clock)
        self._skips = FailureLog(log, logging.WARNING, clock=clock)
        self._bucket = options.new_bucket()
        self._rv: str | None = None  # the watch position; None: a (re)list is needed
        self._seen = -1  # the last resourceVersion pushed, as an int (-1: none yet)
        self._after_list = False
        self._healthy_since: float | None = None  # start of the current run of progress
        self._relists_in_a_row = 0  # 410s and history resets since the last healthy run
        self._too_large_in_a_row = 0  # watches answered 504 ResourceVersionTooLarge
        self._resetting = False  # a history reset was detected; the relist is under way
        self._list_this_sync = False  # this sync's streaming list failed: a plain list
        self._confirmed = False  # see the confirmed property
        self._checking = False  # the current watch's history check has been sent
        self._replaces = 0  # Replaces put into the FIFO
        self._epoch_start = 1  # the number of the Replace that starts the current history
        self._settled = asyncio.Event()  # synced, or run() ended
        self._task: asyncio.Task[Any] | None = None
        self._stop_requested = False
        self._done = False
        self._scope = 0  # rescopes so far (see rescope())
        self._sync_scope = 0  # the scope the current sync asked for
        self._restart = False  # rescope() cancelled the request under way
        self._relist_due = False  # rescope(relist=True) asked for a list not begun yet
        self._backing_off = False  # waiting out a retry delay (no request under way)
        self._parked = False  # see park()
        self._unparked = asyncio.Event()

    def __repr__(self) -> str:
        rv = self._stats.last_rv or "-"
        return f"<Watcher {self.name} rv={rv} has_synced={self._stats.has_synced}>"

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def list_watch(self) -> ListerWatcher:
        """The lister-watcher it lists and watches through now."""
        return self._lw

    def use(self, list_watch: ListerWatcher) -> None:
        """List and watch through ``list_watch`` from now on (before :meth:`run`: an
        informer's pipeline thread hands over the one whose connections are its own)."""
        if self._task is not None:
            raise RuntimeError(f"watcher {self.name} is running: use() comes before run()")
        self._lw = list_watch

    @property
    def has_synced(self) -> bool:
        """Whether the first Replace has been pushed into the FIFO."""
        return self._stats.has_synced

    @property
    def confirmed(self) -> bool:
        """Whether what the watcher pushed is known to belong to the server's current
        history: True from a Replace, or from a valid event or bookmark of the watch, or a
        history check that found the server at or past the watch's RV, until that watch
        ends (any way) or a reset of the history is found. A resumed watch is confirmed by
        its first event or bookmark, else by a history check after :data:`CONFIRM_AFTER`
        seconds. (Read from any thread.)"""
        return self._confirmed

    @property
    def epoch_start(self) -> int:
        """The number (1, 2, ...) of the Replace that starts the server's current history
        as far as this watcher knows: each reset found sets it to the next Replace's (the
        relist's). Replaces are numbered in the order they are put into the FIFO."""
        return self._epoch_start

    def statistics(self) -> WatcherStatistics:
        """A copy of the counters (see :class:`WatcherStatistics`)."""
        return dataclasses.replace(
            self._stats,
            errors_by_code=dict(self._stats.errors_by_code),
            throttled=self._bucket.waits,
        )

    async def wait_for_sync(self) -> None:
        """Wait until the first Replace has been pushed; :class:`ClosedError` if the watcher
        stopped before that."""
        await self._settled.wait()
        if not self._stats.has_synced:
            raise ClosedError(f"watcher {self.name} stopped before it synced")

    @property
    def parked(self) -> bool:
        """Whether it sends no request until the next :meth:`rescope` (see :meth:`park`)."""
        return self._parked

    def park(self) -> None:
        """Send no request until the next :meth:`rescope` (call it on the watcher's loop):
        what a scope with nothing in it needs, since a selector cannot be empty. The
        request under way ends at its next await, and nothing it read is queued any more;
        the next :meth:`rescope` lists its scope afresh (a relist, whatever ``relist``
        says: the position of the parked watch is no scope's). Idempotent."""
        if self._parked:
            return
        self._parked = True
        self._unparked.clear()
        self._scope += 1
        self._relist_next()
        self._interrupt()

    def rescope(self, relist: bool) -> int:
        """The lister-watcher's shard filter changed its ranges (call it on the watcher's
        loop, right after): the objects read from now on are checked against the new ones
        (those of a read under way too), and the request under way ends at its next await
        and is sent again with the new selector: the watch resumed from the last
        resourceVersion, or with ``relist`` a list (a sync under way starts over), whose
        Replace brings the new scope. A parked watcher (:meth:`park`) sends requests again,
        a list first whatever ``relist`` says. Returns the number of the Replace that
        holds the new scope: the next one with ``relist`` (or parked), else the last one
        put."""
        self._scope += 1
        if self._parked:
            self._parked = False
            self._unparked.set()
            relist = True
        if relist:
            self._relist_next()
        target = self._replaces + 1 if relist else self._replaces
        self._interrupt()
        return target

    def _relist_next(self) -> None:
        """Make the next request a list. (A flag besides the position: a read of a resumed
        watch, in its own task, may end after this and put the position back.)"""
        self._rv = None
        self._relist_due = True
        self._after_list = False

    def _interrupt(self) -> None:
        """End the request under way at its next await (the loop then sends what is due);
        nothing when none is under way (backing off, parked, not running, stopping)."""
        task = self._task
        busy = task is not None and not self._done and not self._backing_off
        if busy and not self._restart and not self._stop_requested:
            assert task is not None
            self._restart = True
            task.cancel()

    def stop(self) -> None:
        """Make :meth:`run` return (at once, closing any open response). Idempotent; before
        :meth:`run` it makes :meth:`run` return immediately."""
        if self._stop_requested:
            return
        self._stop_requested = True
        if self._task is not None and not self._done:
            self._task.cancel()

    async def run(self) -> None:
        """List and watch until cancelled, stopped (:meth:`stop`) or the FIFO is closed."""
        task = asyncio.current_task()
        if self._task is not None or task is None:
            raise RuntimeError(f"watcher {self.name} can run only once, in a task")
        self._task = task
        try:
            if not self._stop_requested:
                await self._loop()
        except asyncio.CancelledError:
            if self._stop_requested and task.uncancel() == 0:
                log.debug("%s: stopped", self.name)
                return  # our own stop(); any other cancellation propagates
            raise
        except ClosedError:
            log.debug("%s: the FIFO was closed; stopping", self.name)
        finally:
            self._done = True
            self._settled.set()

    # -- the loop -----------------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            try:
                if self._parked:
                    log.debug("%s: parked (an empty scope): no request until rescoped", self.name)
                    self._backing_off = True  # (no request under way to interrupt)
                    await self._unparked.wait()
                self._backing_off = False
                if self._rv is None or self._relist_due:
                    self._relist_due = False
                    await self._sync()
                else:
                    if self._after_list:
                        self._after_list = False
                    else:
                        self._stats.watch_restarts += 1
                    await self._watch(self._rv)
                continue  # a clean close of a long enough watch: resume at once
            except _HistoryReset as exc:
                delay = self._on_history_reset(str(exc))
            except Expired as exc:
                delay = self._on_expired(exc)
            except StatusError as exc:
                self._count(exc.code)
                self._note(exc)
                if exc.verb == "watch" and _too_large(exc):
                    self._too_large_in_a_row += 1
                    if self._too_large_in_a_row >= self.options.too_large_rv_retries:
                        n, self._too_large_in_a_row = self._too_large_in_a_row, 0
                        delay = self._on_history_reset(
                            f"{n} watches in a row from resourceVersion {self._rv} were "
                            f"answered that it is too large ({exc.server_message})"
                        )
                        self._backing_off = True
                        await asyncio.sleep(delay)
                        continue
                delay = self._failure_delay(exc.retry_after)
                level = logging.ERROR if exc.code in _LOUD_ERRORS else logging.WARNING
                log.log(level, "%s: %s; retrying in %.1f s", self.name, str(exc), delay)
            except asyncio.CancelledError:
                task = self._task
                if not self._restart or self._stop_requested or task is None:
                    raise
                if task.cancelling() != 1:
                    raise  # (another cancellation came with ours)
                task.uncancel()
                self._restart = False
                log.debug("%s: the shard scope changed; requesting it again", self.name)
                continue
            except IdleStreamError as exc:
                self._stats.stream_errors += 1
                self._note(exc)
                log.warning("%s: %s; watching again", self.name, str(exc))
                continue
            except ClosedError:
                raise  # the FIFO was closed: the stop signal
            except Exception as exc:  # TransportError, DecodeError; anything else (e.g. a
                self._stats.stream_errors += 1  # failing credential plugin) with a traceback
                self._note(exc)
                delay = self._failure_delay(None)
                trace = not isinstance(exc, TransportError | DecodeError)
                # (the text, not the exception: a kept record must not pin its frames)
                text = str(exc)
                log.warning("%s: %s; retrying in %.1f s", self.name, text, delay, exc_info=trace)
            if delay > 0:
                self._backing_off = True
                await self._sleep(delay)

    def _on_expired(self, exc: Expired) -> float:
        self._count(exc.code)
        what = "resourceVersion" if self._rv is not None else "list continue token"
        delay = self._relist_delay(exc.retry_after)
        log.info("%s: %s expired (%s); relisting in %.1f s", self.name, what, str(exc), delay)
        return delay

    def _on_history_reset(self, why: str) -> float:
        """The server's history went backwards: relist from RV "" (logged once); the
        relist's Replace starts the new history (:attr:`epoch_start`)."""
        self._stats.history_resets += 1
        self._resetting = True
        self._confirmed = False
        self._epoch_start = self._replaces + 1
        delay = self._relist_delay(None)
        log.warning(
            "%s: the server's resourceVersion went backwards: %s; its history was reset (an "
            "etcd restore, or a new server at the same address): relisting in %.1f s, the "
            "cache will be replaced as a whole",
            self.name,
            why,
            delay,
        )
        return delay

    def _relist_delay(self, retry_after: float | None) -> float:
        """Ask for a relist: at once the first time since the last healthy run, after the
        backoff when relists follow each other without progress."""
        self._rv = None
        self._end_healthy_run()  # (a long healthy run first forgets the relists before it)
        self._relists_in_a_row += 1
        if self._relists_in_a_row == 1:
            return 0.0
        return self._failure_delay(retry_after)

    def _failure_delay(self, retry_after: float | None) -> float:
        """The one place a retry delay comes from: the backoff (at least ``Retry-After``)."""
        self._end_healthy_run()
        delay = self.backoff.next_delay()
        if retry_after is not None:
            delay = max(delay, min(retry_after, _MAX_RETRY_AFTER))
        self._stats.backoff_current = self.backoff.current
        return delay

    def _progress(self) -> None:
        """Real progress (a valid event or bookmark, a completed list) was made."""
        if self._healthy_since is None:
            self._healthy_since = asyncio.get_running_loop().time()

    def _end_healthy_run(self) -> None:
        """A failure or a relist ends the run of progress; a run of at least
        ``backoff_reset_after`` seconds resets the backoff and the relists in a row."""
        since, self._healthy_since = self._healthy_since, None
        elapsed = None if since is None else asyncio.get_running_loop().time() - since
        if elapsed is not None and elapsed >= self.backoff.reset_after:
            self.backoff.reset()
            self._relists_in_a_row = 0
            self._stats.backoff_current = self.backoff.current

    def _note(self, exc: BaseException) -> None:
        text = redact_known(f"{type(exc).__name__}: {exc}")
        self._stats.last_error = text[:_MAX_ERROR_TEXT]
        self._stats.last_error_at = self._clock()

    def _count(self, code: int) -> None:
        by_code = self._stats.errors_by_code
        by_code[code] = by_code.get(code, 0) + 1

    async def _request(self) -> None:
        """Before every request: count it, and wait for the request ceiling."""
        self._stats.requests += 1
        await self._bucket.acquire()

    # -- list ---------------------------------------------------------------------------------

    async def _sync(self) -> None:
        self._sync_scope = self._scope
        if self.streaming_list and not self._list_this_sync:
            shards = getattr(self._lw, "shards", None)
            if shards is not None:
                shards.streaming()
            replaces = self._replaces
            try:
                await self._watch("", initial=True)
                return
            except Exception as exc:
                if self._replaces != replaces:
                    raise  # synced: the stream went on as a watch, and that failed
                unsupported = isinstance(exc, StatusError) and exc.code == 422
                if unsupported or isinstance(exc, _NoInitialEventsEnd):
                    # a fallback for good is a failure too: counted and noted (the others
                    # are re-raised, and counted where every sync failure is)
                    self._stats.stream_errors += 1
                    self._note(exc)
                if unsupported:
                    self.streaming_list = False
                    log.warning(
                        "%s: the server does not support streaming lists (%s); using list+watch",
                        self.name,
                        exc,
                    )
                elif isinstance(exc, _NoInitialEventsEnd):
                    self.streaming_list = False
                    log.warning("%s: %s; using list+watch", self.name, exc)
                else:
                    # one streaming attempt per sync: whatever ended it before its
                    # bookmark (a proxy ending streams, a server that ignores
                    # sendInitialEvents, a cut, an error), the sync goes on by a plain list
                    self._list_this_sync = True
                    log.warning(
                        "%s: the streaming list failed before its %s bookmark; this sync "
                        "lists instead",
                        self.name,
                        _INITIAL_EVENTS_END,
                    )
                    raise
        items, list_rv = await self._list()
        try:
            rv = parse_resource_version(list_rv)
        except DecodeError as exc:
            raise DecodeError(f"{self._where('list')}: list {exc}") from None
        if 0 <= rv < self._seen and not self._resetting:
            self._stats.history_resets += 1
            log.warning(
                "%s: the server's resourceVersion went backwards: the list is at %d, the "
                "cache was at %d; its history was reset (an etcd restore, or a new server at "
                "the same address): the cache is replaced as a whole",
                self.name,
                rv,
                self._seen,
            )
            self._epoch_start = self._replaces + 1
        self._replace(items, list_rv, rv)
        self._after_list = True

    async def _list(self) -> tuple[list[KubeObject], str]:
        """One whole list, page by page: ``(items, list resourceVersion)``."""
        options = self.options
        items: list[KubeObject] = []
        list_rv = ""
        continue_: str | None = None
        seen: set[str] = set()
        pages = 0
        limit = self.page_size
        while True:
            await self._request()
            try:
                page, page_rv, next_ = await self._lw.list_page("", limit, continue_)
            except Expired as exc:
                if continue_ is None:
                    raise
                # the list took longer than the server keeps its snapshots (compaction):
                # one list without paging, as client-go's pager does (FullListIfExpired)
                self._count(exc.code)
                log.info(
                    "%s: the list's continue token expired after %d pages (%s); listing "
                    "everything in one request",
                    self.name,
                    pages,
                    exc,
                )
                items, list_rv, continue_, pages, limit = [], "", None, 0, 0
                seen.clear()
                continue
            pages += 1
            bad_items = getattr(page, "bad", ())
            for bad in bad_items:
                self._bad_item(bad)
            dropped = getattr(page, "dropped", 0)
            self._stats.bytes_received += getattr(page, "nbytes", 0)
            self._stats.objects_received += len(page) + len(bad_items) + dropped
            self._stats.objects_dropped += dropped
            list_rv = list_rv or page_rv
            # each page transformed as it comes: the whole objects of one page at a time
            # are alive, never the whole list's (a projection's point, and less for the
            # kept objects to be scattered among once the rest is freed)
            items.extend(page if self._transform is None else await self._transform_list(page))
            if next_ is None:
                return items, list_rv
            if next_ in seen:
                raise self._transport_error(
                    "list",
                    f"the server sent the same continue token twice (after {pages} pages): "
                    "a paging loop",
                )
            if pages >= options.max_list_pages:
                raise self._transport_error(
                    "list", f"more than {options.max_list_pages} pages (max_list_pages)"
                )
            seen.add(next_)
            continue_ = next_

    async def _transform_list(self, items: list[KubeObject]) -> list[KubeObject]:
        """The transform over one listed page, with a cancellation point between objects
        every :data:`TRANSFORM_SLICE` seconds; a cancellation logs what it abandoned."""
        out: list[KubeObject] = []
        clock = time.monotonic
        due = clock() + TRANSFORM_SLICE
        for done, obj in enumerate(items, 1):
            if (t := self._apply(obj)) is not None:
                out.append(t)
            if clock() >= due:
                try:
                    await _turns()
                except asyncio.CancelledError:
                    self._abandoned("a list page", done, len(items))
                    raise
                due = clock() + TRANSFORM_SLICE
        return out

    def _abandoned(self, what: str, done: int, total: int) -> None:
        log.info(
            "%s: stopped while transforming %s: %d of %d objects transformed, %d abandoned "
            "(a stop waits for one object's transform at most)",
            self.name,
            what,
            done,
            total,
            total - done,
        )

    def _replace(self, objects: list[KubeObject], rv_text: str, rv: int) -> None:
        if self._sync_scope != self._scope:  # (rescoped during the sync: a narrower scope)
            objects = self._in_scope(objects)
        now = self._clock()
        self._fifo.put_nowait(Replace(objects, rv, now))
        self._replaces += 1
        self._confirmed = True
        self._list_this_sync = False
        stats = self._stats
        stats.lists += 1
        if stats.has_synced:
            stats.relists += 1
        self._rv = stats.last_rv = rv_text
        self._seen = rv
        self._resetting = False
        self._progress()
        if not stats.has_synced:
            stats.has_synced = True
            self._settled.set()
        log.debug("%s: synced %d objects at resourceVersion %s", self.name, len(objects), rv)

    # -- watch --------------------------------------------------------------------------------

    async def _watch(self, rv: str, *, initial: bool = False) -> None:
        """One watch request, until the server closes it cleanly (errors raise). A resumed
        watch (not the first after a Replace) is not confirmed yet: unless it brings a
        valid event or bookmark within :data:`CONFIRM_AFTER` seconds, a history check runs
        beside it, and a reset it finds ends the watch at once."""
        if initial or self._confirmed:
            try:
                return await self._watch_once(rv, initial=initial)
            finally:
                self._confirmed = False
        watch = asyncio.create_task(self._watch_once(rv), name=f"{self.name}-watch")
        self._checking = False
        probe = asyncio.create_task(self._confirm_later(rv), name=f"{self.name}-history-check")
        try:
            await asyncio.wait((watch, probe), return_when=asyncio.FIRST_COMPLETED)
            if not watch.done():
                reset = probe.result()
                if reset is not None:
                    raise reset
                await asyncio.wait((watch,))
            elif self._checking and not probe.done():
                # a history check already sent: its answer (bounded by header_timeout and
                # list_timeout) is counted, and a reset it finds is the news
                await asyncio.wait((probe,))
                reset = probe.result()
                if reset is not None:
                    raise reset
            return watch.result()
        finally:
            self._confirmed = False
            for task in (watch, probe):
                task.cancel()
            await asyncio.wait((watch, probe))
            for task in (watch, probe):  # (every outcome read: none is reported unread)
                if not task.cancelled():
                    task.exception()

    async def _confirm_later(self, rv: str) -> _HistoryReset | None:
        """Beside a resumed watch: after :data:`CONFIRM_AFTER` seconds without a valid
        event or bookmark, check the server's history; the reset found, if any. A check
        that fails is counted and logged; the watch goes on, unconfirmed."""
        await asyncio.sleep(CONFIRM_AFTER)
        if self._confirmed:
            return None
        self._checking = True
        try:
            await self._check_history(rv)
        except _HistoryReset as exc:
            return exc
        except StatusError as exc:
            self._count(exc.code)
            self._note(exc)
            log.warning("%s: history check: %s; the watch goes on", self.name, str(exc))
            return None
        except (TransportError, DecodeError) as exc:
            self._stats.stream_errors += 1
            self._note(exc)
            log.warning("%s: history check: %s; the watch goes on", self.name, str(exc))
            return None
        if not self._confirmed:
            self._confirmed = True
            # (a bookmark where the watcher already is: the writer publishes, which wakes
            # the freshness waits held until now)
            self._fifo.put_nowait(Bookmark(self._seen, self._clock()))
        return None

    async def _watch_once(self, rv: str, *, initial: bool = False) -> None:
        """One watch request (see :meth:`_watch`)."""
        timeout = max(1, round(random.uniform(self.min_watch_timeout, self.max_watch_timeout)))
        started = asyncio.get_running_loop().time()
        valid_before = self._stats.events_total + self._stats.bookmarks
        skipped_before = self._stats.decode_errors
        buffer: dict[str, KubeObject] | None = {} if initial else None
        position = -1 if initial else parse_resource_version(rv)
        await self._request()
        reads = self._lw.watch(
            rv,
            timeout,
            send_initial_events=initial,
            allow_bookmarks=True,
            idle_timeout=self.idle_timeout,
            on_oversized=self._oversized,
        )
        # the per-line path is hot (it runs once per event): everything it uses is local,
        # and what it produces goes to the FIFO once per read (see _queue)
        stats, transform = self._stats, self._transform
        delta_types, decode = _DELTA_TYPES, getattr(self._lw, "decode_event", decode_event)
        loop = asyncio.get_running_loop()
        hard = loop.time() + self.options.initial_events_timeout
        quiet = min(INITIAL_EVENTS_QUIET, self.options.initial_events_timeout)
        limit = asyncio.timeout_at(min(hard, loop.time() + quiet) if initial else None)
        clock, due = time.monotonic, 0.0  # (a cancellation point when a transform is slow)
        try:
            async with limit, contextlib.aclosing(reads):
                async for lines in reads:
                    now = stats.last_event_at = self._clock()  # one read, one receive time
                    stats.bytes_received += sum(map(len, lines)) + len(lines)
                    if buffer is not None:  # (initial events: the quiet bound starts again)
                        limit.reschedule(min(hard, loop.time() + quiet))
                    queued: list[Delta] = []
                    put = queued.append
                    last: str | None = None  # the RV of the last event or bookmark, to advance to
                    events = dropped = 0
                    scope = self._scope
                    try:
                        for line in lines:
                            try:
                                etype, obj, status = decode(line)
                            except MemoryError:
                                raise
                            except Exception as exc:  # DecodeError: any bad line is skipped
                                self._bad_line(line, exc)
                                continue
                            if obj is None:
                                if etype != "DROPPED":
                                    raise self._lw.error_from_status(status or {}, "watch")
                                # an object outside the shard: not built, but the watch
                                # position moves past it
                                text = (status or {}).get("resourceVersion", "")
                                try:
                                    rv_dropped = parse_resource_version(text)
                                except DecodeError as exc:
                                    self._bad_line(line, exc)
                                    continue
                                events += 1
                                dropped += 1
                                if buffer is None:
                                    if rv_dropped < position:
                                        raise _HistoryReset(
                                            f"an event at {rv_dropped} came on a watch at "
                                            f"{position}"
                                        )
                                    position = rv_dropped
                                    last = text
                                continue
                            if obj.rv < position:  # (never while initial events are read)
                                raise _HistoryReset(
                                    f"an event at {obj.rv} came on a watch at {position}"
                                )
                            dtype = delta_types.get(etype)
                            if dtype is None:  # BOOKMARK
                                stats.bookmarks += 1
                                if buffer is None:
                                    put(Bookmark(obj.rv, now))
                                    last = obj.metadata.resource_version
                                    position = obj.rv
                                elif obj.annotations.get(_INITIAL_EVENTS_END) == "true":
                                    limit.reschedule(None)
                                    objects = list(buffer.values())
                                    self._replace(objects, obj.metadata.resource_version, obj.rv)
                                    buffer = None  # (nothing queued before it)
                                    position = obj.rv
                                continue
                            events += 1
                            if transform is not None and clock() >= due:
                                if due:
                                    await self._pause(buffer is not None, events - 1, len(lines))
                                due = clock() + TRANSFORM_SLICE
                            if buffer is not None:
                                if dtype is ChangeType.DELETED:
                                    buffer.pop(obj.key, None)
                                elif (t := self._apply(obj) if transform else obj) is not None:
                                    buffer[obj.key] = t
                                continue
                            position = obj.rv
                            if transform is not None:
                                t = self._apply(obj)
                                if t is not None:
                                    put(ObjectDelta(dtype, t, now))
                                elif dtype is ChangeType.DELETED:
                                    put(ObjectDelta(dtype, obj, now))
                            else:
                                put(ObjectDelta(dtype, obj, now))
                            last = obj.metadata.resource_version
                    finally:  # an ERROR event raises: what came before it still counts
                        if scope != self._scope:  # (rescoped during this read)
                            queued = self._in_scope(queued)
                        self._stats.objects_dropped += dropped
                        self._queue(queued, last, position, events)
        except TimeoutError:
            if not limit.expired():
                raise
            if loop.time() < hard:
                raise _NoInitialEventsEnd(
                    f"{self._where('watch')}: the streaming list sent nothing for {quiet:g} s "
                    f"and no {_INITIAL_EVENTS_END} bookmark (does the server ignore "
                    "sendInitialEvents?)"
                ) from None
            raise _NoInitialEventsEnd(
                f"{self._where('watch')}: the streaming list sent no {_INITIAL_EVENTS_END} "
                f"bookmark within {self.options.initial_events_timeout:g} s (does the server "
                "ignore sendInitialEvents?)"
            ) from None
        if buffer is not None:
            raise self._transport_error(
                "watch", f"the streaming list ended before its {_INITIAL_EVENTS_END} bookmark"
            )
        valid = stats.events_total + stats.bookmarks - valid_before
        if not valid and not initial and not self._confirmed:
            await self._check_history(rv)
        if asyncio.get_running_loop().time() - started < _SHORT_WATCH:
            # a watch the server (or a proxy) ends at once is not worth resuming at once:
            # that would let it drive a tight loop, whatever the watch carried
            skipped = stats.decode_errors - skipped_before
            but = f", {skipped} bad lines skipped" if skipped else ""
            raise self._transport_error(
                "watch",
                f"very short watch (closed within {_SHORT_WATCH:g} s, {valid} valid events{but})",
            )

    async def _pause(self, initial: bool, done: int, total: int) -> None:
        """A cancellation point in a read of a watch whose transform has worked for
        :data:`TRANSFORM_SLICE` seconds; a cancellation logs what it abandoned."""
        try:
            await _turns()
        except asyncio.CancelledError:
            what = "a streaming list's initial events" if initial else "a read of a watch"
            self._abandoned(what, done, total)
            raise

    async def _check_history(self, rv: str) -> None:
        """After a watch that saw nothing: a one-item list tells the server's current
        resourceVersion; below the watch's, the server's history was reset (a watch from a
        resourceVersion the server has not reached gets no event at all, conformance 05d)."""
        await self._request()
        page, list_rv, _ = await self._lw.list_page("", 1, None)
        self._stats.bytes_received += getattr(page, "nbytes", 0)
        try:
            current = parse_resource_version(list_rv)
        except DecodeError as exc:
            raise DecodeError(f"{self._where('list')}: list {exc}") from None
        if current < parse_resource_version(rv):
            raise _HistoryReset(f"a watch from {rv} saw nothing, and the server is at {current}")

    def _queue(self, items: list[Delta], last: str | None, position: int, events: int) -> None:
        """Put the items made from one read into the FIFO and advance the watch position to
        ``last`` (the resourceVersion of the last event or bookmark read, ``position`` as
        an int)."""
        if events:
            self._stats.events_total += events
            self._stats.objects_received += events
            self._too_large_in_a_row = 0
        if items:
            self._fifo.put_many(items)
        if last is not None:
            self._rv = self._stats.last_rv = last
            self._seen = position
            self._confirmed = True
            self._progress()

    def _in_scope(self, items: list[_T]) -> list[_T]:
        """``items`` (objects or deltas) without the objects outside the current shard
        ranges (after a rescope that came while they were read)."""
        if self._parked:
            return []
        shards = getattr(self._lw, "shards", None)
        if shards is None:
            return items
        kept: list[_T] = []
        for item in items:
            obj = item if isinstance(item, KubeObject) else getattr(item, "obj", None)
            if obj is None or not shards.stray(obj):
                kept.append(item)
        return kept

    def _transport_error(self, verb: str, message: str) -> TransportError:
        lw = self._lw
        return TransportError(
            f"{self._where(verb)}: {message}",
            verb=verb,
            resource=lw.resource,
            namespace=lw.namespace,
        )

    def _where(self, verb: str) -> str:
        return f"{verb} {self._lw.resource} {in_namespace(self._lw.namespace)}"

    def _apply(self, obj: KubeObject) -> KubeObject | None:
        assert self._transform is not None
        try:
            result: Any = self._transform(obj)  # (typed, but user code: checked)
            if result is None:
                return None
            if not isinstance(result, KubeObject):
                raise TypeError(
                    f"the transform returned a {type(result).__name__}, not a KubeObject"
                )
            if type(result.key) is not str or type(result.rv) is not int:  # the store's keys
                raise TypeError("the transform returned a KubeObject whose key or rv was changed")
            return result
        except Exception as exc:
            self._stats.transform_errors += 1
            self._transform_failures.failed(
                exc, "%s: the transform raised on %s: %r; skipped", self.name, obj.key, exc
            )
            return None

    def _bad_line(self, line: bytes, exc: Exception) -> None:
        def describe() -> str:
            key = peek_key(line, event=True)
            of = f"; object {key}" if key else ""
            return f"{exc}{of}; {len(line)} bytes, starting {_shown(line)}"

        self._skipped("watch line", str(exc), describe)

    def _bad_item(self, bad: BadItem) -> None:
        key = bad.key or "key unknown"
        self._skipped("list item", bad.reason, lambda: f"{key}: {bad.reason}")

    def _oversized(self, size: int) -> None:
        why = "over the line limit"
        self._skipped("watch line", why, lambda: f"a line of {size} bytes, {why}")

    def _skipped(self, what: str, reason: str, describe: Callable[[], str]) -> None:
        """Count a skip; log it as :class:`FailureLog` does, the kinds told apart by
        ``reason`` without its digits (a flood of bad lines must not flood the log)."""
        self._stats.decode_errors += 1
        kind = (what, reason.translate(_NO_DIGITS)[:40])
        self._skips.failed(None, "%s: skipped a bad %s (%s)", self.name, what, Lazy(describe),
                           kind=kind)  # fmt: skip


_NO_DIGITS = str.maketrans("", "", "0123456789")


async def _turns() -> None:
    """A cancellation point: two turns of the loop, so that the cancellation of an
    informer's pipeline, which reaches its watcher through the pipeline's task group one
    turn after it arrived, lands here rather than after the next object."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


def _too_large(exc: StatusError) -> bool:
    """Whether ``exc`` says the requested resourceVersion is ahead of the server
    (conformance 05a: 504 reason Timeout, cause ResourceVersionTooLarge)."""
    if any(c.reason == "ResourceVersionTooLarge" for c in exc.causes):
        return True
    return "too large resource version" in exc.server_message.lower()


def _shown(data: bytes, n: int = 64) -> str:
    """The repr of the first ``n`` bytes of ``data``, cleaned of secrets before the cut (a
    cut through a secret would leave a piece that no longer matches)."""
    plain = repr(data[:n])
    clean = redact_known(repr(data[: n + 4096]))
    if clean.startswith(plain[:-1]):
        return plain
    return clean[: max(len(plain) - 1, clean.find(REDACTED) + len(REDACTED))] + "...'"

"""The Watcher (client-go's reflector, kube-rs's watcher): list+watch one resource into a FIFO.

:class:`Watcher` feeds a :class:`FifoSink` (the informer's FIFO) from a :class:`ListerWatcher`
(:class:`~aioinformer._client.listwatch.ListWatch` over HTTP) until cancelled, :meth:`Watcher.stop`
ped, or the FIFO is closed. Recovery:

* **Sync**: a paged list (``limit``/``continue``) at RV "" (a consistent read) pushed as
  ONE :class:`Replace` at the list RV; or, with ``streaming_list``, a watch with
  ``sendInitialEvents=true`` whose initial events are buffered until the bookmark annotated
  ``k8s.io/initial-events-end``, pushed as ONE Replace at its RV, the stream then going on
  as a watch. A 422 (WatchList gate off) falls back to list+watch for good, logged once.
* **Watch** from the last RV with bookmarks and ``timeoutSeconds`` drawn from
  [``min_watch_timeout``, ``max_watch_timeout``]: ADDED/MODIFIED/DELETED become
  :class:`Delta` ADDED/UPDATED/DELETED, BOOKMARK a :class:`Bookmark`; all advance the RV.
  The items made from one read of the stream go to the FIFO together, in order, when the
  read is done (an ERROR event among them still lets those before it through).
* **Resume without relisting** after a clean close, a dropped or cut stream, or a silent
  one (the watchdog aborts a stream with no byte for ``idle_timeout`` s). A clean close or
  the watchdog re-watch at once, failures after the backoff; a watch closed within 1 s
  without a valid event (bad lines do not count) is a failure (as in client-go), so no
  server or proxy behaviour makes a tight loop.
* **Relist on 410** (HTTP 410, or the ERROR event with code 410 that kube-apiserver really
  sends, conformance 08a) at RV "": consistent, never older than the cache (client-go lists
  at the last RV, cheaper for etcd but possibly served by a lagging cache). A list 410 (an
  expired continue token) restarts the list. Consecutive 410s wait for the backoff.
* **Other errors** (HTTP statuses, ERROR events with other codes) are logged (401/403/404
  as errors naming verb, resource, namespace and permission), counted in
  ``stats.errors_by_code`` (``stats.last_error`` keeps the latest failure) and retried
  after the backoff (0.8 s doubling to 30 s, jittered,
  reset after 2 minutes healthy), or after ``Retry-After`` if longer.
* **Bad lines** (malformed, unknown type, no metadata/name/integer RV, over the length
  limit) are logged briefly, counted in ``stats.decode_errors`` and skipped.
* **Transform** errors (an exception, or a result that is neither a KubeObject nor None)
  are logged and counted; the object is skipped (a deletion is
  queued untransformed).
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
from typing import Any, Protocol

from aioinformer._cache.deltas import Bookmark, Delta, DeltaType, Item, Replace
from aioinformer._client.listwatch import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_LIST_TIMEOUT,
    DEFAULT_MAX_LIST_BYTES,
    IdleStreamError,
)
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
from aioinformer._core.objects import KubeObject, Transform, decode_event

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "FifoSink",
    "ListerWatcher",
    "WatchOptions",
    "Watcher",
    "WatcherStatistics",
]

log = logging.getLogger("aioinformer.watch")

DEFAULT_IDLE_TIMEOUT = 90.0
"""Seconds without a byte after which a watch is presumed dead. kube-apiserver sends a
bookmark about every minute while the resourceVersion moves; 90 s leaves room for its 1 s
delivery buckets and progress-notify lag. A false alarm only costs a cheap resume."""

_INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_DELTA_TYPES = {
    "ADDED": DeltaType.ADDED,
    "MODIFIED": DeltaType.UPDATED,
    "DELETED": DeltaType.DELETED,
}
_MAX_RETRY_AFTER = 300.0  # a bogus Retry-After must not park a watcher for hours
_SHORT_WATCH = 1.0
_LOUD_ERRORS = frozenset({401, 403, 404})


class ListerWatcher(Protocol):
    """What the watcher needs from the HTTP side (:class:`~aioinformer._client.listwatch.ListWatch`
    implements it; tests may pass a fake)."""

    resource: str
    namespace: str | None

    async def list_page(
        self, resource_version: str, limit: int, continue_: str | None
    ) -> tuple[list[KubeObject], str, str | None]:
        """One page: ``(items, list resourceVersion, continue token or None)``."""
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

    def put_nowait(self, item: Item) -> None:
        """Queue ``item``; raises :class:`ClosedError` once closed (the stop signal)."""
        ...

    def put_many(self, items: Sequence[Item]) -> None:
        """Queue ``items`` in order; raises :class:`ClosedError` once closed."""
        ...


@dataclass
class WatcherStatistics:
    """Counters of one :class:`Watcher` (a copy: :meth:`Watcher.statistics`)."""

    lists: int = 0
    """Initial syncs completed (a Replace pushed), by list or streaming list."""
    relists: int = 0
    """Syncs completed after the first one (after a 410, or a CRD coming back)."""
    watch_restarts: int = 0
    """Watches started from a previous watch's RV (after a close, a drop, a stall, an error)."""
    events_total: int = 0
    """ADDED/MODIFIED/DELETED events received (initial events of streaming lists included)."""
    bookmarks: int = 0
    """BOOKMARK events received."""
    decode_errors: int = 0
    """Lines skipped: not a valid event or object, or longer than the line limit."""
    transform_errors: int = 0
    """Objects the transform raised on."""
    stream_errors: int = 0
    """Failures without an HTTP status: connection errors, cut or stalled streams, bodies
    that are not JSON."""
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
    """The largest list page body accepted (decompressed)."""
    max_line_bytes: int = 16 * 1024 * 1024
    """The longest watch line accepted; longer ones are skipped (counted)."""
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
        for name in ("idle_timeout", "header_timeout", "list_timeout"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, not {getattr(self, name)}")
        if self.max_list_bytes < 1 or self.max_line_bytes < 1:
            raise ConfigError("max_list_bytes and max_line_bytes must be positive")

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
    owned by this watcher; ``clock`` stamps ``received``, ``last_event_at`` and health;
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
        self._rv: str | None = None  # None: a (re)list is needed
        self._after_list = False
        self._healthy_since: float | None = None
        self._expired_in_a_row = 0
        self._settled = asyncio.Event()  # synced, or run() ended
        self._task: asyncio.Task[Any] | None = None
        self._stop_requested = False
        self._done = False

    def __repr__(self) -> str:
        rv = self._stats.last_rv or "-"
        return f"<Watcher {self.name} rv={rv} has_synced={self._stats.has_synced}>"

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def has_synced(self) -> bool:
        """Whether the first Replace has been pushed into the FIFO."""
        return self._stats.has_synced

    def statistics(self) -> WatcherStatistics:
        """A copy of the counters (see :class:`WatcherStatistics`)."""
        return dataclasses.replace(self._stats, errors_by_code=dict(self._stats.errors_by_code))

    async def wait_for_sync(self) -> None:
        """Wait until the first Replace has been pushed; :class:`ClosedError` if the watcher
        stopped before that."""
        await self._settled.wait()
        if not self._stats.has_synced:
            raise ClosedError(f"watcher {self.name} stopped before it synced")

    def stop(self) -> None:
        """Make :meth:`run` return (at once, closing any open response). Idempotent; before
        :meth:`run` it makes :meth:`run` return immediately."""
        if self._stop_requested:
            return
        self._stop_requested = True
        if self._task is not None and not self._done:
            self._task.cancel()

    async def run(self) -> None:
        """List and watch until cancelled, :meth:`stop` ped or the FIFO is closed."""
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
                if self._rv is None:
                    await self._sync()
                else:
                    if self._after_list:
                        self._after_list = False
                    else:
                        self._stats.watch_restarts += 1
                    await self._watch(self._rv)
                continue  # a clean close: resume at once
            except Expired as exc:
                delay = self._on_expired(exc)
            except StatusError as exc:
                self._count(exc.code)
                self._note(exc)
                delay = self._failure_delay(exc.retry_after)
                level = logging.ERROR if exc.code in _LOUD_ERRORS else logging.WARNING
                log.log(level, "%s: %s; retrying in %.1f s", self.name, exc, delay)
            except IdleStreamError as exc:
                self._stats.stream_errors += 1
                self._note(exc)
                log.warning("%s: %s; watching again", self.name, exc)
                continue
            except ClosedError:
                raise  # the FIFO was closed: the stop signal
            except Exception as exc:  # TransportError, DecodeError; anything else (e.g. a
                self._stats.stream_errors += 1  # failing credential plugin) with a traceback
                self._note(exc)
                delay = self._failure_delay(None)
                trace = not isinstance(exc, TransportError | DecodeError)
                log.warning("%s: %s; retrying in %.1f s", self.name, exc, delay, exc_info=trace)
            if delay > 0:
                await self._sleep(delay)

    def _on_expired(self, exc: Expired) -> float:
        self._count(exc.code)
        self._expired_in_a_row += 1
        what = "resourceVersion" if self._rv is not None else "list continue token"
        self._rv = None
        delay = 0.0 if self._expired_in_a_row == 1 else self._failure_delay(exc.retry_after)
        log.info("%s: %s expired (%s); relisting in %.1f s", self.name, what, exc, delay)
        return delay

    def _failure_delay(self, retry_after: float | None) -> float:
        if self._healthy_since is not None:
            self.backoff.note_healthy(self._clock() - self._healthy_since)
            self._healthy_since = None
        delay = self.backoff.next_delay()
        if retry_after is not None:
            delay = max(delay, min(retry_after, _MAX_RETRY_AFTER))
        self._stats.backoff_current = self.backoff.current
        return delay

    def _note(self, exc: Exception) -> None:
        self._stats.last_error = f"{type(exc).__name__}: {exc}"
        self._stats.last_error_at = self._clock()

    def _count(self, code: int) -> None:
        by_code = self._stats.errors_by_code
        by_code[code] = by_code.get(code, 0) + 1

    # -- list ---------------------------------------------------------------------------------

    async def _sync(self) -> None:
        if self.streaming_list:
            try:
                await self._watch("", initial=True)
                return
            except StatusError as exc:
                if exc.code != 422:
                    raise
                self.streaming_list = False
                log.warning(
                    "%s: the server does not support streaming lists (%s); using list+watch",
                    self.name,
                    exc,
                )
        items: list[KubeObject] = []
        list_rv = ""
        continue_: str | None = None
        while True:
            page, page_rv, continue_ = await self._lw.list_page("", self.page_size, continue_)
            list_rv = list_rv or page_rv
            items.extend(page)
            if continue_ is None:
                break
        if not (list_rv.isdigit() and list_rv.isascii()):
            raise DecodeError(f"{self._where('list')}: resourceVersion {list_rv[:32]!r}")
        if self._transform is not None:
            items = [t for o in items if (t := self._apply(o)) is not None]
        self._replace(items, list_rv)
        self._after_list = True

    def _replace(self, objects: list[KubeObject], rv: str) -> None:
        now = self._clock()
        self._fifo.put_nowait(Replace(objects, int(rv), now))
        stats = self._stats
        stats.lists += 1
        if stats.has_synced:
            stats.relists += 1
        self._advance(rv)
        if self._healthy_since is None:
            self._healthy_since = now
        if not stats.has_synced:
            stats.has_synced = True
            self._settled.set()
        log.debug("%s: synced %d objects at resourceVersion %s", self.name, len(objects), rv)

    def _advance(self, rv: str) -> None:
        self._rv = self._stats.last_rv = rv

    # -- watch --------------------------------------------------------------------------------

    async def _watch(self, rv: str, *, initial: bool = False) -> None:
        """One watch request, until the server closes it cleanly (errors raise)."""
        timeout = max(1, round(random.uniform(self.min_watch_timeout, self.max_watch_timeout)))
        started = self._clock()
        received = False
        valid_before = self._stats.events_total + self._stats.bookmarks
        skipped_before = self._stats.decode_errors
        buffer: dict[str, KubeObject] | None = {} if initial else None
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
        delta_types, decode = _DELTA_TYPES, decode_event
        async with contextlib.aclosing(reads):
            async for lines in reads:
                now = stats.last_event_at = self._clock()  # one read, one receive time
                if not received:
                    received = True
                    if self._healthy_since is None:
                        self._healthy_since = now
                queued: list[Item] = []
                put = queued.append
                last: KubeObject | None = None  # the last object queued, to advance to
                events = 0
                try:
                    for line in lines:
                        try:
                            etype, obj, status = decode(line)
                        except DecodeError as exc:
                            self._bad_line(line, str(exc))
                            continue
                        if obj is None:
                            raise self._lw.error_from_status(status or {}, "watch")
                        dtype = delta_types.get(etype)
                        if dtype is None:  # BOOKMARK
                            stats.bookmarks += 1
                            if buffer is None:
                                put(Bookmark(obj.rv, now))
                                last = obj
                            elif obj.annotations.get(_INITIAL_EVENTS_END) == "true":
                                rv = obj.metadata.resource_version
                                self._replace(list(buffer.values()), rv)  # (nothing queued)
                                buffer = None
                            continue
                        events += 1
                        if buffer is not None:
                            if dtype is DeltaType.DELETED:
                                buffer.pop(obj.key, None)
                            elif (t := self._apply(obj) if transform else obj) is not None:
                                buffer[obj.key] = t
                            continue
                        if transform is not None:
                            t = self._apply(obj)
                            if t is not None:
                                put(Delta(dtype, t, now))
                            elif dtype is DeltaType.DELETED:
                                put(Delta(dtype, obj, now))
                        else:
                            put(Delta(dtype, obj, now))
                        last = obj
                finally:  # an ERROR event raises: what came before it still counts
                    self._queue(queued, last, events)
        if buffer is not None:
            raise self._stream_error(
                f"the streaming list ended before its {_INITIAL_EVENTS_END} bookmark"
            )
        # bad lines only (e.g. an HTML page labelled JSON) do not make a watch worth
        # resuming at once: that would let a broken proxy drive a tight loop
        valid = stats.events_total + stats.bookmarks > valid_before
        if not valid and self._clock() - started < _SHORT_WATCH:
            skipped = stats.decode_errors - skipped_before
            but = f", {skipped} bad lines skipped" if skipped else ""
            raise self._stream_error(
                f"very short watch (closed within {_SHORT_WATCH:g} s without a valid event{but})"
            )

    def _queue(self, items: list[Item], last: KubeObject | None, events: int) -> None:
        """Put the items made from one read into the FIFO and advance the watch position to
        ``last`` (the object of the last event or bookmark among them)."""
        if events:
            self._stats.events_total += events
            self._expired_in_a_row = 0
        if items:
            self._fifo.put_many(items)
        if last is not None:
            self._advance(last.metadata.resource_version)

    def _stream_error(self, message: str) -> TransportError:
        lw = self._lw
        return TransportError(
            f"{self._where('watch')}: {message}",
            verb="watch",
            resource=lw.resource,
            namespace=lw.namespace,
        )

    def _where(self, verb: str) -> str:
        return f"{verb} {self._lw.resource} {in_namespace(self._lw.namespace)}"

    def _apply(self, obj: KubeObject) -> KubeObject | None:
        assert self._transform is not None
        try:
            result = self._transform(obj)
            if result is None or isinstance(result, KubeObject):
                return result
            raise TypeError(f"the transform returned a {type(result).__name__}, not a KubeObject")
        except Exception:
            n = self._stats.transform_errors = self._stats.transform_errors + 1
            if n <= 10 or n % 1000 == 0:
                log.exception("%s: the transform raised on %s; skipped", self.name, obj.key)
            return None

    def _bad_line(self, line: bytes, why: str) -> None:
        self._skipped(f"{why}; {len(line)} bytes, starting {line[:64]!r}")

    def _oversized(self, size: int) -> None:
        self._skipped(f"a line of {size} bytes, over the line limit")

    def _skipped(self, what: str) -> None:
        n = self._stats.decode_errors = self._stats.decode_errors + 1
        if n <= 10 or n % 1000 == 0:  # a flood of bad lines must not flood the log
            log.warning("%s: skipped a bad watch line (%s) [%d so far]", self.name, what, n)

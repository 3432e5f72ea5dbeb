"""Where an informer's pipeline runs: on the caller's event loop, or on a thread of its own.

In asyncio CPU is the lock: a reader that scans a big snapshot without awaiting delays
every other callback of its loop, the watcher's reads and the store writer among them.
:class:`PipelineThread` runs a coroutine (the informer's watch -> FIFO -> writer) on a new
event loop in a dedicated thread, so readers on the caller's loop cannot starve it: when
it has work, CPython hands it the GIL within one switch interval (lowered to
:data:`SWITCH_INTERVAL` while it runs) however busy the readers are.

Contract:

* :meth:`PipelineThread.start` starts the thread and its loop and runs ``main()`` there as
  a task; :attr:`PipelineThread.done` (a future of the caller's loop) resolves when that
  task has ended and the thread's loop is closed, with the task's result or exception.
* :meth:`PipelineThread.call` runs a function on the thread's loop (thread-safe, never
  blocks); :meth:`PipelineThread.run` runs a coroutine there and awaits it from the
  caller's loop; :meth:`PipelineThread.cancel` cancels ``main()``. All three are harmless
  once the thread has ended (``run`` then raises :class:`~aioinformer.ClosedError`).
* :meth:`PipelineThread.notify` schedules a callback on the caller's loop from the thread:
  one wake-up per call, nothing if the caller's loop is closed.
* The thread's loop does not poll for I/O while callbacks are ready (:class:`_BurstSelector`,
  at most :data:`MAX_SKIPPED_POLLS` times in a row): a poll gives the GIL away, and
  getting it back from a busy reader takes a switch interval, so an event from the socket
  to the published snapshot costs two hand-overs (the poll that waits, the read), not one
  per loop iteration.
* **The switch interval.** While any pipeline thread runs, the interpreter's switch
  interval (:func:`sys.setswitchinterval`) is at most :data:`SWITCH_INTERVAL` (0.2 ms).
  CPython makes a thread that holds the GIL give it up to a waiting one only after the
  waiter saw no hand-over for a whole interval; a busy event loop releases the GIL for an
  instant at every iteration (its zero-timeout poll) and takes it straight back, which
  counts as a hand-over. So a loop of readers whose steps are shorter than the interval
  (index lookups of a millisecond, back to back) would keep the pipeline thread waiting
  for the GIL for as long as they run; with 0.2 ms, any step longer than that
  lets it in, and a reader scanning a snapshot gives the GIL up within 0.2 ms of the
  pipeline's asking. An application that set a lower interval keeps it; the interval is
  put back when the last pipeline thread ends, unless the application changed it
  meanwhile. Threads only switch more often while both want the GIL: an idle pipeline
  costs nothing.
* Nothing is left behind: the thread ends with ``main()``, and cancels ``main()`` itself
  once the caller's loop is closed (an informer never stopped: nobody is left to tell it,
  checked every :data:`ORPHAN_CHECK` seconds); it is a daemon, so an interpreter exiting
  without stopping the informer does not hang on it. Connections still open on the
  thread's loop when ``main()`` has ended are aborted before the loop closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from aioinformer._core.errors import ClosedError

__all__ = ["MAX_SKIPPED_POLLS", "SWITCH_INTERVAL", "THREAD_PREFIX", "PipelineThread"]

ORPHAN_CHECK = 1.0
"""Seconds between the pipeline thread's checks that the caller's loop still runs."""

SWITCH_INTERVAL = 0.0002
"""The switch interval (seconds) while pipeline threads run (see the module docstring)."""

THREAD_PREFIX = "aioinformer-pipeline-"
"""How every pipeline thread's name starts."""

_T = TypeVar("_T")

MAX_SKIPPED_POLLS = 64
"""While callbacks are ready, the pipeline loop skips this many zero-timeout polls in a
row at most before it polls for I/O anyway."""


class _BurstSelector(selectors.DefaultSelector):
    """The default selector, except that a zero-timeout poll (the loop has callbacks ready)
    returns no event without a system call, up to :data:`MAX_SKIPPED_POLLS` times in a
    row. A poll that may block (nothing is ready: the loop waits for I/O or a timer) goes
    to the kernel as usual. Every system call gives the GIL away, and getting it back from
    a thread that keeps it busy costs up to a switch interval: the loop of a pipeline
    thread makes one per read of the socket, not one per callback."""

    _skipped = 0

    def select(self, timeout: float | None = None) -> list[tuple[Any, int]]:
        if timeout is not None and timeout <= 0 and self._skipped < MAX_SKIPPED_POLLS:
            self._skipped += 1
            return []
        self._skipped = 0
        return super().select(timeout)


class _SwitchInterval:
    """The interpreter's switch interval, lowered while pipeline threads run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved: float | None = None  # the interval before the first thread lowered it
        self._lowered = 0.0  # what the interpreter reports once lowered (whole microseconds)

    def enter(self) -> None:
        with self._lock:
            self._running += 1
            if self._running == 1 and sys.getswitchinterval() > SWITCH_INTERVAL:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(SWITCH_INTERVAL)
                self._lowered = sys.getswitchinterval()

    def leave(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0 and self._saved is not None:
                if sys.getswitchinterval() == self._lowered:  # (else the application's)
                    sys.setswitchinterval(self._saved)
                self._saved = None


_SWITCH = _SwitchInterval()


class PipelineThread:
    """A daemon thread running one coroutine on an event loop of its own (see the module
    docstring). Made on the caller's loop; ``name`` names the thread (with
    :data:`THREAD_PREFIX` before it)."""

    def __init__(self, name: str) -> None:
        self.name = THREAD_PREFIX + name
        self._caller = asyncio.get_running_loop()
        self._loop = asyncio.SelectorEventLoop(_BurstSelector())
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[Any] | None = None
        self._ended = False
        self._cancelling = False
        self.done: asyncio.Future[Any] = self._caller.create_future()
        """Resolves with ``main()``'s outcome once the thread's loop is closed."""

    def __repr__(self) -> str:
        state = "ended" if self._ended else "running" if self._thread else "new"
        return f"<PipelineThread {self.name} {state}>"

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The thread's event loop."""
        return self._loop

    @property
    def thread(self) -> threading.Thread | None:
        """The thread (None before :meth:`start`)."""
        return self._thread

    def start(self, main: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Start the thread and run ``main()`` on its loop."""
        if self._thread is not None:
            raise RuntimeError(f"{self!r} was started already")
        self._thread = threading.Thread(
            target=self._main, args=(main,), name=self.name, daemon=True
        )
        _SWITCH.enter()
        try:
            self._thread.start()
        except BaseException:
            _SWITCH.leave()
            raise

    def call(self, fn: Callable[[], object]) -> None:
        """Run ``fn()`` on the thread's loop, soon (nothing once the thread has ended)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: the thread has ended
            self._loop.call_soon_threadsafe(fn)

    def cancel(self) -> None:
        """Cancel ``main()``, once (later calls, and calls once it has ended, do nothing:
        a second cancellation would cut short the cleanup the first one started)."""
        if not self._cancelling:
            self._cancelling = True
            self.call(self._cancel_main)

    async def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coro`` on the thread's loop and return its result (from the caller's
        loop); :class:`ClosedError` if the thread has ended."""
        try:
            future: Future[_T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        except RuntimeError:
            coro.close()
            raise ClosedError(f"{self.name}: the pipeline thread has ended") from None
        return await asyncio.wrap_future(future)

    def notify(self, callback: Callable[[], object]) -> None:
        """From the thread: run ``callback()`` on the caller's loop (nothing if it is
        closed)."""
        with contextlib.suppress(RuntimeError):
            self._caller.call_soon_threadsafe(callback)

    async def wait(self) -> Any:
        """Await :attr:`done` without being cancelled out of it: a cancellation while
        waiting is passed on to ``main()``; ``main()``'s result is returned, or its
        exception (or the cancellation) raised, only once the thread has ended."""
        cancelled = False
        while not self.done.done():
            try:
                await asyncio.shield(self.done)
            except asyncio.CancelledError:
                if not self.done.done():
                    cancelled = True
                    self.cancel()
            except BaseException:  # main()'s own exception: raised below, once joined
                pass
        if self._thread is not None:
            self._thread.join()  # (it has closed its loop already: it only returns now)
        if cancelled:
            raise asyncio.CancelledError
        return self.done.result()

    # -- the thread -------------------------------------------------------------------------

    async def _orphan_check(self) -> None:
        while not self._caller.is_closed():  # noqa: ASYNC110  (no event tells it)
            await asyncio.sleep(ORPHAN_CHECK)
        self._cancel_main()

    def _cancel_main(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def _main(self, main: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        outcome: tuple[bool, Any]
        try:
            self._task = loop.create_task(main(), name=self.name)
            orphaned = loop.create_task(self._orphan_check(), name=f"{self.name}-orphan-check")
            try:
                outcome = (True, loop.run_until_complete(self._task))
            except BaseException as exc:  # handed to the caller's loop, raised there
                outcome = (False, exc)
            finally:
                self._task = None
                orphaned.cancel()
                _drain(loop, orphaned)
                _drain(loop, loop.shutdown_asyncgens())
                _drain(loop, loop.shutdown_default_executor())
                _abort_transports(loop)
        finally:
            self._ended = True
            loop.close()
            asyncio.set_event_loop(None)
            _SWITCH.leave()
        self.notify(lambda: _settle(self.done, outcome))


def _abort_transports(loop: asyncio.AbstractEventLoop) -> None:
    """Abort the socket transports still open on the thread's loop, and let their
    connection_lost callbacks run: a transport closed with unsent bytes waits for them to
    be written, and would outlive the loop (an unclosed-transport warning) if the peer is
    slow to read. (The selector loop's table of its transports is private: without it,
    nothing is done.)"""
    transports = getattr(loop, "_transports", None)
    if not transports:
        return
    for transport in list(transports.values()):
        with contextlib.suppress(Exception):
            transport.abort()
    _drain(loop, asyncio.sleep(0))


def _drain(loop: asyncio.AbstractEventLoop, aw: Awaitable[None]) -> None:
    with contextlib.suppress(BaseException):
        loop.run_until_complete(aw)


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    elif isinstance(value, asyncio.CancelledError):
        future.cancel()
    else:
        future.set_exception(value)

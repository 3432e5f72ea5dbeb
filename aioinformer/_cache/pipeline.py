"""Where informers' pipelines run: the caller's event loop, or one thread shared by a factory.

In asyncio CPU is the lock: a reader that scans a big snapshot without awaiting delays every
other callback of its loop, the watcher's reads and the store writer among them. A
:class:`PipelineHost` is where an informer runs its watch -> FIFO -> writer pipeline; the
informer talks to it only through this interface, so it reads the same whichever host it
has:

* :class:`LoopHost`: the caller's loop. ``call`` and ``notify`` run their function at once.
* :class:`ThreadHost`: one daemon thread with an event loop of its own, shared by every
  informer of one factory, with one HTTP session per API server (:meth:`PipelineHost.adopt`):
  readers that keep the caller's loop busy cannot delay the pipelines. It starts with the
  first pipeline and ends with :meth:`ThreadHost.aclose` (the factory's exit). Its loop is
  a uvloop loop when the caller's is one, else a selector loop that does not poll for I/O
  while callbacks are ready (:class:`_BurstSelector`). While it runs, the interpreter's
  switch interval is lowered as the factory's
  :class:`~aioinformer._cache.process.ProcessSettings` say.

Contract of every host:

* :meth:`~PipelineHost.run` runs ``main()`` on the host and returns its result (or raises
  its exception) on the caller's loop. Cancelling the caller cancels ``main()``, and
  ``run`` returns (raising the cancellation) once ``main()`` has ended: nothing of an
  informer outlives its ``run``. **Stops are bounded**: on a :class:`ThreadHost`, a
  ``main()`` that has not ended :data:`STOP_TIMEOUT` seconds after its cancellation (a
  transform or an index function stuck in one call: the pipeline's own code yields
  between objects) is abandoned, with a WARNING naming it and the function its thread is
  in; ``run`` raises the cancellation, and :meth:`ThreadHost.aclose` then returns at once,
  leaving the daemon thread to end when that call returns. (On a :class:`LoopHost` a
  blocked call blocks the caller's loop itself: nothing can bound that.)
* :meth:`~PipelineHost.call` runs a function on the host soon (thread-safe, never blocks);
  :meth:`~PipelineHost.submit` runs a coroutine there and awaits it from the caller's
  loop; :meth:`~PipelineHost.notify` runs a function on the caller's loop (from the host).
  Each is harmless once the host has ended (``run`` and ``submit`` then raise
  :class:`~aioinformer.ClosedError`).
* Nothing is left behind: the thread ends at :meth:`ThreadHost.aclose`, or by itself once
  the caller's loop is closed (a factory never closed: nobody is left to tell it, checked
  every :data:`ORPHAN_CHECK` seconds); it is a daemon, so an interpreter exiting without
  closing the factory does not hang on it. Its HTTP sessions are closed before its loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import selectors
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar, cast

from aioinformer._cache.process import SWITCH, ProcessSettings, raise_priority
from aioinformer._cache.trim import share_main_heap
from aioinformer._client.rest import RestClient
from aioinformer._core import logs
from aioinformer._core.errors import ClosedError, ConfigError

__all__ = [
    "MAX_SKIPPED_POLLS",
    "STOP_TIMEOUT",
    "THREAD_PREFIX",
    "Adoptable",
    "LoopHost",
    "PipelineHost",
    "ThreadHost",
]

STOP_TIMEOUT = 5.0
"""Seconds a cancelled pipeline may take to end before it is abandoned (see the module
docstring): the longest a factory's exit waits for its pipeline thread."""

_WHERE_FRAMES = 4  # frames of the stuck thread's stack a WARNING shows, innermost first

ORPHAN_CHECK = 1.0
"""Seconds between the pipeline thread's checks that the caller's loop still runs."""

THREAD_PREFIX = "aioinformer-pipeline-"
"""How every pipeline thread's name starts."""

RESOLVER_THREADS = 2
"""Threads of the pipeline loop's default executor (aiohttp resolves host names there)."""

RESOLVER_PREFIX = "aioinformer-resolver-"
"""How the names of those threads start (then the factory's id, as the pipeline thread's)."""

MAX_SKIPPED_POLLS = 64
"""While callbacks are ready, the pipeline loop skips this many zero-timeout polls in a
row at most before it polls for I/O anyway."""

log = logs.logger("aioinformer.pipeline")

_T = TypeVar("_T")
_A = TypeVar("_A", bound="Adoptable")


class Adoptable(Protocol):
    """A lister-watcher a host can move onto its loop: the same requests through another
    client (:meth:`~aioinformer._client.listwatch.ListWatch.using`)."""

    @property
    def rest(self) -> RestClient:
        """The client its requests go through now."""
        ...

    def using(self: _A, rest: RestClient) -> _A:
        """The same requests through ``rest``."""
        ...


class PipelineHost(Protocol):
    """Where informers' pipelines run (see the module docstring)."""

    @property
    def threaded(self) -> bool:
        """Whether pipelines run on another thread than the caller's loop."""
        ...

    @property
    def process(self) -> ProcessSettings:
        """The process-wide effects the pipelines may have."""
        ...

    @property
    def priority(self) -> int | None:
        """The real-time priority the pipelines run at (``ProcessSettings.pipeline_priority``
        where the kernel granted it); None: the normal policy."""
        ...

    async def run(self, main: Callable[[], Coroutine[Any, Any, _T]], name: str) -> _T:
        """Run ``main()`` on the host until it ends (named ``name``); see the contract."""
        ...

    def adopt(self, list_watch: _T) -> _T:
        """From ``main()``: ``list_watch`` as it must be used on the host's loop (an
        :class:`Adoptable` one, where the host has a loop of its own)."""
        ...

    def call(self, fn: Callable[[], object]) -> None:
        """Run ``fn()`` on the host, soon (thread-safe)."""
        ...

    def notify(self, fn: Callable[[], object]) -> None:
        """From the host: run ``fn()`` on the caller's loop (nothing once it is closed)."""
        ...

    async def submit(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coro`` on the host and return its result on the caller's loop."""
        ...

    async def aclose(self) -> None:
        """Stop the host (pipelines still running on it are cancelled); idempotent."""
        ...


class LoopHost:
    """Pipelines on the caller's event loop: everything runs where it is asked."""

    threaded = False
    priority = None  # (the caller's thread is the caller's: its policy is left alone)

    def __init__(self, process: ProcessSettings | None = None) -> None:
        self.process = process or ProcessSettings()

    def __repr__(self) -> str:
        return "<LoopHost>"

    async def run(self, main: Callable[[], Coroutine[Any, Any, _T]], name: str) -> _T:
        return await main()

    def adopt(self, list_watch: _T) -> _T:
        return list_watch

    def call(self, fn: Callable[[], object]) -> None:
        fn()

    def notify(self, fn: Callable[[], object]) -> None:
        fn()

    async def submit(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return await coro

    async def aclose(self) -> None:
        """Nothing to stop."""


class _BurstSelector(selectors.DefaultSelector):
    """The default selector, except that a zero-timeout poll (the loop has callbacks ready)
    returns no event without a system call, up to :data:`MAX_SKIPPED_POLLS` times in a
    row. A poll that may block (nothing is ready: the loop waits for I/O or a timer) goes
    to the kernel as usual. Every system call gives the GIL away, and getting it back from
    a thread that keeps it busy costs up to a switch interval: the pipeline loop makes one
    per read of the socket, not one per callback."""

    _skipped = 0

    def select(self, timeout: float | None = None) -> list[tuple[Any, int]]:
        if timeout is not None and timeout <= 0 and self._skipped < MAX_SKIPPED_POLLS:
            self._skipped += 1
            return []
        self._skipped = 0
        return super().select(timeout)


def _loop_like(caller: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
    """A new event loop of the caller's kind: uvloop's, or a selector loop."""
    if type(caller).__module__.partition(".")[0] == "uvloop":
        import uvloop  # (installed: the caller's loop is one)

        loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        return loop
    return asyncio.SelectorEventLoop(_BurstSelector())


class _Remote:
    """A coroutine running as a task on the host's loop, seen from the caller's."""

    def __init__(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False
        self._coro: Coroutine[Any, Any, Any] | None = coro
        self._name = name

    def start(self) -> None:  # on the host's loop
        coro, self._coro = self._coro, None
        if coro is None or self.future.done():
            return
        task = self._task = asyncio.get_running_loop().create_task(coro, name=self._name)
        task.add_done_callback(self._settle)
        if self._cancelled:
            task.cancel()

    def abandon(self, host: str) -> None:
        """The host ended before this could start or finish (from the host's thread)."""
        coro, self._coro = self._coro, None
        if coro is not None:
            coro.close()
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            self.future.set_exception(ClosedError(f"{host} has ended"))

    def _settle(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() and not self._cancelled:  # by the host's end, not the caller
            self.future.set_exception(ClosedError(f"{self._name}: its host ended"))
        elif task.cancelled():
            self.future.cancel()
        elif (exc := task.exception()) is not None:
            self.future.set_exception(exc)
        else:
            self.future.set_result(task.result())

    def cancel(self) -> None:  # on the host's loop
        self._cancelled = True
        if self._task is not None:
            self._task.cancel()


class ThreadHost:
    """Every pipeline of one factory on one thread with an event loop of its own (see the
    module docstring). Made anywhere; started by the first :meth:`run` or :meth:`submit`,
    from the caller's loop; ended by :meth:`aclose`. ``name`` names the thread (after
    :data:`THREAD_PREFIX`)."""

    threaded = True

    def __init__(self, name: str, process: ProcessSettings | None = None) -> None:
        self.name = THREAD_PREFIX + name
        self.process = process or ProcessSettings()
        self._caller: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None  # (of the host's loop)
        self._stopping = False  # (read and written on the host's loop only)
        self._ended: asyncio.Future[None] | None = None  # (of the caller's loop)
        self._clients: dict[int, tuple[RestClient, RestClient]] = {}  # id(source) -> pair
        self._remotes: set[_Remote] = set()  # started by run(), not ended yet
        self._lock = threading.Lock()  # (ended and _remotes, between the two threads)
        self._abandoned = False  # a cancelled pipeline outlived STOP_TIMEOUT
        self.ended = False
        """Whether the thread has ended (its loop is closed)."""
        self.priority: int | None = None
        """The thread's real-time priority, once it runs and the kernel granted
        ``process.pipeline_priority``; None: the normal policy."""

    def __repr__(self) -> str:
        state = "ended" if self.ended else "running" if self._thread else "new"
        return f"<ThreadHost {self.name} {state}>"

    @property
    def thread(self) -> threading.Thread | None:
        """The thread (None before the first pipeline)."""
        return self._thread

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The thread's event loop (None before the first pipeline)."""
        return self._loop

    def _started(self) -> asyncio.AbstractEventLoop:
        """The host's loop, starting the thread first if this is the first request."""
        if self.ended:
            raise ClosedError(f"{self.name} has ended")
        if self._loop is not None:
            return self._loop
        self._caller = asyncio.get_running_loop()
        self._ended = self._caller.create_future()
        loop = self._loop = _loop_like(self._caller)
        # its default executor only resolves host names for new connections: two threads
        # at most, named after the pipeline's (asyncio's default grows to cpu_count + 4)
        loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(
                RESOLVER_THREADS, self.name.replace(THREAD_PREFIX, RESOLVER_PREFIX)
            )
        )
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        if self.process.release_memory:  # (before the thread's first allocation)
            share_main_heap()
        SWITCH.enter(self.process.switch_interval)
        try:
            self._thread.start()
        except BaseException:
            SWITCH.leave(self.process.switch_interval)
            self._loop = None
            loop.close()
            raise
        return loop

    async def run(self, main: Callable[[], Coroutine[Any, Any, _T]], name: str) -> _T:
        self._started()
        remote = _Remote(main(), name)
        with self._lock:
            if self.ended:
                remote.abandon(self.name)
            else:
                self._remotes.add(remote)
                remote.future.add_done_callback(lambda _f: self._forget(remote))
                self.call(lambda: self._start_remote(remote))
        waiter = asyncio.wrap_future(remote.future)
        waiter.add_done_callback(_read)  # (an outcome that comes after we left is read)
        cancelled = False
        deadline: float | None = None
        while not waiter.done():
            try:
                async with asyncio.timeout_at(deadline):
                    await asyncio.shield(waiter)
            except asyncio.CancelledError:
                if not waiter.done() and not cancelled:
                    cancelled = True
                    self.call(remote.cancel)
                    deadline = asyncio.get_running_loop().time() + STOP_TIMEOUT
            except TimeoutError:  # cancelled STOP_TIMEOUT ago, and still running
                self._abandon(name)
                raise asyncio.CancelledError from None
            except Exception:  # main()'s own exception: raised below
                pass
        if cancelled:
            raise asyncio.CancelledError
        result: _T = waiter.result()
        return result

    def _abandon(self, name: str) -> None:
        """``name`` did not end within :data:`STOP_TIMEOUT` s of its cancellation: say
        where the thread is, and leave it (it ends when that call returns)."""
        self._abandoned = True
        log.warning(
            "%s: the pipeline %s did not end within %g s of its cancellation; abandoned "
            "(its thread is in %s, and ends when that returns)",
            self.name,
            name,
            STOP_TIMEOUT,
            self._where(),
        )

    def _where(self) -> str:
        """The function the thread is running now, and where."""
        thread = self._thread
        frame = sys._current_frames().get(thread.ident) if thread and thread.ident else None
        if frame is None:
            return "an unknown place"
        stack: list[str] = []
        while frame is not None and len(stack) < _WHERE_FRAMES:
            code = frame.f_code
            stack.append(f"{code.co_name}() at {code.co_filename}:{frame.f_lineno}")
            frame = frame.f_back
        return ", called from ".join(stack)

    def _start_remote(self, remote: _Remote) -> None:
        """On the host's loop: start ``remote``, unless the host is stopping (its tasks
        are being cancelled: one started now would be left on a closed loop)."""
        if self._stopping:
            remote.abandon(self.name)
        else:
            remote.start()

    def _forget(self, remote: _Remote) -> None:
        with self._lock:
            self._remotes.discard(remote)

    async def submit(self, coro: Coroutine[Any, Any, _T]) -> _T:
        try:
            self._started()
        except ClosedError:
            coro.close()
            raise
        return await self.run(lambda: coro, f"{self.name}-submitted")

    def adopt(self, list_watch: _T) -> _T:
        movable = cast(Adoptable, list_watch)
        source = movable.rest
        pair = self._clients.get(id(source))
        if pair is None:
            if asyncio.get_running_loop() is not self._loop:
                raise ConfigError(f"{self.name}: adopt() is for pipelines running on it")
            pair = self._clients[id(source)] = (source, source.clone())
        moved: _T = movable.using(pair[1])  # type: ignore[assignment]
        return moved

    def call(self, fn: Callable[[], object]) -> None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the thread ended
                loop.call_soon_threadsafe(fn)

    def notify(self, fn: Callable[[], object]) -> None:
        caller = self._caller
        if caller is not None:
            with contextlib.suppress(RuntimeError):
                caller.call_soon_threadsafe(fn)

    async def aclose(self) -> None:
        """End the thread: every pipeline still running on it is cancelled (its
        :meth:`run` raises :class:`~aioinformer.ClosedError`), its HTTP sessions closed,
        its loop closed; returns once the thread has ended, or after :data:`STOP_TIMEOUT`
        seconds (at once if a pipeline was abandoned already), leaving a stuck daemon
        thread to end by itself (logged). Idempotent; harmless before the first
        pipeline."""
        if self._thread is None or self._ended is None:
            return
        self.call(self._request_stop)
        timeout = 0.0 if self._abandoned else STOP_TIMEOUT
        if not self._ended.done():
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(self._ended)
            except TimeoutError:
                if not self._abandoned:
                    self._abandon("(the host itself)")
                return
        self._thread.join()

    # -- the thread --------------------------------------------------------------------------

    def _request_stop(self) -> None:
        self._stopping = True
        if self._stop is not None:
            self._stop.set()

    async def _serve(self) -> None:
        """Until asked to stop (or the caller's loop is gone): then cancel what still runs
        and close the HTTP sessions."""
        stop = self._stop = asyncio.Event()
        caller = self._caller
        assert caller is not None
        while not self._stopping and not caller.is_closed():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), ORPHAN_CHECK)
        self._stopping = True
        me = asyncio.current_task()
        rest = [t for t in asyncio.all_tasks() if t is not me]
        for task in rest:
            task.cancel()
        if rest:
            await asyncio.wait(rest)
        clients, self._clients = self._clients, {}
        for _source, moved in clients.values():
            with contextlib.suppress(Exception):
                await moved.aclose()

    def _main(self) -> None:
        loop = self._loop
        assert loop is not None
        self.priority = raise_priority(self.process.pipeline_priority, self.name)
        asyncio.set_event_loop(loop)
        try:
            with contextlib.suppress(BaseException):
                loop.run_until_complete(self._serve())
            with contextlib.suppress(BaseException):
                loop.run_until_complete(loop.shutdown_asyncgens())
            with contextlib.suppress(BaseException):
                loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            with self._lock:
                self.ended = True
                remotes, self._remotes = self._remotes, set()
            for remote in remotes:
                remote.abandon(self.name)
            loop.close()
            asyncio.set_event_loop(None)
            SWITCH.leave(self.process.switch_interval)
            ended = self._ended
            if ended is not None:
                self.notify(lambda: _settle(ended))


def _read(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)

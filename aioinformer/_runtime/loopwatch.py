"""The loop watchdog: notices when the event loop is blocked, and says who blocked it.

In asyncio everything shares one thread: a reconcile or a sync handler that blocks (a
``time.sleep``, a slow synchronous client, a long computation) stalls every informer,
handler and controller of the process. :class:`LoopWatchdog` runs a thread that expects a
heartbeat from the loop every ``interval`` seconds; when the loop has not answered for
``threshold`` seconds it logs one WARNING naming the task running on the loop at that
moment (reconcile tasks are named ``reconcile <controller> <key>``, handler tasks
``<informer>:<subscriber>``), and when the loop comes back, how long it was blocked. The
longest recent block is :attr:`LoopWatchdog.worst`, which ``/healthz`` reports.
"""

from __future__ import annotations

import asyncio
import threading
import time

from aioinformer._core import logs

__all__ = ["LoopWatchdog"]

log = logs.logger("aioinformer.loop")


class LoopWatchdog:
    """Watches one event loop from a thread (see the module docstring). Use ``start()`` on
    the loop, ``stop()`` when done (or ``async with``)."""

    def __init__(self, *, threshold: float = 1.0, interval: float = 0.1) -> None:
        self.threshold = threshold
        """Seconds without a heartbeat after which the loop counts as blocked."""
        self.interval = interval
        self.blocked_since: float | None = None
        """``time.monotonic()`` when the current block began, as the watchdog saw it (None:
    not blocked)."""
        self.worst = 0.0
        """The longest block seen (seconds)."""
        self.blocks = 0
        """Blocks longer than ``threshold`` seen."""
        self._beat = time.monotonic()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def lag(self) -> float:
        """Seconds since the loop's last heartbeat."""
        return max(0.0, time.monotonic() - self._beat - self.interval)

    def start(self) -> None:
        """Start beating on the running loop and watching from a daemon thread."""
        self._loop = asyncio.get_running_loop()
        self._beat = time.monotonic()
        self._schedule()
        self._thread = threading.Thread(target=self._watch, name="aioinformer-loop-watchdog",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (idempotent)."""
        self._stop.set()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)

    async def __aenter__(self) -> LoopWatchdog:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

    def _schedule(self) -> None:
        assert self._loop is not None
        self._handle = self._loop.call_later(self.interval, self._heartbeat)

    def _heartbeat(self) -> None:
        now = time.monotonic()
        since = self.blocked_since
        if since is not None:
            took = now - since
            self.worst = max(self.worst, took)
            log.warning("the event loop was blocked for %.1f s", took)
            self.blocked_since = None
        self._beat = now
        if not self._stop.is_set():
            self._schedule()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            silent = time.monotonic() - self._beat - self.interval
            if silent >= self.threshold and self.blocked_since is None:
                self.blocked_since = self._beat + self.interval  # when the beat was due
                self.blocks += 1
                self.worst = max(self.worst, silent)
                log.warning(
                    "the event loop has been blocked for %.1f s, in %s: everything in this "
                    "process waits (a blocking call in async code?)",
                    silent,
                    self._running_task(),
                )

    def _running_task(self) -> str:
        loop = self._loop
        if loop is None:
            return "an unknown task"
        try:
            task = asyncio.tasks._current_tasks.get(loop)  # type: ignore[attr-defined]
        except Exception:  # (a loop implementation without the registry)
            task = None
        if task is None:
            return "a callback (no task)"
        return f"task {task.get_name()!r}"

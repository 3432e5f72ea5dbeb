"""Service: the one lifecycle shape of everything that runs for a while.

Every long-running part of the library (an informer factory, a controller, a leader elector,
a shard manager, an event recorder, the manager) is a :class:`Service`, used one of two
ways, trio-style:

* ``await x.run()``: runs until cancelled (or until it fails), inside the caller's task;
  cancellation is the only stop signal, and ``run`` returns (raising the cancellation)
  only once everything it started has ended;
* ``async with x:``: runs ``x.run()`` in a task owned by the block. Entering returns once
  ``x`` says it is ready (a manager: its caches synced and its controllers started); if it
  fails before, entering raises that error. Leaving cancels it, waits for it, and raises
  the error it failed with, if any. The task never outlives the block.

If the service fails while the block runs, the block's body is cancelled at once (as
a task group cancels its body when a child fails) and leaving the block raises the
service's error; if the body raised an exception of its own, that one propagates, with
the service's error as its cause.

A service runs once at a time: a second ``run`` while one runs is a
:class:`~aioinformer.ConfigError`. Some run once in all (an informer, an informer factory:
their state is spent) and say so; the others may run again once they have ended.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Self

from aioinformer._core.errors import ConfigError

__all__ = ["Service", "wait_ended"]


class Service:
    """Mixin: :meth:`run` until cancelled, or ``async with`` (see the module docstring).
    Subclasses implement :meth:`run`, call :meth:`_begin` at its start, :meth:`_end` in its
    ``finally`` and :meth:`_ready` once ready (``async with`` waits for it)."""

    _task: asyncio.Task[None] | None = None
    _readiness: asyncio.Future[None] | None = None
    _body: asyncio.Task[object] | None = None  # the task inside the ``async with`` block
    _body_cancelled = False  # we cancelled it: the service failed while it ran
    _active = False

    async def run(self) -> None:
        """Run until cancelled."""
        raise NotImplementedError

    def _service_name(self) -> str:
        """The name of the task ``async with`` runs :meth:`run` in."""
        return type(self).__name__

    def _begin(self) -> None:
        """Called first thing in :meth:`run`: refuses a second concurrent run."""
        if self._active:
            raise ConfigError(f"{self._service_name()} is already running")
        self._active = True

    def _end(self) -> None:
        """Called last thing in :meth:`run` (in its ``finally``)."""
        self._active = False

    def _ready(self) -> None:
        """Called by :meth:`run` once it is ready: ``async with`` enters."""
        ready = self._readiness
        if ready is not None and not ready.done():
            ready.set_result(None)

    async def __aenter__(self) -> Self:
        if self._task is not None:
            raise ConfigError(f"{self._service_name()} is already started")
        loop = asyncio.get_running_loop()
        ready = self._readiness = loop.create_future()
        task = self._task = loop.create_task(self.run(), name=self._service_name())
        try:
            await asyncio.wait([ready, task], return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            await self._stop()
            raise
        if not ready.done():  # it ended (failed) before it was ready
            await self._stop()
            raise ConfigError(f"{self._service_name()} ended before it was ready")
        self._body, self._body_cancelled = asyncio.current_task(), False
        task.add_done_callback(self._failed_under_body)
        return self

    def _failed_under_body(self, task: asyncio.Task[None]) -> None:
        """The service ended while the block runs: cancel the block's body (as a task group
        does), so it learns at once; leaving the block then raises the service's error."""
        body = self._body
        if task is self._task and body is not None and not body.done():
            self._body_cancelled = True
            body.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        body, self._body = self._body, None
        if self._body_cancelled and body is not None:
            body.uncancel()  # (ours: the service's error replaces the cancellation)
        try:
            await self._stop()
        except Exception as error:
            if exc is not None and not (
                self._body_cancelled and exc_type is asyncio.CancelledError
            ):
                # the body's own exception goes on; the service's is chained to it
                raise exc from error
            raise

    async def _stop(self) -> None:
        """Cancel the task ``async with`` started, wait for it, raise its error."""
        task, self._task = self._task, None
        ready, self._readiness = self._readiness, None
        if ready is not None and not ready.done():
            ready.cancel()
        if task is None:
            return
        task.remove_done_callback(self._failed_under_body)
        task.cancel()
        await wait_ended(task)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            raise error


async def wait_ended(task: asyncio.Task[object]) -> None:
    """Wait until ``task`` (already asked to stop) has ended, even if the caller is
    cancelled meanwhile (then the cancellation is raised once it has ended): nothing a
    caller started outlives it."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            cancelled = True
            task.cancel()
    if cancelled:
        raise asyncio.CancelledError

"""BackgroundRunner: ``async with thing:`` runs ``thing.run()`` in a task until exit.

Shared by the leader elector and the shard manager, whose ``run()`` loops until
cancelled (and releases their Leases on cancellation).
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Self

__all__ = ["BackgroundRunner"]


class BackgroundRunner:
    """Mixin: ``async with`` starts :meth:`run` in a task named :meth:`task_name`;
    :meth:`aclose` (or leaving the block) cancels it, waits, and re-raises its error."""

    _task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        """The loop to run in the background (until cancelled)."""
        raise NotImplementedError

    def task_name(self) -> str:
        """The background task's name."""
        return type(self).__name__

    async def __aenter__(self) -> Self:
        if self._task is not None:
            raise RuntimeError(f"{type(self).__name__} is already started")
        self._task = asyncio.create_task(self.run(), name=self.task_name())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop what ``async with`` started (cancel :meth:`run`) and wait for it.
        Idempotent."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise error

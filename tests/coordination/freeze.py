"""Freezing one replica of an in-process cluster the way SIGSTOP freezes a process, or
cutting it off from the API server (:func:`cut_off`).

Every replica of a test runs on the test's event loop (virtual time, talking real HTTP to
KubeSim on the same loop). :class:`Freezer` tells their tasks apart: a task created in
``with freezer.replica(name):`` (e.g. by ``async with manager:``) belongs to that
replica, and so does every task created inside it (tasks inherit the context they are
created in). While a replica is frozen, none of its
tasks takes a step: each stops at its next resumption, a new one does not start. What is
not a task keeps going, as the kernel does for a stopped process: timers fire (their tasks
wake only at the thaw), bytes arrive in its sockets' buffers, its clock (the loop's) moves
on, and the other replicas and the server run. Thawed, its tasks resume where they
stopped, a cancellation that came meanwhile delivered then, in the order they stopped.
"""

from __future__ import annotations

import asyncio
import contextvars
import types
from collections.abc import Coroutine, Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

_replica: contextvars.ContextVar[str | None] = contextvars.ContextVar("replica", default=None)


class Freezer:
    """Start replicas' tasks, freeze and thaw them (see the module docstring)."""

    def __init__(self) -> None:
        self.frozen: set[str] = set()
        self._parked: dict[str, list[asyncio.Future[None]]] = {}
        self.stopped_steps = 0
        """Task steps held back by a freeze so far (a freeze that stopped nothing did not
        test anything)."""

    @contextmanager
    def installed(self) -> Iterator[Freezer]:
        """Make the running loop's tasks freezable while the block runs."""
        loop = asyncio.get_running_loop()
        previous = loop.get_task_factory()
        loop.set_task_factory(self._task)  # type: ignore[arg-type]
        try:
            yield self
        finally:
            loop.set_task_factory(previous)

    @contextmanager
    def replica(self, replica: str) -> Iterator[None]:
        """The tasks created while the block runs (e.g. by ``async with manager:``), and
        their descendants, are replica ``replica``'s."""
        token = _replica.set(replica)
        try:
            yield
        finally:
            _replica.reset(token)

    def freeze(self, replica: str) -> None:
        self.frozen.add(replica)

    def thaw(self, replica: str) -> None:
        self.frozen.discard(replica)
        for parked in self._parked.pop(replica, []):
            if not parked.done():
                parked.set_result(None)

    def _task(
        self,
        loop: asyncio.AbstractEventLoop,
        coro: Coroutine[Any, Any, Any],
        context: contextvars.Context | None = None,
    ) -> asyncio.Task[Any]:
        replica = (context or contextvars.copy_context()).get(_replica)
        if replica is not None:
            coro = self._stepping(replica, coro)
        return asyncio.Task(coro, loop=loop, context=context)

    def _park(self, replica: str) -> asyncio.Future[None]:
        parked = asyncio.get_running_loop().create_future()
        self._parked.setdefault(replica, []).append(parked)
        self.stopped_steps += 1
        return parked

    @types.coroutine
    def _stepping(self, replica: str, coro: Coroutine[Any, Any, Any]) -> Generator[Any, None, Any]:
        """``coro``, stepped only while ``replica`` is not frozen."""
        error: BaseException | None = None
        while True:
            while replica in self.frozen:
                try:
                    yield from self._park(replica)
                except asyncio.CancelledError as exc:  # delivered at the thaw
                    error = exc
            try:
                if error is not None:
                    error, thrown = None, error
                    waiting = coro.throw(thrown)
                else:
                    waiting = coro.send(None)
            except StopIteration as stop:
                return stop.value
            try:
                yield waiting
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                error = exc


def cut_off(api: Any, monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Make every request through ``api`` (a kubernetes_asyncio ApiClient) wait while the
    returned event is clear (it starts set): what a process that cannot reach the API
    server looks like to the others."""
    thawed = asyncio.Event()
    thawed.set()
    call_api = api.call_api

    async def gated(*args: Any, **kwargs: Any) -> Any:
        await thawed.wait()
        return await call_api(*args, **kwargs)

    monkeypatch.setattr(api, "call_api", gated)
    return thawed

"""A deterministic event loop on virtual time, with nodes that run at their own clock rate
and can be frozen: the ground the simulation runs on.

:class:`VirtualLoop` is a selector event loop whose clock moves only when every task waits:
when nothing is ready to run, time jumps to the next timer. Nothing real decides the order
in which things happen:

* no real I/O: the simulation connects its clients to KubeSim in memory
  (:mod:`~aioinformer.testing._memory_network`), so every byte is a callback in the loop's
  FIFO order;
* no threads: :meth:`VirtualLoop.run_in_executor` runs the function at once, inline (a DNS
  lookup or a proxy lookup blocks the loop for its duration, and no virtual time passes);
* no memory addresses: every future and task the loop makes hashes by its serial number
  (asyncio's ``TaskGroup`` and ``wait`` keep tasks and futures in sets, and a set of objects
  that hash by address iterates in an order that changes from run to run);
* the global :mod:`random` generator is the caller's to seed (the simulation does).

A :class:`Node` is one replica ("process") of the simulated cluster. Whatever runs in a
context where :func:`current_node` is that node (tasks created inside
``with loop.on(node):`` and every task they create, callbacks scheduled from them) sees the
node's clock: :meth:`VirtualLoop.time` answers ``node.offset + node.rate * t`` for the
virtual time ``t``, and a timer set for a node's time fires when the node's clock reaches it
(so ``asyncio.sleep(1)`` on a node whose clock runs 10% fast takes 0.91 virtual seconds, as
on a host whose clock runs fast). A frozen node (:meth:`Node.freeze`) takes no step, as a
process under SIGSTOP: each of its callbacks (a task's next step, a timer's effect) is held
back when it would run and released in order when it thaws; its clock moves on meanwhile,
and the other nodes and the server keep running.

``loop.time()`` outside any node is the virtual time itself: the API server's clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import selectors
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["Deadlock", "Node", "Runaway", "VirtualLoop", "current_node"]

_T = TypeVar("_T")

_node: contextvars.ContextVar[Node | None] = contextvars.ContextVar("simulation_node", default=None)


def current_node() -> Node | None:
    """The node the running code belongs to (None: the server, or the simulation itself)."""
    return _node.get()


class Deadlock(RuntimeError):
    """Every task waits, no timer is due and nothing can arrive: the loop would wait for ever."""


class Runaway(RuntimeError):
    """The loop took more steps than its budget (:attr:`VirtualLoop.max_steps`): something
    runs without ever waiting for time to pass (a busy loop), so virtual time would never
    reach the end of the run."""


class Node:
    """One replica's clock and run state (see the module docstring).

    Args:
        name: what reports call it.
        rate: how fast its clock runs against virtual time (1.0: exactly).
        offset: its clock's reading at virtual time 0 (monotonic clocks of two processes
            have different origins).
    """

    def __init__(self, name: str, *, rate: float = 1.0, offset: float = 0.0) -> None:
        if rate <= 0:
            raise ValueError(f"a clock rate must be positive, not {rate}")
        self.name = name
        self.rate = rate
        self.offset = offset
        self.frozen = False
        """Whether it is frozen now."""
        self.held_steps = 0
        """Callbacks held back by freezes so far (a freeze that held nothing tested nothing)."""
        self._held: list[asyncio.Handle] = []
        self._loop: VirtualLoop | None = None

    def __repr__(self) -> str:
        return f"<Node {self.name} rate={self.rate:g}{' frozen' if self.frozen else ''}>"

    def local(self, t: float) -> float:
        """Its clock's reading at virtual time ``t``."""
        return self.offset + self.rate * t

    def virtual(self, local: float) -> float:
        """The virtual time at which its clock reads ``local``."""
        return (local - self.offset) / self.rate

    def freeze(self) -> None:
        """Stop every task of the node at its next step (see the module docstring)."""
        self.frozen = True

    def thaw(self) -> None:
        """Let it run again: what it held back runs first, in the order it was held."""
        self.frozen = False
        held, self._held = self._held, []
        loop = self._loop
        if loop is not None:
            for handle in held:
                loop.release(handle)

    def _hold(self, handle: asyncio.Handle) -> None:
        self.held_steps += 1
        self._held.append(handle)


_serials = itertools.count()


class _Future(asyncio.Future[Any]):
    """A future that hashes by its serial number, not its address."""

    __slots__ = ("_serial",)

    def __init__(self, *, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self._serial = next(_serials)

    def __hash__(self) -> int:
        return self._serial


class _Task(asyncio.Task[Any]):
    """A task that hashes by its serial number, not its address."""

    __slots__ = ("_serial",)

    def __init__(
        self,
        coro: Coroutine[Any, Any, Any],
        *,
        loop: asyncio.AbstractEventLoop,
        name: str | None,
        context: contextvars.Context | None,
    ) -> None:
        self._serial = next(_serials)
        super().__init__(coro, loop=loop, name=name, context=context)

    def __hash__(self) -> int:
        return self._serial


class VirtualLoop(asyncio.SelectorEventLoop):
    """The simulation's event loop (see the module docstring). Run it as any loop
    (``loop.run_until_complete(main())``); close it after.

    Args:
        start: the virtual time it starts at.
        max_steps: iterations of the loop (one round of ready callbacks each) after which
            it raises :class:`Runaway` from ``run_until_complete`` (None: no budget).
    """

    def __init__(self, *, start: float = 0.0, max_steps: int | None = None) -> None:
        super().__init__(selectors.DefaultSelector())
        self._now = start
        self.max_steps = max_steps
        self.steps = 0
        """Iterations run so far."""
        self.idle_jumps = 0
        """How many times time jumped to the next timer."""
        selector: selectors.BaseSelector = self._selector  # type: ignore[attr-defined]
        self._real_select = selector.select
        selector.select = self._select  # type: ignore[method-assign,assignment]

    # -- time -----------------------------------------------------------------------------------

    def time(self) -> float:
        node = _node.get()
        return self._now if node is None else node.local(self._now)

    @property
    def virtual_time(self) -> float:
        """The virtual time (the server's clock), wherever it is read from."""
        return self._now

    def _select(self, timeout: float | None) -> list[tuple[selectors.SelectorKey, int]]:
        ready: list[tuple[selectors.SelectorKey, int]] = self._real_select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise Deadlock(
                "every task waits, no timer is due and nothing can arrive: the simulation "
                "would wait for ever"
            )
        self.idle_jumps += 1
        self._now += timeout
        scheduled: list[asyncio.TimerHandle] = self._scheduled  # type: ignore[attr-defined]
        if scheduled and scheduled[0].when() > self._now and scheduled[0].when() - self._now < 1e-9:
            self._now = scheduled[0].when()  # (no float residue left to wait for)
        return []

    def _run_once(self) -> None:
        self.steps += 1
        if self.max_steps is not None and self.steps > self.max_steps:
            raise Runaway(
                f"{self.max_steps} loop iterations by virtual time {self._now:.3f}: something "
                "runs without waiting for time to pass"
            )
        super()._run_once()  # type: ignore[misc]

    # -- nodes ----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def on(self, node: Node) -> Iterator[None]:
        """Tasks created while the block runs (and theirs) belong to ``node``."""
        node._loop = self
        token = _node.set(node)
        try:
            yield
        finally:
            _node.reset(token)

    def node_context(self, node: Node | None) -> contextvars.Context:
        """A fresh context that belongs to ``node`` (None: to no node)."""
        ctx = contextvars.Context()
        if node is not None:
            node._loop = self
            ctx.run(_node.set, node)
        return ctx

    def call_soon(  # type: ignore[override]
        self,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        node = context.get(_node) if context is not None else _node.get()
        if node is not None and node.frozen:
            handle = asyncio.Handle(callback, args, self, context)
            node._hold(handle)
            return handle
        return super().call_soon(callback, *args, context=context)

    def call_at(  # type: ignore[override]
        self,
        when: float,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        node = context.get(_node) if context is not None else _node.get()
        if node is None:
            return super().call_at(when, callback, *args, context=context)
        return super().call_at(
            node.virtual(when), self._fire, node, callback, args, context=context
        )

    def _fire(self, node: Node, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        if node.frozen:
            node._hold(asyncio.Handle(callback, args, self, contextvars.copy_context()))
        else:
            callback(*args)

    def release(self, handle: asyncio.Handle) -> None:
        """Run a held-back callback soon (its node thawed)."""
        if not handle.cancelled():
            self._ready.append(handle)  # type: ignore[attr-defined]

    # -- determinism ----------------------------------------------------------------------------

    def create_future(self) -> asyncio.Future[Any]:
        return _Future(loop=self)

    def create_task(  # type: ignore[override]
        self,
        coro: Coroutine[Any, Any, _T],
        *,
        name: str | None = None,
        context: contextvars.Context | None = None,
    ) -> asyncio.Task[_T]:
        self._check_closed()  # type: ignore[attr-defined]
        return _Task(coro, loop=self, name=name, context=context)

    def run_in_executor(  # type: ignore[override]
        self, executor: Any, func: Callable[..., _T], *args: Any
    ) -> asyncio.Future[_T]:
        future: asyncio.Future[_T] = self.create_future()
        try:
            future.set_result(func(*args))
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            future.set_exception(exc)
        return future

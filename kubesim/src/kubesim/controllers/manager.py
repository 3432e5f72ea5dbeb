"""The kube-controller-manager controllers every cluster runs, inside KubeSim.

:class:`Controllers` runs the namespace controller (:mod:`kubesim.controllers.namespace`) and the
garbage collector (:mod:`kubesim.controllers.garbage_collector`). It listens to every commit of the
store (``Mvcc.on_commit``): the controllers note what a commit means for them and, when they have
work, a step is scheduled on the event loop (``call_soon``, never from inside the commit).
A step runs the controllers until neither has work left or ``max_rounds`` rounds have run
(then it yields to the loop and continues in the next iteration), so a cascade such as a
foreground deletion of a tree of owners completes within a few loop iterations, each one an
ordinary sequence of API writes with its watch events.

Before :meth:`Controllers.start` (a KubeSim not serving yet) work accumulates and is done at start;
after :meth:`Controllers.stop` nothing runs. A failure in a controller is logged and does not stop
the others or the server.
"""

from __future__ import annotations

import asyncio
import logging

from kubesim.controllers.garbage_collector import GarbageCollector
from kubesim.controllers.namespace import NamespaceController
from kubesim.registry.store import Api
from kubesim.storage.mvcc import Event

__all__ = ["Controllers"]

log = logging.getLogger("kubesim")


class Controllers:
    """See the module docstring."""

    def __init__(self, api: Api, *, max_rounds: int = 20) -> None:
        self.namespaces = NamespaceController(api)
        self.garbage_collector = GarbageCollector(api)
        self._max_rounds = max_rounds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.Handle | None = None
        self._quiet = asyncio.Event()  # set after a step that left nothing to do
        api.mvcc.on_commit.append(self._observe)

    @property
    def busy(self) -> bool:
        """Whether a controller has work it has not done yet."""
        return self.namespaces.pending or self.garbage_collector.pending

    def start(self) -> None:
        """Start in the running loop: learn the current state and do any pending work."""
        self._loop = asyncio.get_running_loop()
        self.garbage_collector.resync()
        self.namespaces.resync()
        self._schedule()

    def stop(self) -> None:
        """Stop: nothing runs after this (idempotent)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._loop = None
        self._quiet.set()

    async def idle(self) -> None:
        """Return once the controllers have nothing left to do (or are not running)."""
        while self._loop is not None and self.busy:
            self._quiet.clear()
            self._schedule()
            await self._quiet.wait()

    def _observe(self, type_name: str, ev: Event) -> None:
        namespaces = self.namespaces.observe(type_name, ev)
        collector = self.garbage_collector.observe(type_name, ev)
        if namespaces or collector:
            self._schedule()

    def _schedule(self) -> None:
        if self._loop is not None and self._handle is None and self.busy:
            self._handle = self._loop.call_soon(self._run)

    def _run(self) -> None:
        self._handle = None
        for _ in range(self._max_rounds):
            if not self.busy:
                self._quiet.set()
                return
            for controller in (self.garbage_collector, self.namespaces):
                try:
                    controller.step()
                except Exception:  # a bug in one controller must not stop the server
                    log.exception("KubeSim controller %s failed", type(controller).__name__)
        self._schedule()

"""Events expire: KubeSim's stand-in for the etcd lease kube-apiserver stores them under.

kube-apiserver writes every Event with a lease of ``--event-ttl`` (default 1h; etcd grants
``ttl + min(5% of ttl, 60 s)`` so that one lease can serve many Events; recorded in
``tests/kubesim/conformance/26a``)
and etcd deletes the key when the lease runs out: the Event disappears from both APIs'
views at once (it is one stored object) with a DELETED watch event, whatever finalizers it
has. Each write renews it.

:class:`EventExpiry` deletes each Event ``ttl`` seconds after its last write, measured on
the running event loop's clock (so tests can move it with a virtual clock), in write order.
Writes made before :meth:`EventExpiry.start` count from the start. It keeps one entry per
Event write and one timer, for the oldest entry.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from kubesim.storage.mvcc import DELETED, Event, Mvcc

__all__ = ["DEFAULT_EVENT_TTL", "EventExpiry"]

log = logging.getLogger("kubesim")

#: kube-apiserver's ``--event-ttl`` default, in seconds.
DEFAULT_EVENT_TTL = 3600.0
_EVENTS = "events"  # the storage of core/v1 and events.k8s.io/v1 Events
_EARLY = 0.001


class EventExpiry:
    """Deletes Events ``ttl`` seconds after their last write (see the module docstring);
    ``ttl`` None keeps them forever. Not thread-safe: KubeSim's event loop only."""

    def __init__(self, mvcc: Mvcc, ttl: float | None = DEFAULT_EVENT_TTL) -> None:
        if ttl is not None and not ttl > 0:
            raise ValueError(f"event_ttl must be a positive number of seconds, not {ttl!r}")
        self.ttl = ttl
        self._mvcc = mvcc
        # (written at on the loop clock, None before start; key; resourceVersion written)
        self._writes: deque[tuple[float | None, str, int]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.expired = 0
        if ttl is not None:
            mvcc.on_commit.append(self._observe)

    def start(self) -> None:
        """Start expiring on the running loop (writes so far count from now)."""
        self._loop = asyncio.get_running_loop()
        now = self._loop.time()
        self._writes = deque((now if t is None else t, k, rv) for t, k, rv in self._writes)
        self._arm()

    def stop(self) -> None:
        """Stop: no Event expires after this (idempotent)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._loop = None

    @property
    def pending(self) -> int:
        """Event writes whose expiry is still to come (renewed ones included)."""
        return len(self._writes)

    def _observe(self, type_name: str, ev: Event) -> None:
        if type_name != _EVENTS or ev.type == DELETED:
            return
        self._writes.append((self._loop.time() if self._loop else None, ev.key, ev.rv))
        if self._timer is None:
            self._arm()

    def _arm(self) -> None:
        if self._loop is None or not self._writes or self.ttl is None:
            return
        written = self._writes[0][0]
        assert written is not None
        self._timer = self._loop.call_at(written + self.ttl, self._expire)

    def _expire(self) -> None:
        self._timer = None
        assert self._loop is not None and self.ttl is not None
        # a timer may run up to the clock's resolution early: what is due by then is due
        deadline = self._loop.time() - self.ttl + _EARLY
        ts = self._mvcc.type_store(_EVENTS)
        while self._writes and (self._writes[0][0] or 0.0) <= deadline:
            _, key, rv = self._writes.popleft()
            cur = ts.get(key)
            if cur is not None and cur.rv == rv:  # not written again since
                ts.commit(key, None)
                self.expired += 1
                log.debug("event %s expired (event_ttl %ss)", key, self.ttl)
        self._arm()

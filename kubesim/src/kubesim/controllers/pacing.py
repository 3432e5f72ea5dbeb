"""The pacing of the cluster emulation's loop: token buckets for its rates and timers for
the work due later."""

from __future__ import annotations

import heapq
import time

__all__ = ["BURST", "TICK", "Timers", "TokenBucket"]

TICK = 0.02
"""Shortest time between two steps of the loop: events are handled in batches."""
BURST = 0.1
"""A token bucket's capacity, in seconds of its rate."""


class TokenBucket:
    """A token bucket: ``rate`` tokens a second, holding at most ``BURST`` s of them."""

    def __init__(self, rate: float) -> None:
        self.rate, self.tokens, self.last = rate, max(1.0, rate * BURST), time.monotonic()

    def refill(self, now: float) -> None:
        """Add the tokens earned since the last refill (``now`` is ``time.monotonic()``)."""
        cap = max(1.0, self.rate * BURST)
        self.tokens = min(cap, self.tokens + (now - self.last) * self.rate)
        self.last = now

    def wait(self) -> float:
        """Seconds until the bucket holds a small batch (at least one token)."""
        target = min(max(1.0, self.rate * TICK), max(1.0, self.rate * BURST))
        return max(0.0, (target - self.tokens) / self.rate)


class Timers:
    """Keys due at a time: ``due`` is the truth, ``heap`` the order (with stale entries)."""

    def __init__(self) -> None:
        self.due: dict[str, float] = {}
        self.heap: list[tuple[float, str]] = []

    def add(self, key: str, delay: float) -> None:
        """``key`` is due ``delay`` seconds from now (replacing an earlier due time)."""
        at = self.due[key] = time.monotonic() + delay
        heapq.heappush(self.heap, (at, key))

    def head(self) -> float | None:
        """When the first live entry is due (None if there is none)."""
        heap = self.heap
        while heap and self.due.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def pop(self) -> str:
        """Remove and return the first live key (call after :meth:`head`)."""
        key = heapq.heappop(self.heap)[1]
        del self.due[key]
        return key

"""A token bucket: a ceiling on how often something may happen, whatever drives it.

:class:`TokenBucket` holds up to ``burst`` tokens and gains ``rate`` per second; each
:meth:`TokenBucket.acquire` takes one, waiting first when none is left. Over any interval of
``t`` seconds at most ``burst + rate * t`` acquisitions complete, however they are called:
the watcher takes one before every request it sends, so no behaviour of a server or a proxy
(a loop of continue tokens, watches closed at once, relists in a row) can make an informer
send more than that. The bucket starts full, so normal bursts (the pages of one list) are
not slowed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from aioinformer._core.errors import ConfigError

__all__ = ["TokenBucket"]


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` saved (see the module docstring).

    Example::

        bucket = TokenBucket(rate=10.0, burst=20)
        await bucket.acquire()   # at once while tokens are left, then 0.1 s apart
    """

    __slots__ = ("_stamp", "_tokens", "burst", "clock", "rate", "waits")

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ConfigError(f"need rate > 0 and burst >= 1, got {rate} and {burst}")
        self.rate = rate
        """Tokens gained per second."""
        self.burst = burst
        """Tokens saved at most (the bucket starts full)."""
        self.clock = clock
        """The clock the rate is measured by (the one ``asyncio.sleep`` waits on)."""
        self.waits = 0
        """Acquisitions that had to wait for a token."""
        self._tokens = float(burst)
        self._stamp = clock()

    def _refill(self) -> None:
        now = self.clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    def delay(self) -> float:
        """Seconds until a token is available (0 when one is)."""
        self._refill()
        return 0.0 if self._tokens >= 1 else (1 - self._tokens) / self.rate

    async def acquire(self) -> None:
        """Take one token, waiting until there is one."""
        delay = self.delay()
        if delay > 0:
            self.waits += 1
            while delay > 0:
                await asyncio.sleep(delay)
                delay = self.delay()
        self._tokens -= 1

    def __repr__(self) -> str:
        return f"TokenBucket(rate={self.rate}, burst={self.burst}, tokens={self._tokens:.2f})"

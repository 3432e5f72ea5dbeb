"""Rate limiters for the work queue: how long a key waits before it is retried.

The semantics are client-go's ``util/workqueue/default_rate_limiters.go``:

* :class:`ItemExponentialFailureRateLimiter` -- per key: the n-th :meth:`~RateLimiter.when`
  since the last :meth:`~RateLimiter.forget` returns ``base_delay * 2**(n-1)``, capped at
  ``max_delay`` (5 ms, 10 ms, 20 ms, ... 1000 s with the defaults).
* :class:`BucketRateLimiter` -- overall: a token bucket of ``burst`` tokens refilled at
  ``qps`` per second (``golang.org/x/time/rate``). Each ``when`` reserves one token and
  returns how long until that token exists, so ``burst`` calls in a row return 0 and the
  next ones are spaced ``1/qps`` apart. It ignores the key; ``forget`` and
  ``num_requeues`` do nothing.
* :class:`MaxOfRateLimiter` -- asks every limiter (each records the attempt) and returns
  the longest delay.
* :func:`default_controller_rate_limiter` -- ``MaxOf(exponential, bucket)``: per-key
  backoff from 5 ms to 1000 s, and no more than 10 retries per second overall after a
  burst of 100.

Limiters are plain, synchronous objects for one event loop (no locks). ``when`` is not
idempotent: each call counts as one more failure (or consumes one token).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from aioinformer._core.errors import ConfigError

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]

K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[K_contra]):
    """Decides how long ``item`` waits before its next retry (client-go's RateLimiter).

    A limiter for ``Hashable`` keys serves a ``WorkQueue[str]`` too (the protocol is
    contravariant in the key type).
    """

    def when(self, item: K_contra) -> float:
        """Record one more failure of ``item``; return the seconds it should wait."""
        ...

    def forget(self, item: K_contra) -> None:
        """``item`` succeeded (or was given up on): clear its failure history."""
        ...

    def num_requeues(self, item: K_contra) -> int:
        """How many failures of ``item`` were recorded since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter(Generic[K_contra]):
    """Per-key exponential backoff: ``base_delay * 2**failures``, capped at ``max_delay``.

    Example::

        rl = ItemExponentialFailureRateLimiter(base_delay=0.005, max_delay=1000.0)
        [rl.when("ns/a") for _ in range(3)]   # [0.005, 0.01, 0.02]
        rl.when("ns/b")                       # 0.005: keys are independent
        rl.forget("ns/a"); rl.when("ns/a")    # 0.005 again

    Args:
        base_delay: the delay after the first failure, in seconds.
        max_delay: the cap on any delay, in seconds.

    Raises:
        ConfigError: unless ``0 <= base_delay <= max_delay``.
    """

    __slots__ = ("_failures", "base_delay", "max_delay")

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if not 0 <= base_delay <= max_delay:
            raise ConfigError(
                f"need 0 <= base_delay <= max_delay, got {base_delay} and {max_delay}"
            )
        self.base_delay = base_delay
        """The delay after the first failure, in seconds."""
        self.max_delay = max_delay
        """The cap on any delay, in seconds."""
        self._failures: dict[K_contra, int] = {}

    def when(self, item: K_contra) -> float:
        """Count a failure of ``item``; return ``base_delay * 2**(previous failures)``."""
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        try:
            delay = math.ldexp(self.base_delay, exp)
        except OverflowError:  # 2**exp beyond a float: long past the cap
            return self.max_delay
        return min(delay, self.max_delay)

    def forget(self, item: K_contra) -> None:
        """Clear ``item``'s failures: its next delay is ``base_delay``."""
        self._failures.pop(item, None)

    def num_requeues(self, item: K_contra) -> int:
        """Failures of ``item`` recorded since it was last forgotten."""
        return self._failures.get(item, 0)

    def __repr__(self) -> str:
        return (
            f"<ItemExponentialFailureRateLimiter base={self.base_delay} max={self.max_delay}"
            f" tracked={len(self._failures)}>"
        )


class BucketRateLimiter:
    """An overall token bucket: ``burst`` tokens, refilled at ``qps`` tokens per second.

    :meth:`when` reserves a token and returns how long until it is available; the debt is
    remembered, so calls made faster than ``qps`` get increasing delays (x/time/rate's
    ``Reserve().Delay()``). ``qps=math.inf`` never delays. ``clock`` returns seconds on a
    monotonic scale and is injectable for tests.

    Example::

        rl = BucketRateLimiter(qps=10.0, burst=2, clock=fake_clock)
        rl.when("a"), rl.when("b"), rl.when("c"), rl.when("d")   # 0.0, 0.0, 0.1, 0.2

    Args:
        qps: tokens added per second.
        burst: the bucket's capacity (and initial content).
        clock: seconds on a monotonic scale (default ``time.monotonic``).

    Raises:
        ConfigError: unless ``qps > 0`` and ``burst >= 1``.
    """

    __slots__ = ("_clock", "_last", "_tokens", "burst", "qps")

    def __init__(
        self,
        qps: float = 10.0,
        burst: int = 100,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not qps > 0 or burst < 1:
            raise ConfigError(f"need qps > 0 and burst >= 1, got qps={qps} and burst={burst}")
        self.qps = qps
        """Tokens added per second."""
        self.burst = burst
        """The bucket's capacity (and initial content)."""
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def when(self, item: object) -> float:
        """Reserve one token; return the seconds until it exists (0.0 if one is there)."""
        if math.isinf(self.qps):
            return 0.0
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = max(now, self._last)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: object) -> None:
        """Does nothing: the bucket is shared by all keys."""

    def num_requeues(self, item: object) -> int:
        """Always 0: the bucket does not track keys."""
        return 0

    def __repr__(self) -> str:
        return f"<BucketRateLimiter qps={self.qps} burst={self.burst} tokens={self._tokens:.2f}>"


class MaxOfRateLimiter(Generic[K_contra]):
    """Combines limiters: the delay is the longest any of them asks for.

    Every limiter sees every call (so each records the failure or spends its token);
    ``num_requeues`` is the largest count; ``forget`` forgets in all of them.

    Args:
        *limiters: the limiters to combine (at least one).
    """

    __slots__ = ("limiters",)

    def __init__(self, *limiters: RateLimiter[K_contra]) -> None:
        if not limiters:
            raise ConfigError("MaxOfRateLimiter needs at least one limiter")
        self.limiters: tuple[RateLimiter[K_contra], ...] = limiters
        """The combined limiters, in the order given."""

    def when(self, item: K_contra) -> float:
        """Ask every limiter; return the longest delay."""
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: K_contra) -> None:
        """Forget ``item`` in every limiter."""
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: K_contra) -> int:
        """The largest failure count any limiter reports for ``item``."""
        return max(limiter.num_requeues(item) for limiter in self.limiters)

    def __repr__(self) -> str:
        return f"<MaxOfRateLimiter {list(self.limiters)!r}>"


def default_controller_rate_limiter(
    *,
    base_delay: float = 0.005,
    max_delay: float = 1000.0,
    qps: float = 10.0,
    burst: int = 100,
    clock: Callable[[], float] = time.monotonic,
) -> MaxOfRateLimiter[Hashable]:
    """client-go's ``DefaultControllerRateLimiter``: per-key exponential backoff
    (``base_delay`` doubling to ``max_delay``) combined with an overall token bucket
    (``qps`` after a burst of ``burst``). Every part is configurable.

    Args:
        base_delay: a key's delay after its first failure, in seconds.
        max_delay: the cap on a key's delay, in seconds.
        qps: retries per second allowed overall, once the burst is spent.
        burst: retries allowed at once.
        clock: the bucket's clock (see :class:`BucketRateLimiter`).
    """
    return MaxOfRateLimiter[Hashable](
        ItemExponentialFailureRateLimiter(base_delay, max_delay),
        BucketRateLimiter(qps, burst, clock=clock),
    )

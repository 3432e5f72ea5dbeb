"""Rate limiters: exponential growth and cap, token bucket pacing, MaxOf, forget."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer._core.errors import ConfigError
from aioinformer._runtime.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from tests.support import FakeClock, FixedLimiter


def test_exponential_doubles_per_item_up_to_the_cap() -> None:
    rl = ItemExponentialFailureRateLimiter[str](base_delay=0.005, max_delay=0.1)
    assert [rl.when("a") for _ in range(7)] == [0.005, 0.01, 0.02, 0.04, 0.08, 0.1, 0.1]
    assert rl.num_requeues("a") == 7
    assert rl.when("b") == 0.005  # independent per item
    assert rl.num_requeues("b") == 1


def test_exponential_forget_resets_to_base() -> None:
    rl = ItemExponentialFailureRateLimiter[str](base_delay=1.0, max_delay=100.0)
    rl.when("a")
    rl.when("a")
    rl.when("b")
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 1.0
    assert rl.when("b") == 2.0  # untouched
    rl.forget("never-seen")  # no error


def test_exponential_defaults_are_client_go() -> None:
    rl = ItemExponentialFailureRateLimiter[str]()
    assert (rl.base_delay, rl.max_delay) == (0.005, 1000.0)


def test_exponential_huge_failure_count_stays_at_cap() -> None:
    rl = ItemExponentialFailureRateLimiter[str](base_delay=0.005, max_delay=1000.0)
    delays = [rl.when("a") for _ in range(2000)]  # 2**1999 overflows a float
    assert delays[-1] == 1000.0
    assert max(delays) == 1000.0
    assert rl.num_requeues("a") == 2000


@given(
    base=st.floats(min_value=1e-6, max_value=10.0),
    factor=st.floats(min_value=1.0, max_value=1e6),
    n=st.integers(min_value=1, max_value=80),
)
def test_exponential_property(base: float, factor: float, n: int) -> None:
    cap = base * factor
    rl = ItemExponentialFailureRateLimiter[int](base_delay=base, max_delay=cap)
    delays = [rl.when(1) for _ in range(n)]
    assert delays[0] == min(base, cap)
    for prev, cur in itertools.pairwise(delays):
        assert cur == min(prev * 2, cap)
    rl.forget(1)
    assert rl.when(1) == base


@pytest.mark.parametrize(("base", "cap"), [(-1.0, 1.0), (2.0, 1.0)])
def test_exponential_rejects_bad_config(base: float, cap: float) -> None:
    with pytest.raises(ConfigError):
        ItemExponentialFailureRateLimiter[str](base_delay=base, max_delay=cap)


def test_bucket_burst_then_qps_pacing() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(qps=10.0, burst=3, clock=clock)
    assert [rl.when(i) for i in range(3)] == [0.0, 0.0, 0.0]  # the burst
    # Then each reservation waits one more 1/qps (the debt is remembered).
    assert [rl.when(i) for i in range(3)] == pytest.approx([0.1, 0.2, 0.3])
    clock.now += 0.3  # the debt is paid, the bucket is empty
    assert rl.when("x") == pytest.approx(0.1)
    clock.now += 10.0  # refills, but never beyond the burst
    assert [rl.when(i) for i in range(3)] == [0.0, 0.0, 0.0]
    assert rl.when("y") == pytest.approx(0.1)


def test_bucket_partial_refill() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(qps=4.0, burst=1, clock=clock)
    assert rl.when("a") == 0.0
    clock.now += 0.125  # half a token back
    assert rl.when("a") == pytest.approx(0.125)


def test_bucket_ignores_keys() -> None:
    rl = BucketRateLimiter(qps=1.0, burst=1, clock=FakeClock())
    rl.when("a")
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("b") == pytest.approx(1.0)  # the token "a" spent is not given back


def test_bucket_infinite_qps_never_waits() -> None:
    rl = BucketRateLimiter(qps=math.inf, burst=1, clock=FakeClock())
    assert {rl.when(i) for i in range(100)} == {0.0}


def test_bucket_clock_going_backwards_does_not_mint_tokens() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(qps=1.0, burst=1, clock=clock)
    rl.when("a")
    clock.now -= 5.0
    assert rl.when("a") == pytest.approx(1.0)


@pytest.mark.parametrize(("qps", "burst"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_bucket_rejects_bad_config(qps: float, burst: int) -> None:
    with pytest.raises(ConfigError):
        BucketRateLimiter(qps=qps, burst=burst)


def test_max_of_takes_the_max_and_asks_everyone() -> None:
    a, b, c = (
        FixedLimiter(0.5, requeues=1),
        FixedLimiter(2.0, requeues=7),
        FixedLimiter(1.0, requeues=3),
    )
    rl = MaxOfRateLimiter[Hashable](a, b, c)
    assert rl.when("k") == 2.0
    assert a.asked == b.asked == c.asked == ["k"]
    assert rl.num_requeues("k") == 7
    rl.forget("k")
    assert a.forgotten == b.forgotten == c.forgotten == ["k"]


def test_max_of_needs_a_limiter() -> None:
    with pytest.raises(ConfigError):
        MaxOfRateLimiter[str]()


def test_default_controller_rate_limiter_combines_backoff_and_bucket() -> None:
    rl = default_controller_rate_limiter(base_delay=0.01, max_delay=0.04, qps=1e9, burst=1000)
    assert [rl.when("a") for _ in range(4)] == [0.01, 0.02, 0.04, 0.04]
    assert rl.num_requeues("a") == 4
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.01


def test_default_controller_rate_limiter_bucket_dominates_when_exhausted() -> None:
    rl = default_controller_rate_limiter(base_delay=0.001, max_delay=1.0, qps=1e-6, burst=1)
    assert rl.when("a") == 0.001  # the token was there; the backoff decides
    # No token left: the bucket's wait (about 1e6 s) beats b's 1 ms backoff.
    assert rl.when("b") > 1000.0


def test_default_controller_rate_limiter_defaults() -> None:
    rl = default_controller_rate_limiter()
    exp, bucket = rl.limiters
    assert isinstance(exp, ItemExponentialFailureRateLimiter)
    assert (exp.base_delay, exp.max_delay) == (0.005, 1000.0)
    assert isinstance(bucket, BucketRateLimiter)
    assert (bucket.qps, bucket.burst) == (10.0, 100)


def test_limiters_satisfy_the_protocol() -> None:
    limiters: list[RateLimiter[str]] = [
        ItemExponentialFailureRateLimiter[str](),
        BucketRateLimiter(),
        MaxOfRateLimiter[str](BucketRateLimiter()),
        default_controller_rate_limiter(),  # RateLimiter[Hashable] serves str keys
        FixedLimiter(0.0),
    ]
    assert all(isinstance(limiter.when("a"), float) for limiter in limiters)

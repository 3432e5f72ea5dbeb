"""Backoff: growth, cap, jitter bounds, reset after a healthy period."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer._core.backoff import Backoff
from aioinformer._core.errors import ConfigError


def test_defaults_are_client_go_reflector_policy() -> None:
    b = Backoff()
    assert (b.initial, b.maximum, b.factor, b.jitter, b.reset_after) == (0.8, 30.0, 2.0, 1.0, 120.0)


def test_doubles_from_initial_to_the_cap_without_jitter() -> None:
    b = Backoff(jitter=0.0)
    delays = [b.next_delay() for _ in range(9)]
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0])
    assert b.current == 30.0


def test_jitter_adds_up_to_jitter_times_the_base() -> None:
    lo = Backoff(jitter=1.0, rng=lambda: 0.0)
    hi = Backoff(jitter=1.0, rng=lambda: 0.999999)
    assert lo.next_delay() == pytest.approx(0.8)
    assert hi.next_delay() == pytest.approx(1.6, rel=1e-5)
    half = Backoff(jitter=0.5, rng=lambda: 0.5)
    assert half.next_delay() == pytest.approx(0.8 * 1.25)


@given(
    st.floats(0.01, 5.0),
    st.floats(1.0, 4.0),
    st.floats(0.0, 2.0),
    st.integers(1, 40),
    st.integers(0, 2**32 - 1),
)
def test_every_delay_lies_within_base_and_base_times_one_plus_jitter(
    initial: float, factor: float, jitter: float, n: int, seed: int
) -> None:
    rnd = random.Random(seed)
    b = Backoff(initial=initial, maximum=initial * 20, factor=factor, jitter=jitter, rng=rnd.random)
    base = initial
    for _ in range(n):
        d = b.next_delay()
        assert base <= d <= base * (1 + jitter) + 1e-9
        assert d <= b.maximum * (1 + jitter) + 1e-9
        base = min(base * factor, b.maximum)


def test_reset_and_note_healthy() -> None:
    b = Backoff(jitter=0.0, reset_after=120.0)
    for _ in range(5):
        b.next_delay()
    assert b.current == pytest.approx(25.6)
    b.note_healthy(119.9)  # not long enough: keeps growing
    assert b.next_delay() == pytest.approx(25.6)
    b.note_healthy(120.0)
    assert b.next_delay() == pytest.approx(0.8)
    b.next_delay()
    b.reset()
    assert b.current == pytest.approx(0.8)


@pytest.mark.parametrize(
    "kwargs",
    [{"initial": 0}, {"initial": 5, "maximum": 1}, {"factor": 0.5}, {"jitter": -1}],
)
def test_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        Backoff(**kwargs)  # type: ignore[arg-type]

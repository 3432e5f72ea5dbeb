"""Expectations: unmet creations/deletions hold an owner back until observed or expired."""

from __future__ import annotations

from aioinformer._runtime.expectations import Expectations
from tests.support import FakeClock


def test_creations_and_deletions_must_be_observed() -> None:
    e = Expectations()
    assert e.satisfied("ns/a")
    e.expect_creations("ns/a", 2)
    e.expect_deletions("ns/a", ["ns/a-9"])
    assert not e.satisfied("ns/a") and e.pending("ns/a") == (2, 1)
    e.creation_observed("ns/a")
    e.creation_observed("ns/a")
    assert not e.satisfied("ns/a")
    e.deletion_observed("ns/a", "ns/a-8")  # not expected: no effect
    assert e.pending("ns/a") == (0, 1)
    e.deletion_observed("ns/a", "ns/a-9")
    assert e.satisfied("ns/a") and e.pending("ns/a") == (0, 0)


def test_observations_without_expectations_are_harmless() -> None:
    e = Expectations()
    e.creation_observed("ns/a")
    e.deletion_observed("ns/a", "x")
    assert e.satisfied("ns/a")
    e.expect_creations("ns/a", 1)
    assert not e.satisfied("ns/a")


def test_expectations_expire_after_ttl() -> None:
    clock = FakeClock()
    e = Expectations(ttl=10, clock=clock)
    e.expect_creations("ns/a", 1)
    clock.now = 9
    assert not e.satisfied("ns/a")
    clock.now = 11
    assert e.satisfied("ns/a")
    e.expect_creations("ns/a", 1)  # a fresh expectation after expiry starts over
    assert e.pending("ns/a") == (1, 0)


def test_forget() -> None:
    e = Expectations()
    e.expect_creations("ns/a", 3)
    e.forget("ns/a")
    assert e.satisfied("ns/a")


def test_new_expectations_restart_the_clock_and_zero_is_nothing() -> None:
    clock = FakeClock()
    e = Expectations(ttl=10, clock=clock)
    e.expect_creations("ns/a", 1)
    clock.now = 8
    e.expect_creations("ns/a", 1)
    clock.now = 12
    assert not e.satisfied("ns/a"), "the second expectation is only 4 s old"
    e.expect_creations("ns/b", 0)
    e.expect_deletions("ns/b", [])
    assert e.satisfied("ns/b") and e.pending("ns/b") == (0, 0)


def test_an_object_reported_twice_by_uid_counts_once() -> None:
    """The informer's ADD and the writer that found the object gone may both report one
    creation: with its uid it is counted once, whichever comes first, even when the
    second report comes after the owner's expectations were settled and raised again."""
    clock = FakeClock()
    e = Expectations(ttl=10, clock=clock)
    e.expect_creations("ns/a", 1)
    e.creation_observed("ns/a", "uid-1")  # the writer: gone unseen
    assert e.satisfied("ns/a")
    e.expect_creations("ns/a", 1)  # the next reconcile creates again
    e.creation_observed("ns/a", "uid-1")  # the informer's late ADD of the first one
    assert e.pending("ns/a") == (1, 0)
    e.creation_observed("ns/a", "uid-2")
    assert e.satisfied("ns/a")
    clock.now = 11  # remembered for the ttl only
    e.expect_creations("ns/a", 1)
    e.creation_observed("ns/a", "uid-1")
    assert e.satisfied("ns/a")
    e.expect_creations("ns/a", 1)
    e.creation_observed("ns/a", "uid-1")
    e.forget("ns/a")  # forgetting the owner forgets its uids too
    e.expect_creations("ns/a", 1)
    e.creation_observed("ns/a", "uid-1")
    assert e.satisfied("ns/a")

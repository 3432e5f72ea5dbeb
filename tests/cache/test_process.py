"""ProcessSettings (aioinformer/_cache/process.py): its validation, SwitchInterval (the
interpreter's switch interval lowered while at least one pipeline thread that asked for it
runs, put back after the last, and an application's own setting left as it is), and
raise_priority (a thread under SCHED_RR where the kernel grants it; one WARNING per process
where it does not). The threads' side of it: test_pipeline.py."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
from collections.abc import Iterator

import pytest

from aioinformer import ConfigError, ProcessSettings
from aioinformer._cache import process
from aioinformer._cache.process import DEFAULT_SWITCH_INTERVAL, SwitchInterval, raise_priority
from tests.support import LINUX_SCHEDULING, kernel_grants_rr, policy_of

HIGH = 0.005  # the interpreter's default


@pytest.fixture(autouse=True)
def interpreter() -> Iterator[None]:
    """Each test starts at the interpreter's default interval and puts back what it found."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(HIGH)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_the_defaults_and_what_is_refused() -> None:
    settings = ProcessSettings()
    assert (settings.switch_interval, settings.release_memory) == (DEFAULT_SWITCH_INTERVAL, True)
    assert ProcessSettings(switch_interval=None).switch_interval is None
    for bad in (0.0, -0.001):
        with pytest.raises(ConfigError, match="switch_interval must be positive"):
            ProcessSettings(switch_interval=bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.release_memory = False  # type: ignore[misc]
    assert ProcessSettings(release_memory=False) == ProcessSettings(release_memory=False)
    assert settings.pipeline_priority is None
    assert ProcessSettings(pipeline_priority=1).pipeline_priority == 1
    assert ProcessSettings(pipeline_priority=99).pipeline_priority == 99
    for bad_priority in (0, 100, -1, 1.0, True, "1"):
        with pytest.raises(ConfigError, match="pipeline_priority must be an int from 1 to 99"):
            ProcessSettings(pipeline_priority=bad_priority)  # type: ignore[arg-type]


def test_holders_nest_the_lowest_wins_and_the_last_one_puts_it_back() -> None:
    switch = SwitchInterval()
    switch.enter(0.001)
    assert sys.getswitchinterval() == pytest.approx(0.001)
    switch.enter(0.0002)  # a second thread asks for less: the lowest wins
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    switch.enter(0.003)  # more than now: nothing changes
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    switch.leave(0.0002)
    assert sys.getswitchinterval() == pytest.approx(0.001)  # the lowest still asked for
    switch.leave(0.001)
    assert sys.getswitchinterval() == pytest.approx(0.003)  # one still runs: its own
    switch.leave(0.003)
    assert sys.getswitchinterval() == HIGH  # the last one out puts it back


def test_none_asks_for_nothing() -> None:
    switch = SwitchInterval()
    switch.enter(None)
    assert sys.getswitchinterval() == HIGH
    switch.enter(0.001)
    switch.leave(None)
    assert sys.getswitchinterval() == pytest.approx(0.001)
    switch.leave(0.001)
    assert sys.getswitchinterval() == HIGH


def test_an_applications_lower_interval_is_left_alone() -> None:
    switch = SwitchInterval()
    sys.setswitchinterval(0.0001)
    switch.enter(0.0002)
    assert sys.getswitchinterval() == pytest.approx(0.0001)
    switch.leave(0.0002)
    assert sys.getswitchinterval() == pytest.approx(0.0001)


def test_an_interval_the_application_sets_meanwhile_is_kept() -> None:
    switch = SwitchInterval()
    switch.enter(0.0002)
    sys.setswitchinterval(0.01)  # the application's, while a thread runs
    switch.enter(0.0002)  # a second thread does not lower it over the application's
    assert sys.getswitchinterval() == pytest.approx(0.01)
    switch.leave(0.0002)
    switch.leave(0.0002)
    assert sys.getswitchinterval() == pytest.approx(0.01)  # not "put back" to 0.005
    switch.enter(0.0002)  # a new round starts from the application's value
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    switch.leave(0.0002)
    assert sys.getswitchinterval() == pytest.approx(0.01)


def in_a_thread(priority: int | None) -> tuple[int | None, int, int]:
    """raise_priority(priority) in a new thread: what it returned, then that thread's
    policy and the policy of a thread it started afterwards."""
    out: list[int | None] = []

    def child() -> None:
        out.append(policy_of(threading.get_native_id()))

    def main() -> None:
        out.append(raise_priority(priority, "test-thread"))
        out.append(policy_of(threading.get_native_id()))
        started = threading.Thread(target=child)
        started.start()
        started.join()

    thread = threading.Thread(target=main)
    thread.start()
    thread.join()
    granted, policy, child_policy = out
    assert isinstance(policy, int) and isinstance(child_policy, int)
    return granted, policy, child_policy


@pytest.fixture
def fresh_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The once-per-process WARNING not given yet."""
    monkeypatch.setattr(process, "_refused", False)


@LINUX_SCHEDULING
def test_a_granted_priority_puts_the_thread_under_sched_rr_but_not_what_it_starts(
    fresh_refusal: None, caplog: pytest.LogCaptureFixture
) -> None:
    assert in_a_thread(None) == (None, os.SCHED_OTHER, os.SCHED_OTHER)
    granted, policy, child_policy = in_a_thread(3)
    if kernel_grants_rr():
        assert (granted, policy, child_policy) == (3, os.SCHED_RR, os.SCHED_OTHER)
        assert not caplog.records
    else:  # (no CAP_SYS_NICE here: the refusal, as the next test makes it)
        assert (granted, policy) == (None, os.SCHED_OTHER)
        assert "cannot run at real-time priority 3" in caplog.text


@LINUX_SCHEDULING
def test_a_refusal_is_one_warning_per_process_and_the_normal_policy(
    fresh_refusal: None, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    caplog.set_level(logging.WARNING, "aioinformer")
    assert in_a_thread(5) == (None, os.SCHED_OTHER, os.SCHED_OTHER)
    assert in_a_thread(5)[0] is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, caplog.text
    message = warnings[0].getMessage()
    assert "test-thread: cannot run at real-time priority 5 (Operation not permitted" in message
    assert "CAP_SYS_NICE or RLIMIT_RTPRIO >= 5" in message

    monkeypatch.delattr(os, "sched_setscheduler")  # a platform without the call
    monkeypatch.setattr(process, "_refused", False)
    assert in_a_thread(5)[0] is None
    assert "cannot run at real-time priority 5" in caplog.records[-1].getMessage()

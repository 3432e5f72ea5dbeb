"""ProcessSettings (aioinformer/_cache/process.py): its validation, and SwitchInterval, the
interpreter's switch interval lowered while at least one pipeline thread that asked for it
runs, put back after the last, and an application's own setting left as it is. The
threads' side of it: test_pipeline.py."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator

import pytest

from aioinformer import ConfigError, ProcessSettings
from aioinformer._cache.process import DEFAULT_SWITCH_INTERVAL, SwitchInterval

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

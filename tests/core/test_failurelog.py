"""FailureLog: the first failure of each kind with its traceback, then at most one summary
line per kind per interval, every failure counted; bounded kinds; lazy arguments."""

from __future__ import annotations

import logging

import pytest

from aioinformer._core.failurelog import INTERVAL, MAX_KINDS, FailureLog, Lazy
from tests.support import FakeClock

LOGGER = "test.failurelog"  # (not under "aioinformer.": its loggers carry the filter)


def records(caplog: pytest.LogCaptureFixture) -> list[tuple[str, bool]]:
    return [(r.getMessage(), r.exc_info is not None) for r in caplog.records]


def test_the_first_of_a_kind_is_logged_in_full_then_summarized_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    failures = FailureLog(logging.getLogger(LOGGER), clock=clock)
    caplog.set_level(logging.ERROR, logger=LOGGER)
    for i in range(1000):
        failures.failed(ValueError(i), "object %d failed", i)
    clock.advance(INTERVAL - 0.5)
    failures.failed(ValueError(), "object %d failed", 1000)  # not yet
    clock.advance(0.5)
    failures.failed(ValueError(), "object %d failed", 1001)
    failures.failed(KeyError(), "object %d failed", 1002)  # another kind: in full
    assert records(caplog) == [
        ("object 0 failed [1 so far]", True),
        ("object 1001 failed [1002 so far; 1001 of this kind since its last line 10 s ago]", False),
        ("object 1002 failed [1003 so far]", True),
    ]
    assert failures.count == 1003


def test_kinds_are_bounded_and_named_kinds_replace_the_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures = FailureLog(logging.getLogger(LOGGER), logging.WARNING, clock=FakeClock())
    caplog.set_level(logging.WARNING, logger=LOGGER)
    kinds = [type(f"Error{i}", (Exception,), {}) for i in range(MAX_KINDS + 5)]
    for kind in kinds:
        failures.failed(kind(), "%s", kind.__name__)
    assert len(caplog.records) == MAX_KINDS + 1  # the kinds past the bound share one line
    caplog.clear()
    failures = FailureLog(logging.getLogger(LOGGER), logging.WARNING, clock=FakeClock())
    for kind in ("watch line", "list item", "watch line"):
        failures.failed(None, "bad %s", kind, kind=kind, traceback=False)
    assert records(caplog) == [
        ("bad watch line [1 so far]", False),
        ("bad list item [2 so far]", False),
    ]


def test_a_lazy_argument_is_made_only_for_a_written_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    made: list[int] = []

    def describe() -> str:
        made.append(1)
        return "described"

    failures = FailureLog(logging.getLogger(LOGGER), clock=FakeClock())
    caplog.set_level(logging.ERROR, logger=LOGGER)
    for _ in range(100):
        failures.failed(None, "bad (%s)", Lazy(describe))
    assert [r.getMessage() for r in caplog.records] == ["bad (described) [1 so far]"]
    assert len(made) == 1

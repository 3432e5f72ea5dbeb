"""Go's time parsing errors, the apiserver's time formats and HumanDuration."""

from __future__ import annotations

import datetime

import pytest

from kubesim.encoding.gotime import (
    age,
    format_micro_time,
    format_time,
    human_duration,
    parse_rfc3339,
)
from kubesim.errors import GoTimeError

LAYOUT = '"2006-01-02T15:04:05Z07:00"'


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "not-a-time",
            f'parsing time "not-a-time" as {LAYOUT}: cannot parse "not-a-time" as "2006"',
        ),
        ("", f'parsing time "" as {LAYOUT}: cannot parse "" as "2006"'),
        (
            "2024/01/01T00:00:00Z",
            f'parsing time "2024/01/01T00:00:00Z" as {LAYOUT}: cannot parse "/01/01T00:00:00Z" as "-"',
        ),
        (
            "2024-1-01T00:00:00Z",
            f'parsing time "2024-1-01T00:00:00Z" as {LAYOUT}: cannot parse "1-01T00:00:00Z" as "01"',
        ),
        ("2024-13-01T00:00:00Z", 'parsing time "2024-13-01T00:00:00Z": month out of range'),
        ("2024-02-30T00:00:00Z", 'parsing time "2024-02-30T00:00:00Z": day out of range'),
        ("2024-01-01T25:00:00Z", 'parsing time "2024-01-01T25:00:00Z": hour out of range'),
        ("2024-01-01", f'parsing time "2024-01-01" as {LAYOUT}: cannot parse "" as "T"'),
        (
            "2024-01-01T00:00:00",
            f'parsing time "2024-01-01T00:00:00" as {LAYOUT}: cannot parse "" as "Z07:00"',
        ),
        (
            "2024-01-01T00:00:00+0100",
            f'parsing time "2024-01-01T00:00:00+0100" as {LAYOUT}: cannot parse "+0100" as "Z07:00"',
        ),
        ("2024-01-01T00:00:00Zjunk", 'parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk"'),
    ],
)
def test_parse_errors_are_gos(value: str, message: str) -> None:
    with pytest.raises(GoTimeError) as info:
        parse_rfc3339(value)
    assert str(info.value) == message


def test_parse_and_format() -> None:
    t = parse_rfc3339("2024-02-29T23:30:00.123456789+02:00")
    assert format_time(t) == "2024-02-29T21:30:00Z"
    assert format_micro_time(t) == "2024-02-29T21:30:00.123456Z"
    assert (
        format_time(parse_rfc3339("2024-01-01T1:02:03Z")) == "2024-01-01T01:02:03Z"
    )  # Go is lenient
    assert parse_rfc3339("2024-01-01T00:00:00Z").tzinfo is not None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-0.5, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (197, "3m17s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 240, "5h4m"),
        (47 * 3600, "47h"),
        (3 * 86400 + 7200, "3d2h"),
        (8 * 86400, "8d"),
        (2 * 365 * 86400 + 3 * 86400, "2y3d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_age() -> None:
    now = datetime.datetime(2024, 1, 1, 0, 3, 17, tzinfo=datetime.UTC).timestamp()
    assert age("2024-01-01T00:00:00Z", now) == "3m17s"
    assert age(None, now) == age("", now) == age("garbage", now) == "<unknown>"

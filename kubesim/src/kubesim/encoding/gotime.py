"""Go's time semantics where KubeSim must match them byte for byte.

* :func:`parse_rfc3339` is ``time.Parse(time.RFC3339, s)`` (what ``metav1.Time`` and
  ``MicroTime`` decoding use), with Go's error texts: ``parsing time "x" as
  "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"``, ``...: month out of range``,
  ``...: extra text: "..."``. Go's parser is lenient where the layout allows it (a
  one-digit hour, any number of fractional digits).
* :func:`format_time` / :func:`format_micro_time` are how the apiserver writes them back:
  UTC, seconds (``2006-01-02T15:04:05Z``) or microseconds (``.000000Z``).
* :func:`human_duration` is ``duration.HumanDuration`` (``kubectl get``'s AGE) and
  :func:`age` the printers' ``translateTimestampSince`` (``<unknown>`` for no time).
"""

from __future__ import annotations

import calendar
import datetime

from kubesim.errors import GoTimeError

__all__ = [
    "age",
    "format_micro_time",
    "format_time",
    "human_duration",
    "parse_rfc3339",
]

RFC3339 = "2006-01-02T15:04:05Z07:00"
_UTC = datetime.UTC


def _quote(s: str) -> str:
    out = []
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(repr(ch)[1:-1])
    return '"' + "".join(out) + '"'


def _bad(value: str, layout_elem: str, value_elem: str) -> GoTimeError:
    return GoTimeError(
        f"parsing time {_quote(value)} as {_quote(RFC3339)}: cannot parse "
        f"{_quote(value_elem)} as {_quote(layout_elem)}"
    )


def _range(value: str, what: str) -> GoTimeError:
    return GoTimeError(f"parsing time {_quote(value)}: {what} out of range")


def _num(s: str, fixed: bool) -> tuple[int, str] | None:
    """Go's ``getnum``: one or two digits (two when ``fixed``)."""
    if not s[:1].isdigit():
        return None
    if not s[1:2].isdigit():
        return None if fixed else (int(s[0]), s[1:])
    return int(s[:2]), s[2:]


def parse_rfc3339(value: str) -> datetime.datetime:
    """``time.Parse(time.RFC3339, value)`` as an aware datetime (microsecond precision);
    raises :class:`GoTimeError` with Go's message."""
    rest = value
    if len(rest) < 4 or not rest[:4].isdigit():
        raise _bad(value, "2006", rest)
    year, rest = int(rest[:4]), rest[4:]
    fields: list[int] = []
    for lit, elem, fixed, what in (
        ("-", "01", True, "month"),
        ("-", "02", True, ""),
        ("T", "15", False, "hour"),
        (":", "04", True, "minute"),
        (":", "05", True, "second"),
    ):
        if not rest.startswith(lit):
            raise _bad(value, lit, rest)
        rest = rest[len(lit) :]
        got = _num(rest, fixed)
        if got is None:
            raise _bad(value, elem, rest)
        n, rest = got
        if what == "month" and not 1 <= n <= 12:
            raise _range(value, what)
        if n >= {"hour": 24, "minute": 60, "second": 60}.get(what, 100):
            raise _range(value, what)
        fields.append(n)
    micro = 0
    if len(rest) >= 2 and rest[0] in ".," and rest[1].isdigit():
        n = 1
        while n < len(rest) and rest[n].isdigit():
            n += 1
        micro = int((rest[1:n] + "000000")[:6])
        rest = rest[n:]
    if rest.startswith("Z"):
        offset, rest = 0, rest[1:]
    else:
        tz = rest
        if len(tz) < 6 or tz[3] != ":" or tz[0] not in "+-":
            raise _bad(value, "Z07:00", tz)
        hh, mm = _num(tz[1:3], True), _num(tz[4:6], True)
        if hh is None or mm is None:
            raise _bad(value, "Z07:00", tz)
        offset = (hh[0] * 60 + mm[0]) * 60 * (-1 if tz[0] == "-" else 1)
        rest = tz[6:]
    if rest:
        raise GoTimeError(f"parsing time {_quote(value)}: extra text: {_quote(rest)}")
    month, day, hour, minute, second = fields
    if not 1 <= day <= (calendar.monthrange(year, month)[1] if year >= 1 else 31):
        raise _range(value, "day")
    try:
        zone = datetime.timezone(datetime.timedelta(seconds=offset))
        return datetime.datetime(year, month, day, hour, minute, second, micro, zone)
    except (ValueError, OverflowError):
        raise _range(value, "year") from None


def format_time(t: datetime.datetime) -> str:
    """``metav1.Time``'s JSON form: UTC, whole seconds."""
    return t.astimezone(_UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(t: datetime.datetime) -> str:
    """``metav1.MicroTime``'s JSON form: UTC, six fractional digits."""
    return t.astimezone(_UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: ``59s``, ``3m17s``, ``5h4m``, ``3d2h``, ``2y3d``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(timestamp: str | None, now: float) -> str:
    """The age of an RFC 3339 timestamp at ``now`` (epoch seconds), ``<unknown>`` when
    there is none (or it does not parse)."""
    if not timestamp:
        return "<unknown>"
    try:
        then = parse_rfc3339(timestamp).timestamp()
    except GoTimeError:
        return "<unknown>"
    return human_duration(now - then)

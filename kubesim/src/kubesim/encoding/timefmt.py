"""Timestamps in the apiserver's formats."""

from __future__ import annotations

import time
from datetime import UTC, datetime

__all__ = ["now_micro", "now_rfc3339"]

_last: tuple[int, str] = (-1, "")


def now_rfc3339(offset_seconds: float = 0.0) -> str:
    """metav1.Time: RFC 3339 with whole seconds and ``Z``."""
    global _last
    second = int(time.time() + offset_seconds)
    if _last[0] != second:  # formatted once per second: every write stamps managedFields
        _last = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _last[1]


def now_micro() -> str:
    """metav1.MicroTime: RFC 3339 with exactly 6 fractional digits and ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

"""Timestamps in the apiserver's formats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["now_micro", "now_rfc3339"]


def now_rfc3339(offset_seconds: float = 0.0) -> str:
    """metav1.Time: RFC 3339 with whole seconds and ``Z``."""
    t = datetime.now(UTC) + timedelta(seconds=offset_seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    """metav1.MicroTime: RFC 3339 with exactly 6 fractional digits and ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

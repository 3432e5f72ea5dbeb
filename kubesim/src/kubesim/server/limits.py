"""The limits kube-apiserver puts on requests, and Go's integer parsing (etcd's on a stored
object: :mod:`kubesim.storage.request_size`).

* :data:`MAX_REQUEST_BYTES`: request bodies up to 3 MiB (``--max-request-bytes``; 413
  beyond, see :mod:`kubesim.server.bodies`);
* :func:`deep_recursion`: documents may nest 10000 levels (25d); code that walks them
  recursively runs inside this context, which lifts the interpreter's recursion limit for
  that one synchronous step and puts it back;
* :func:`parse_int64` is ``strconv.ParseInt(s, 10, 64)`` with its error texts, and
  :func:`watch_timeout` what a watch makes of ``timeoutSeconds`` (a Go duration: seconds
  times 10^9 in an int64, so a huge value wraps; zero or less ends the watch at once).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from kubesim.errors import KubeSimApiError

__all__ = [
    "MAX_REQUEST_BYTES",
    "deep_recursion",
    "parse_int64",
    "watch_timeout",
]

MAX_REQUEST_BYTES = 3 * 1024 * 1024
_FRAMES_PER_LEVEL = 4
_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = 1 << 63
#: the longest watch KubeSim keeps open (a Go time.Duration is at most ~292 years)
_LONGEST_WATCH = 10 * 365 * 24 * 3600.0


@contextmanager
def deep_recursion(depth: int) -> Iterator[None]:
    """Allow recursion ``depth`` levels deep (a few frames per level) while inside."""
    old = sys.getrecursionlimit()
    need = depth * _FRAMES_PER_LEVEL + old
    if depth <= 100 or need <= old:
        yield
        return
    sys.setrecursionlimit(need)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def parse_int64(text: str) -> int:
    """``strconv.ParseInt(text, 10, 64)``; ValueError with Go's message."""
    if not _INT.fullmatch(text):
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not -_INT64 <= value < _INT64:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def watch_timeout(text: str) -> float:
    """Seconds a watch asked for with ``timeoutSeconds=text`` runs: 400 for what is not an
    int64, 0.0 (end at once) when the nanosecond duration is zero or wraps negative, at
    most ten years otherwise."""
    try:
        seconds = parse_int64(text)
    except ValueError as exc:
        raise KubeSimApiError.bad_request(str(exc)) from None
    nanos = (seconds * 1_000_000_000 + _INT64) % (1 << 64) - _INT64
    if nanos <= 0:
        return 0.0
    return min(nanos / 1e9, _LONGEST_WATCH)

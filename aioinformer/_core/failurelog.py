"""One log policy for failures that repeat: user code (an event handler, a transform, an
index function, a reconcile, a publish listener) or a server that fails the same way on
every object must not write a line, let alone a traceback, per object.

A :class:`FailureLog` is one site's log (one handler subscription, one informer's
transform, one controller's reconciles, ...). The first failure of each exception type at
the site (or of each kind the site names) is logged in full, with its traceback. The later
ones of that kind are counted, and at most one line per ``interval`` (:data:`INTERVAL`,
10 s) summarizes them: the latest one's message, without a traceback, with how many there
were since the kind's previous line. Every message ends ``[N so far]``, N counting every
failure at the site (:attr:`FailureLog.count`, what the site's statistics report). At most
:data:`MAX_KINDS` (32) kinds are told apart per site (the rest share one summary), so
memory stays bounded.

Not thread-safe: each site's log is used by the one thread that runs the site's code.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

__all__ = ["INTERVAL", "MAX_KINDS", "FailureLog", "Lazy"]

INTERVAL = 10.0
"""Seconds between two lines of one kind of failure at one site."""
MAX_KINDS = 32
"""Kinds of failure told apart per site."""

_OTHERS = object()


class Lazy:
    """A log argument whose text ``describe()`` makes (once) only if the line is written."""

    __slots__ = ("_describe", "_text")

    def __init__(self, describe: Callable[[], str]) -> None:
        self._describe = describe
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            self._text = self._describe()
        return self._text


@dataclass(slots=True)
class _Kind:
    logged_at: float
    unlogged: int = 0


class FailureLog:
    """One site's failures, logged as the module docstring says."""

    def __init__(
        self,
        logger: logging.Logger,
        level: int = logging.ERROR,
        *,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.count = 0
        """Failures at this site."""
        self._logger = logger
        self._level = level
        self._interval = interval
        self._clock = clock
        self._types: dict[object, _Kind] = {}

    def failed(
        self,
        exc: BaseException | None,
        msg: str,
        *args: object,
        traceback: bool = True,
        kind: Hashable = None,
    ) -> None:
        """Count one failure; log it if it is the first of its kind, or summarize the
        kind's failures if its last line is ``interval`` old. ``msg % args`` describes
        this one; ``exc`` is what was raised (its traceback is logged with the first,
        unless ``traceback`` is False); its type is the failure's kind unless ``kind``
        names one."""
        self.count += 1
        kind_: object = kind if kind is not None else type(exc)
        if kind_ not in self._types and len(self._types) >= MAX_KINDS:
            kind_ = _OTHERS  # the kinds beyond the bound share one summary
        now = self._clock()
        seen = self._types.get(kind_)
        if seen is None:
            self._types[kind_] = _Kind(now)
            exc_info = exc if traceback else None
            self._logger.log(self._level, f"{msg} [%d so far]", *args, self.count,
                             exc_info=exc_info)  # fmt: skip
            return
        seen.unlogged += 1
        if now - seen.logged_at < self._interval:
            return
        self._logger.log(
            self._level,
            f"{msg} [%d so far; %d of this kind since its last line %.0f s ago]",
            *args,
            self.count,
            seen.unlogged,
            now - seen.logged_at,
        )
        seen.logged_at, seen.unlogged = now, 0

"""ProcessSettings: every effect aioinformer has beyond its own objects, in one place.

An informer factory (and the manager, which owns one) changes nothing of the process that
is not listed here. Each effect is on by default because the measurements in
bench/RESULTS.md need it, and each can be turned off:

==========================  ==========================================================
effect                      when, and how to turn it off
==========================  ==========================================================
switch interval             ``sys.setswitchinterval(switch_interval)`` while the
                            factory's pipeline thread runs (only when it is lower than
                            the interpreter's; put back when the thread ends, unless the
                            application changed it meanwhile). ``switch_interval=None``
                            leaves the interpreter's alone.
heap trimming               glibc's ``malloc_trim(0)`` after each sync or relist of an
                            informer, so RSS follows the cache's size, not the peak of
                            decoding the list. ``release_memory=False``.
pipeline thread             one daemon thread per factory (``pipeline="thread"``, the
                            default), with its own event loop (uvloop when the
                            application's loop is uvloop) and one HTTP session.
                            ``pipeline="loop"`` keeps everything on the caller's loop.
log redaction               a filter that removes known secrets from every record of the
                            ``aioinformer`` and ``kubernetes_asyncio`` loggers, installed
                            once per process when the first client is made. Not
                            optional: a token in a log line is a leak.
==========================  ==========================================================

Why the switch interval: CPython hands the GIL from a busy thread to a waiting one only
after the waiter saw no hand-over for a whole interval (5 ms by default), and a busy event
loop releases the GIL for an instant at every iteration, which counts as a hand-over. So a
caller's loop of readers doing steps shorter than the interval (index lookups, back to back)
keeps the pipeline thread waiting for as long as they run; at 0.2 ms any longer step lets it
in. Threads only switch more often while both want the GIL: an idle pipeline costs nothing.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass

from aioinformer._core.errors import ConfigError

__all__ = ["DEFAULT_SWITCH_INTERVAL", "ProcessSettings", "SwitchInterval"]

DEFAULT_SWITCH_INTERVAL = 0.0002
"""The switch interval (seconds) while a pipeline thread runs, by default."""


@dataclass(frozen=True, slots=True)
class ProcessSettings:
    """The process-wide effects of an informer factory (see the table above)."""

    switch_interval: float | None = DEFAULT_SWITCH_INTERVAL
    """Seconds: the interpreter's switch interval while the pipeline thread runs, when that
    is lower than the interpreter's own; None: never changed."""
    release_memory: bool = True
    """Return the heap's free memory to the OS after each sync or relist (glibc's
    ``malloc_trim``; nothing where the C library has none)."""

    def __post_init__(self) -> None:
        if self.switch_interval is not None and not self.switch_interval > 0:
            raise ConfigError(f"switch_interval must be positive, not {self.switch_interval}")


class SwitchInterval:
    """The interpreter's switch interval, lowered while at least one pipeline thread that
    asked for it runs (thread-safe; :meth:`enter` and :meth:`leave` pair up)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: list[float] = []  # what each running thread asked for
        self._saved: float | None = None  # the interval before the first thread lowered it
        self._lowered = 0.0  # what the interpreter reports once lowered (whole microseconds)

    def enter(self, interval: float | None) -> None:
        """A pipeline thread starts and asks for ``interval`` (None: nothing)."""
        if interval is None:
            return
        with self._lock:
            self._holders.append(interval)
            wanted = min(self._holders)
            current = sys.getswitchinterval()
            if wanted < current and (self._saved is None or current == self._lowered):
                if self._saved is None:
                    self._saved = current
                sys.setswitchinterval(wanted)
                self._lowered = sys.getswitchinterval()

    def leave(self, interval: float | None) -> None:
        """A pipeline thread that asked for ``interval`` has ended."""
        if interval is None:
            return
        with self._lock:
            self._holders.remove(interval)
            if self._holders or self._saved is None:
                return
            if sys.getswitchinterval() == self._lowered:  # (else the application's)
                sys.setswitchinterval(self._saved)
            self._saved = None


SWITCH = SwitchInterval()
"""The process's one :class:`SwitchInterval`."""

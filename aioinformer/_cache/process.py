"""ProcessSettings: every effect aioinformer has on the process beyond its own objects, in
one place. The list, with each effect's default and how to turn it off, is the docstring of
:class:`ProcessSettings` (docs/concepts.md shows it); :class:`SwitchInterval` keeps the
interpreter's switch interval while pipeline threads run.
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
    """Every effect an informer factory (or a manager, which owns one) has on the process
    beyond its own objects; nothing else of the process is changed. Each is on by default
    (the figures of bench/RESULTS.md need the first three) and each says how to turn it
    off, if it can be: ``InformerFactory(api, process=ProcessSettings(...))`` or
    ``Manager(api, process=ProcessSettings(...))``.

    * **Switch interval**: ``sys.setswitchinterval(switch_interval)`` (0.2 ms) while the
      factory's pipeline thread runs, only when that is lower than the interpreter's own;
      put back when the last pipeline thread ends, unless the application changed it
      meanwhile. Off: ``switch_interval=None``. Why: CPython hands the GIL to a waiting
      thread only after a whole interval (5 ms by default) without a hand-over, and a busy
      event loop's brief release at every iteration counts as one, so readers doing short
      steps back to back (index lookups) would keep the pipeline thread waiting for as
      long as they run. Threads switch more often only while both want the GIL: an idle
      pipeline costs nothing.
    * **Heap trimming**: glibc's ``malloc_trim(0)`` after each sync or relist of an
      informer, so the RSS follows the cache's size, not the peak of decoding the list
      (nothing where the C library has none). Off: ``release_memory=False``.
    * **The pipeline thread**: one daemon thread per factory (its name starts with
      ``aioinformer-pipeline-``) with an event loop of its own (uvloop's when the caller's
      loop is uvloop's) and one HTTP session per API server, shared by every informer of
      the factory; it starts with the first informer and ends when the factory stops.
      Off: ``pipeline="loop"`` (an argument of the factory and the manager, not of these
      settings): everything runs on the caller's loop.
    * **Log redaction**: a filter that removes known secrets (tokens, passwords, client
      keys) from every record of the ``aioinformer`` and ``kubernetes_asyncio`` loggers,
      installed once per process, when the first client is made. Not optional: a token in
      a log line is a leak.
    * **The loop watchdog** (a manager only): a daemon thread named
      ``aioinformer-loop-watchdog``, while the manager runs, that logs a WARNING naming the
      task that blocks the event loop for longer than ``blocked_loop_threshold`` (and fails
      ``/healthz`` meanwhile); it wakes every 0.1 s to read a timestamp. Off:
      ``Manager(blocked_loop_threshold=None)``.
    """

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
            self._apply()

    def leave(self, interval: float | None) -> None:
        """A pipeline thread that asked for ``interval`` has ended."""
        if interval is None:
            return
        with self._lock:
            self._holders.remove(interval)
            self._apply()

    def _apply(self) -> None:
        """The lowest interval a running thread asks for, while it is lower than the
        interpreter's own; the interpreter's back once none asks. An interval the
        application set meanwhile (not the one set here) is left alone."""
        current = sys.getswitchinterval()
        ours = self._saved is not None
        if ours and current != self._lowered:  # the application changed it: its own now
            self._saved = None
            return
        base = self._saved if ours else current
        assert base is not None
        wanted = min(self._holders, default=base)
        if wanted < base:
            if self._saved is None:
                self._saved = base
            if current != wanted:
                sys.setswitchinterval(wanted)
            self._lowered = sys.getswitchinterval()
        elif ours:
            sys.setswitchinterval(base)
            self._saved = None


SWITCH = SwitchInterval()
"""The process's one :class:`SwitchInterval`."""

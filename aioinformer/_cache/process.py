"""ProcessSettings: every effect aioinformer has on the process beyond its own objects, in
one place. The list, with each effect's default and how to turn it off, is the docstring of
:class:`ProcessSettings` (docs/concepts.md shows it); :class:`SwitchInterval` keeps the
interpreter's switch interval while pipeline threads run; :func:`raise_priority` puts a
pipeline thread under the real-time policy when asked.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass

from aioinformer._core import logs
from aioinformer._core.errors import ConfigError

__all__ = [
    "DEFAULT_SWITCH_INTERVAL",
    "MAX_PRIORITY",
    "ProcessSettings",
    "SwitchInterval",
    "raise_priority",
]

log = logs.logger("aioinformer.process")

MAX_PRIORITY = 99
"""The highest ``pipeline_priority`` (Linux's real-time priorities are 1-99)."""

DEFAULT_SWITCH_INTERVAL = 0.0002
"""The switch interval (seconds) while a pipeline thread runs, by default."""


@dataclass(frozen=True, slots=True)
class ProcessSettings:
    """Every effect an informer factory (or a manager, which owns one) has on the process
    beyond its own objects; nothing else of the process is changed. Each is on by default
    but the real-time priority, which needs a privilege (the figures of bench/RESULTS.md
    need the first three), and each says how to turn it on or off, if it can be:
    ``InformerFactory(api, process=ProcessSettings(...))`` or ``Manager(api,
    process=ProcessSettings(...))``.

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
      informer, so the RSS follows the cache's size, not the peak of decoding the list;
      and, when the first pipeline thread starts, glibc's arena limit set to 1
      (``mallopt(M_ARENA_MAX, 1)``, once per process, unless ``MALLOC_ARENA_MAX`` or a
      ``glibc.malloc.arena_max`` tunable is set): threads started from then on allocate
      from the main heap, whose free top ``malloc_trim`` returns, where a thread's own
      arena keeps it (about 100 bytes per cached pod after a sync on the pipeline
      thread). Nothing where the C library has neither. Off: ``release_memory=False``.
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
    * **A real-time priority for the pipeline thread** (off by default):
      ``pipeline_priority=N`` (1-99) runs the pipeline thread under the kernel's
      round-robin real-time policy (``SCHED_RR``) at priority N. Why: a thread woken by a
      watch event while the caller's threads compute (readers scanning the cache) otherwise
      waits for the CPU until the scheduler's next tick preempts them, up to one tick (4 ms
      on a HZ=250 kernel: most of the informer's p99 latency from the socket with readers,
      bench/RESULTS.md); with it the event is read at once. It cannot take the CPU from
      the rest of the process: the thread sleeps in ``epoll`` when idle, hands the
      interpreter's lock to a waiting thread every switch interval, and the kernel caps
      real-time threads (95 % of a CPU by default); the threads it starts (host name
      resolution) run at the normal policy. Needs ``CAP_SYS_NICE`` or an ``RLIMIT_RTPRIO``
      of at least N (in a pod: ``securityContext.capabilities.add: ["SYS_NICE"]``), and
      Linux; without them the thread runs at the normal policy, after one WARNING per
      process that says why; ``InformerStatistics.pipeline_priority`` tells which. Off:
      ``pipeline_priority=None``.
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

    pipeline_priority: int | None = None
    """The pipeline thread's real-time (``SCHED_RR``) priority, 1-99; None: the normal
    policy."""

    def __post_init__(self) -> None:
        if self.switch_interval is not None and not self.switch_interval > 0:
            raise ConfigError(f"switch_interval must be positive, not {self.switch_interval}")
        priority = self.pipeline_priority
        if priority is not None and (
            type(priority) is not int or not 1 <= priority <= MAX_PRIORITY
        ):
            raise ConfigError(
                f"pipeline_priority must be an int from 1 to {MAX_PRIORITY} or None, "
                f"not {priority!r}"
            )


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


_refused = False  # a refusal was logged (once per process)


def raise_priority(priority: int | None, thread: str) -> int | None:
    """Put the calling thread under ``SCHED_RR`` at ``priority`` (threads it starts later
    get the normal policy back: ``SCHED_RESET_ON_FORK``); the priority it runs at, None if
    not asked or refused (no ``CAP_SYS_NICE`` nor ``RLIMIT_RTPRIO``, a cgroup without a
    real-time budget, not Linux): then one WARNING per process, naming ``thread`` and
    why."""
    global _refused
    if priority is None:
        return None
    try:
        policy = os.SCHED_RR | os.SCHED_RESET_ON_FORK
        os.sched_setscheduler(threading.get_native_id(), policy, os.sched_param(priority))
    except (AttributeError, OSError) as exc:  # (AttributeError: no such call here)
        if not _refused:
            _refused = True
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            log.warning(
                "%s: cannot run at real-time priority %d (%s; it needs CAP_SYS_NICE or "
                "RLIMIT_RTPRIO >= %d, on Linux): it runs at the normal policy",
                thread,
                priority,
                why,
                priority,
            )
        return None
    return priority

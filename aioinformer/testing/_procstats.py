"""This process's resident memory and CPU time, for the benchmarks' child processes."""

from __future__ import annotations

import resource

__all__ = ["cpu_seconds", "rss_bytes"]


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:
        return 0


def cpu_seconds() -> float:
    """User + system CPU seconds of this process."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime

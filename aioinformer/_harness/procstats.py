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


def machine_info() -> dict[str, object]:
    """Where a benchmark ran: CPU count, memory, Python, OS and the versions of the
    packages that matter to the figures (recorded in every report)."""
    import os
    import platform
    from importlib import metadata

    try:
        with open("/proc/meminfo") as f:
            mem_kb = int(f.readline().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kb = 0
    versions: dict[str, str | None] = {}
    for dist in (
        "aioinformer",
        "aiohttp",
        "immutables",
        "msgspec",
        "orjson",
        "kubernetes_asyncio",
        "kubernetes",
        "aiorwlock",
    ):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "cpus": os.cpu_count(),
        "memory_bytes": mem_kb * 1024,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
    }

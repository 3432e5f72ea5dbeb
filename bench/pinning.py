"""CPU pinning for the benchmarks: the informer's process on one core, the server on the rest.

A figure taken with the informer and the API server sharing cores says what the server
suffered as much as what the informer did. :func:`plan` checks ``--informer-cpu`` against
the CPUs this process may use and names the others (the server's side: the API server,
etcd, the benchmark's own parent and writer processes); :func:`pin_processes` moves every
thread of the given processes onto a CPU set (what ``taskset -a -pc CPUS PID`` does: a
process's affinity is per thread on Linux, and a Go server's threads already exist).

Contracts: nothing is pinned without an informer CPU (:class:`Pinning` ``None``); given no
pids, :func:`pin_processes` pins nothing (the server then runs wherever the kernel puts it,
and the report records ``server_threads_pinned: 0``); a pid that exits while it is being
pinned is skipped, one the caller may not pin raises :class:`PermissionError`;
:func:`restore` gives the threads their CPUs back when the benchmark ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Pinning", "parse_pids", "pin_processes", "pinned", "plan", "restore"]


@dataclass(frozen=True)
class Pinning:
    """Where each side runs: ``informer`` (one CPU) and ``server`` (every other CPU this
    process may use)."""

    informer: int
    server: frozenset[int]

    def as_dict(self) -> dict[str, object]:
        return {"informer_cpu": self.informer, "server_cpus": sorted(self.server)}


def plan(informer_cpu: int | None, allowed: set[int] | None = None) -> Pinning | None:
    """The pinning for ``--informer-cpu`` (None: no pinning); ``allowed`` defaults to this
    process's affinity. ValueError if the CPU is not allowed or leaves none for the server."""
    if informer_cpu is None:
        return None
    cpus = set(os.sched_getaffinity(0) if allowed is None else allowed)
    if informer_cpu not in cpus:
        raise ValueError(f"--informer-cpu {informer_cpu}: this process may use CPUs {sorted(cpus)}")
    server = frozenset(cpus - {informer_cpu})
    if not server:
        raise ValueError(
            f"--informer-cpu {informer_cpu}: no CPU left for the server (allowed: {sorted(cpus)})"
        )
    return Pinning(informer_cpu, server)


def parse_pids(text: str) -> list[int]:
    """``--server-pids``: comma- or space-separated positive process ids ("" -> [])."""
    pids = []
    for part in text.replace(",", " ").split():
        pid = int(part)
        if pid <= 0:
            raise ValueError(f"--server-pids: {part} is not a process id")
        pids.append(pid)
    return pids


def pin_processes(pids: list[int], cpus: frozenset[int]) -> dict[int, set[int]]:
    """Put every thread of each process in ``pids`` on ``cpus``; each pinned thread's
    previous CPUs by thread id (:func:`restore` puts them back; empty for no pids). A
    process or thread gone meanwhile is skipped."""
    previous: dict[int, set[int]] = {}
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except FileNotFoundError:
            continue
        for tid in tids:
            try:
                before = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, cpus)
            except ProcessLookupError:
                continue
            previous[tid] = before
    return previous


def restore(previous: dict[int, set[int]]) -> None:
    """Give each thread :func:`pin_processes` pinned its previous CPUs (threads gone are
    skipped; threads started since keep the pinned CPUs they inherited)."""
    for tid, cpus in previous.items():
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:
            continue


@contextmanager
def pinned(pids: list[int], cpus: frozenset[int] | None) -> Iterator[int]:
    """``with pinned(pids, cpus) as threads:`` every thread of ``pids`` on ``cpus`` (none
    when ``cpus`` is None), their previous CPUs given back at the end; ``threads`` is how
    many were pinned."""
    previous = pin_processes(pids, cpus) if cpus is not None else {}
    try:
        yield len(previous)
    finally:
        restore(previous)

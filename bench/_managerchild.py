"""The informer process of bench/manager_bench.py: one Manager with N informers, K readers.

Run as ``python bench/_managerchild.py`` (by path: it imports ``aioinformer`` from the
checkout first on PYTHONPATH, the one under test) with ``AIOINFORMER_MANAGER_TOKEN`` in
the environment (never on the command line). Of that checkout it uses only API present
before and after issue 25's refactor: ``Manager(api_client)``, ``manager.informer(gv,
plural)``, ``manager.run()`` (cancelled to stop), ``informer.snapshot()``,
``on_publish``, ``wait_for_sync``, ``statistics()``, and the benchmark harness
(``aioinformer._harness.simproc``, ``procstats``).

Protocol (stdin -> stdout, one JSON object per line):

1. config ``{"url", "informers": [[group_version, plural], ...], "readers"}`` ->
   ``{"ready": {"rss_bytes", "threads", "os_threads", "names", "aioinformer"}}``: imports done,
   the Manager and its informers built, nothing listed; ``aioinformer`` is the file the
   package was imported from.
2. ``{"op": "sync"}`` -> ``{"synced": seconds, "objects": [per informer], "rss_bytes"}``:
   from ``run()`` starting to every informer synced (RSS after a gc).
3. ``{"op": "idle", "seconds"}`` -> ``{"cpu_seconds", "seconds", "threads", "os_threads",
   "names", "tcp", "switch_interval"}``: the process's CPU over a window with no reader
   (the parent makes no write meanwhile), then the thread counts (and names, see
   :func:`thread_counts`), the established TCP connections to the sim's port and
   :func:`sys.getswitchinterval`.
4. ``{"op": "load", "seconds"}``: the readers scan the first informer (pods) that long ->
   ``{"reads", "t_start", "t_end", "cpu_seconds"}``.
5. ``{"op": "wait_rv", "rv", "timeout"}`` -> ``{"reached": bool}`` once the first informer
   published ``rv`` (bounded polling of its publish log).
6. ``{"op": "result"}`` -> ``{"publishes": [[t, rv], ...], "latencies", "stats"}``; then
   the Manager is cancelled and the process exits.

Readers, each looping without pause on the Manager's loop: ``for obj in
snapshot.list(): obj.name`` (a full scan that never yields), then ``sleep(0)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import orjson

TOKEN_ENV = "AIOINFORMER_MANAGER_TOKEN"


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.buffer.write(orjson.dumps(obj) + b"\n")
    sys.stdout.buffer.flush()


def os_threads() -> int:
    """The kernel's count of this process's threads (``Threads:`` in /proc/self/status)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise RuntimeError("no Threads: line in /proc/self/status")


def tcp_connections(port: int | None) -> int:
    """ESTABLISHED TCP connections of this process to ``port`` (any address): the sockets
    among this process's file descriptors that /proc/self/net/tcp{,6} lists in state 01
    with that remote port (those tables list the whole network namespace's sockets)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table) as f:
            next(f)  # the header
            for line in f:
                cols = line.split()
                remote, state, inode = cols[2], cols[3], cols[9]
                if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port and inode in inodes:
                    count += 1
    return count


def thread_counts() -> dict[str, Any]:
    """Python's and the kernel's thread counts, and the names of Python's threads with
    their digits dropped (``asyncio_0`` and ``asyncio_1`` are two ``asyncio_``), counted."""
    names: dict[str, int] = {}
    for t in threading.enumerate():
        name = "".join(c for c in t.name if not c.isdigit())
        names[name] = names.get(name, 0) + 1
    return {"threads": threading.active_count(), "os_threads": os_threads(), "names": names}


async def reader(informer: Any, out: list[float]) -> None:
    while True:
        t0 = time.perf_counter()
        snap = informer.snapshot()
        for obj in snap.list():
            obj.name  # noqa: B018  (what a lister without an index touches)
        del snap
        out.append(time.perf_counter() - t0)
        await asyncio.sleep(0)


async def wait_published(publishes: list[tuple[float, int]], rv: int, timeout: float) -> bool:
    """Whether the publish log reaches ``rv`` within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (publishes and publishes[-1][1] >= rv):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def main() -> None:
    logging.basicConfig(level=logging.ERROR, format="informer process: %(name)s: %(message)s")
    import aioinformer
    from aioinformer._harness.procstats import cpu_seconds, rss_bytes
    from aioinformer._harness.simproc import parent_messages, sim_api_client

    receive = await parent_messages()
    cfg = await receive()
    port = urlsplit(cfg["url"]).port
    async with sim_api_client(cfg["url"], os.environ[TOKEN_ENV]) as api:
        manager = aioinformer.Manager(api)
        informers = [manager.informer(gv, plural) for gv, plural in cfg["informers"]]
        pods = informers[0]
        publishes: list[tuple[float, int]] = []
        pods.on_publish(lambda _seq, rv: publishes.append((time.monotonic(), rv)))
        gc.collect()
        emit({"ready": {"rss_bytes": rss_bytes(), **thread_counts(),
                        "aioinformer": aioinformer.__file__}})  # fmt: skip
        assert (await receive())["op"] == "sync"
        t0 = time.perf_counter()
        running = asyncio.create_task(manager.run())
        syncing = asyncio.gather(*(i.wait_for_sync() for i in informers))
        await asyncio.wait([running, syncing], return_when=asyncio.FIRST_COMPLETED)
        if running.done():  # run() ended before the sync: its error is the answer
            syncing.cancel()
            running.result()
            raise RuntimeError("Manager.run() returned before the informers synced")
        synced = time.perf_counter() - t0
        gc.collect()
        objects = [len(i.snapshot()) for i in informers]
        emit({"synced": synced, "objects": objects, "rss_bytes": rss_bytes()})

        seconds = float((await receive())["seconds"])
        c0, w0 = cpu_seconds(), time.monotonic()
        await asyncio.sleep(seconds)
        c1, w1 = cpu_seconds(), time.monotonic()
        emit({"cpu_seconds": c1 - c0, "seconds": w1 - w0, **thread_counts(),
              "tcp": tcp_connections(port), "switch_interval": sys.getswitchinterval()})  # fmt: skip

        seconds = float((await receive())["seconds"])
        latencies: list[float] = []
        tasks = [asyncio.create_task(reader(pods, latencies)) for _ in range(cfg["readers"])]
        c0, t_start = cpu_seconds(), time.monotonic()
        await asyncio.sleep(seconds)
        c1, t_end = cpu_seconds(), time.monotonic()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        emit({"reads": len(latencies), "t_start": t_start, "t_end": t_end, "cpu_seconds": c1 - c0})

        msg = await receive()
        emit({"reached": await wait_published(publishes, int(msg["rv"]), float(msg["timeout"]))})
        await receive()
        stats = pods.statistics()
        emit(
            {
                "publishes": publishes,
                "latencies": latencies,
                "stats": {
                    "fifo_peak": stats.fifo_peak,
                    "relists": stats.relists,
                    "watch_restarts": stats.watch_restarts,
                    "pipeline": getattr(stats, "pipeline", None),
                },
            }
        )
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


if __name__ == "__main__":
    asyncio.run(main())

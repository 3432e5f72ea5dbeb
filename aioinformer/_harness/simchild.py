"""The child side of :class:`~aioinformer._harness.simproc.SimProcess`: KubeSim plus a load driver.

Run as ``python -m aioinformer._harness.simchild [--history-size N] [--watch-list]``. The
first line on stdout is ``{"url": ..., "token": ..., "pid": ...}``; then each JSON line on
stdin is one command, answered by one JSON line on stdout (``{"ok": true, ...}`` or
``{"ok": false, "error": "..."}``). EOF on stdin stops the server and exits.

Commands (``op``):

* ``populate``: ``owners`` x ``pods`` StatefulSet-like pods (:func:`realistic_pod`) over
  ``namespaces`` namespaces, created in-process; ``bound`` ones are Running on ``nodes``
  nodes, the others Pending and unscheduled (the cluster emulation binds and starts them);
  then ``gc.freeze()``, so the collector never walks the bulk-loaded objects again.
* ``nodes``: add ``n`` Ready nodes. ``cluster``: start (or reconfigure) the
  scheduler/kubelet emulation with the given rates.
* ``churn``: kubelet-like status writes at ``rate`` per second (0 stops): each flips one
  running pod's Ready condition, round robin over the pods ``populate`` made (the
  background workload; other pods, e.g. operators', are left alone). Reports achieved
  writes.
* ``commits``: the (resourceVersion, monotonic commit time) of every pod change since the
  last ``commits`` call (or since ``record`` started recording). ``record``: start
  recording (drops what was recorded).
* ``stats``: RSS and CPU seconds of this process, the current RV and the last pod write's
  (``pods_rv``: what a pods informer reaches without waiting for a bookmark), pod count,
  churn writes.

Times are ``time.monotonic()``: CLOCK_MONOTONIC is system-wide on Linux, so the parent
compares them with its own.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from aioinformer._harness.procstats import cpu_seconds, rss_bytes
from aioinformer._harness.simproc import answer_parent
from aioinformer._harness.workload import realistic_pod
from kubesim import STRATEGIC_PATCH, KubeSim, TypeStore

__all__: list[str] = []

_TICK = 0.002  # short bursts: the watch streams are served between them


class Driver:
    """Executes the commands against one KubeSim."""

    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self.pods_rt = sim.resource("pods")
        self.pods: TypeStore = sim.api.store(self.pods_rt)
        self._churn_task: asyncio.Task[None] | None = None
        self._rate = 0.0
        self.churn_writes = 0
        self._cursor = 0
        self._recording = False
        self._seq = 0
        self._commits: list[tuple[int, float]] = []
        self._recorder: asyncio.Task[None] | None = None
        self._lost = 0
        self._workload: set[str] = set()  # the namespaces populate filled: churn's pods

    async def populate(
        self,
        owners: int,
        pods: int,
        namespaces: int = 20,
        nodes: int = 100,
        bound: bool = True,
        prefix: str = "sts",
    ) -> dict[str, Any]:
        t0 = time.perf_counter()
        made = 0
        for ns_i in range(min(namespaces, owners)):
            ns = f"{prefix}-ns-{ns_i}"
            if self.sim.api.store(self.sim.resource("namespaces")).get(ns) is None:
                self.sim.create("namespaces", {"metadata": {"name": ns}})
        for o in range(owners):
            ns = f"{prefix}-ns-{o % max(1, namespaces)}"
            self._workload.add(ns)
            for start in range(0, pods, 500):
                bodies = (
                    realistic_pod(
                        ns,
                        f"{prefix}-{o}",
                        i,
                        node=f"node-{(o * pods + i) % nodes}" if bound else None,
                        phase="Running",
                    )
                    for i in range(start, min(pods, start + 500))
                )
                made += self.sim.create_many("pods", bodies, ns, keep_status=bound)
                await asyncio.sleep(0)  # keep serving watches and lists meanwhile
        # a bulk load's objects live for the whole run: out of the collector's way, so full
        # collections do not pause the server for a walk over every stored pod
        gc.collect()
        gc.freeze()
        return {"pods": made, "seconds": time.perf_counter() - t0, "rv": self.sim.resource_version}

    def nodes(self, n: int) -> dict[str, Any]:
        return {"names": self.sim.add_nodes(n)}

    def cluster(self, **options: Any) -> dict[str, Any]:
        if self.sim.cluster._task is None:
            self.sim.start_cluster(**options)
        else:
            self.sim.cluster.configure(**options)
        return {"stats": self.sim.cluster.stats()}

    def churn(self, rate: float) -> dict[str, Any]:
        self._rate = max(0.0, float(rate))
        if self._rate and self._churn_task is None:
            self._churn_task = asyncio.create_task(self._churn())
        return {"writes": self.churn_writes}

    def record(self) -> dict[str, Any]:
        self._recording = True
        self._commits.clear()
        self._seq = self.pods.next_seq
        self._lost = 0
        if self._recorder is None:
            self._recorder = asyncio.create_task(self._record())
        return {"rv": self.sim.resource_version}

    def commits(self) -> dict[str, Any]:
        self._poll()
        out, self._commits = self._commits, []
        lost, self._lost = self._lost, 0
        return {"commits": out, "lost": lost}

    def stats(self) -> dict[str, Any]:
        return {
            "rss_bytes": rss_bytes(),
            "cpu_seconds": cpu_seconds(),
            "rv": self.sim.resource_version,
            "pods_rv": self._last_pod_rv(),
            "pods": len(self.pods.objects),
            "churn_writes": self.churn_writes,
            "cluster": self.sim.cluster.stats(),
        }

    def _last_pod_rv(self) -> int:
        last = self.pods.events_since(self.pods.next_seq - 1) or []
        return last[-1].rv if last else 0

    # -- background work ----------------------------------------------------------------------

    def _poll(self) -> None:
        if not self._recording:
            return
        events = self.pods.events_since(self._seq)
        if events is None:  # fell out of the watch-cache window: count, resync
            self._lost += 1
            self._seq = self.pods.next_seq
            return
        self._seq = self.pods.next_seq
        self._commits.extend((ev.rv, ev.t) for ev in events)

    async def _record(self) -> None:
        while True:
            self._poll()
            await asyncio.sleep(0.05)

    async def _churn(self) -> None:
        """Token bucket: every tick, as many status writes as the rate allows."""
        budget = 0.0
        last = time.monotonic()
        while True:
            await asyncio.sleep(_TICK)
            now = time.monotonic()
            budget = min(budget + (now - last) * self._rate, max(1.0, self._rate * 0.1))
            last = now
            while budget >= 1:
                budget -= 1
                self._flip_one()

    def _flip_one(self) -> None:
        keys = self.pods.keys
        if not keys:
            return
        for _ in range(16):  # skip other workloads' pods and pods not Running yet
            key = keys[self._cursor % len(keys)]
            self._cursor += 1
            if key.partition("/")[0] not in self._workload:
                continue
            stored = self.pods.get(key)
            if stored is not None and stored.fields.get("status.phase") == "Running":
                break
        else:
            return
        ready = "False" if self._cursor // len(keys) % 2 == 0 else "True"
        ns, name = key.split("/", 1)
        patch = {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": ready, "lastTransitionTime": self._now()}
                ]
            }
        }
        self.sim.api.patch(
            self.pods_rt, ns, name, STRATEGIC_PATCH, patch, subresource="status", manager="kubelet"
        )
        self.churn_writes += 1

    @staticmethod
    def _now() -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def serve(history_size: int, watch_list: bool) -> None:
    async with KubeSim(history_size=history_size, watch_list=watch_list) as sim:
        driver = Driver(sim)
        commands: dict[str, Callable[..., Any]] = {
            "populate": driver.populate,
            "nodes": driver.nodes,
            "cluster": driver.cluster,
            "churn": driver.churn,
            "record": driver.record,
            "commits": driver.commits,
            "stats": driver.stats,
        }
        await answer_parent({"url": sim.url, "token": sim.token, "pid": os.getpid()}, commands)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m aioinformer._harness.simchild")
    p.add_argument("--history-size", type=int, default=100_000)
    p.add_argument("--watch-list", action="store_true")
    args = p.parse_args(argv)
    try:
        asyncio.run(serve(args.history_size, args.watch_list))
    except KeyboardInterrupt:  # Ctrl-C reaches the parent's process group: the parent says it
        sys.exit(130)


if __name__ == "__main__":
    main()

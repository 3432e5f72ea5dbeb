"""The informer process of the contention scenario (one per configuration; see :mod:`.contention`).

Run as ``python -m aioinformer._harness.informer_process`` with ``AIOINFORMER_CONTENTION_TOKEN`` in
the environment (never on the command line). It talks JSON lines with the parent:

1. stdin: the configuration (``url``, ``store``, ``read``, ``readers``, ``owners``,
   ``chunk``, ``batch_size``, ``sample_interval``, ``examples_dir`` or null, ...).
   It runs a Manager with one shared pods informer (and the example operators, if
   asked) and, once every informer has synced, prints ``{"synced": seconds, "objects": n}``.
2. stdin: ``{"start": seconds}``: runs the K readers (and drives the operators) for that
   long, printing ``{"progress": {...}}`` lines, then ``{"loaded": true}``.
3. stdin: ``{"drain_to": rv}``: stops the readers, waits until the informer has published
   ``rv``, lets the operators settle, stops the manager, prints the result object and
   exits.

The result holds raw measurements (publish times, receive times, reader latencies,
samples, operator counters, RSS); the parent turns them into the figures
(:func:`.contention.summarise`).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

import orjson

from aioinformer._cache.deltas import Delta, ObjectDelta
from aioinformer._cache.informer import Informer, InformerStatistics
from aioinformer._core.errors import FreshnessTimeout
from aioinformer._harness.contention import TOKEN_ENV
from aioinformer._harness.locked_informer import LockedManager, reading
from aioinformer._harness.procstats import cpu_seconds, rss_bytes
from aioinformer._harness.scenario_operators import ScenarioOperators
from aioinformer._harness.simproc import parent_messages, sim_api_client
from aioinformer._harness.workload import statefulset_uid
from aioinformer._runtime.manager import Manager

__all__: list[str] = []


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.buffer.write(orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
    sys.stdout.buffer.flush()


def owner_uids(owners: int, namespaces: int, prefix: str = "sts") -> list[str]:
    """The controller uids of the populated owners (see ``_simchild.Driver.populate``)."""
    return [
        statefulset_uid(f"{prefix}-ns-{o % max(1, namespaces)}", f"{prefix}-{o}")
        for o in range(owners)
    ]


class Readers:
    """K controller-like readers fetching one random owner's pods, back to back."""

    def __init__(self, informer: Informer, mode: str, uids: list[str], chunk: int) -> None:
        self.informer, self.mode, self.uids, self.chunk = informer, mode, uids, chunk
        self.latencies: list[float] = []
        self.found = 0

    async def run_one(self, seed: int) -> None:
        rnd = random.Random(seed)
        informer, latencies = self.informer, self.latencies
        while True:
            uid = rnd.choice(self.uids)
            t0 = time.perf_counter()
            async with reading(informer) as view:
                if self.mode == "index":
                    pods = view.by_index("controller", uid)
                else:  # what a lister without an index does: look at every pod
                    pods = []
                    async for obj in view.iter_chunks(chunk=self.chunk):
                        ref = obj.controller_ref
                        if ref is not None and ref.uid == uid:
                            pods.append(obj)
            latencies.append(time.perf_counter() - t0)
            self.found += len(pods)
            await asyncio.sleep(0)


RECEIPTS: list[tuple[int, float]] = []
"""(resourceVersion, receive time) of every delta the pods informer's watcher queued: with
the publish times, staleness splits into the wire (sim commit -> watcher) and the informer
(watcher -> published snapshot). One tuple per event."""


def note_receipts(items: Sequence[Delta]) -> None:
    """The pods informer's :meth:`~aioinformer.Informer.on_receive` listener."""
    RECEIPTS.extend((item.obj.rv, item.received) for item in items if type(item) is ObjectDelta)


class InformerProcess:
    """One configuration's informer process: its manager, readers and measurements."""

    def __init__(self, api: Any, cfg: dict[str, Any]) -> None:
        self.api, self.cfg = api, cfg
        manager_class = LockedManager if cfg["store"] == "locked" else Manager
        self.manager = manager_class(api, pipeline="loop" if cfg["store"] == "locked" else "thread")
        if cfg["store"] == "locked":  # (see ContentionOptions.locked_batch)
            self.manager.factory.batch_size = cfg.get("locked_batch", 1)
        self.pods = self.manager.informer("v1", "pods")
        self.ops: ScenarioOperators | None = None
        if cfg.get("examples_dir"):
            self.ops = ScenarioOperators(
                self.manager, cfg["examples_dir"], cfg["tag"], cfg["podsets"], cfg["replicas"]
            )
        self.publishes: list[tuple[float, int]] = []
        self.pods.on_receive(note_receipts)
        self.pods.on_publish(lambda _seq, rv: self.publishes.append((time.monotonic(), rv)))
        self.samples: list[list[float]] = []
        uids = owner_uids(cfg["owners"], cfg["namespaces"])
        self.readers = Readers(self.pods, cfg["read"], uids, cfg["chunk"])

    def sample(self) -> InformerStatistics:
        st = self.pods.statistics()
        self.samples.append([time.monotonic(), st.fifo_depth, st.staleness, st.applied_total])
        return st

    def synced(self, seconds: float) -> dict[str, Any]:
        """What the parent hears once the manager has synced, ``seconds`` after its start."""
        gc.collect()
        return {"synced": seconds, "objects": self.pods.statistics().objects}

    async def load(self, seconds: float) -> None:
        """Readers (and the operators' workload) for ``seconds``, sampling as it goes."""
        cfg, readers = self.cfg, self.readers
        self.tasks = [asyncio.create_task(readers.run_one(i)) for i in range(cfg["readers"])]
        self.pods.reset_fifo_peak()  # the load's own peak, not the sync's
        self.t_start = time.monotonic()
        self.applied0 = self.pods.statistics().applied_total
        self.cpu0 = cpu_seconds()
        driving = (
            None if self.ops is None else asyncio.create_task(self.ops.drive(self.api, seconds))
        )
        while (now := time.monotonic()) < self.t_start + seconds:
            st = self.sample()
            progress = {
                "t": now - self.t_start,
                "fifo": st.fifo_depth,
                "staleness": st.staleness,
                "reads": len(readers.latencies),
                "applied": st.applied_total - self.applied0,
            }
            emit({"progress": progress})
            await asyncio.sleep(cfg["sample_interval"])
        self.t_end = time.monotonic()
        st = self.pods.statistics()
        self.applied1, self.fifo_peak = st.applied_total, st.fifo_peak
        if driving is not None:
            await driving

    async def drain(self, target: int) -> dict[str, Any]:
        """Stop the readers, wait until RV ``target`` is published, settle the operators;
        the raw measurements."""
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        give_up = time.monotonic() + self.cfg["drain_timeout"]
        while time.monotonic() < give_up:
            self.sample()
            try:
                await self.pods.wait_fresh(target, timeout=self.cfg["sample_interval"])
                break
            except FreshnessTimeout:
                continue
        self.sample()
        figures: dict[str, Any] = {}
        if self.ops is not None:
            figures["operators_converged"] = await self.ops.settle(
                self.api, self.cfg["settle_timeout"]
            )
            figures.update(await self.ops.figures(self.api))
        stats = self.pods.statistics()
        return {
            **figures,
            "drained": stats.resource_version >= target,
            "t_start": self.t_start,
            "t_end": self.t_end,
            "publishes": self.publishes,
            "receipts": RECEIPTS,
            "samples": self.samples,
            "fifo_peak": self.fifo_peak,
            "latencies": self.readers.latencies,
            "applied": self.applied1 - self.applied0,
            "objects": stats.objects,
            "rss_bytes": rss_bytes(),
            "cpu_seconds": cpu_seconds() - self.cpu0,
        }


async def main() -> None:
    logging.basicConfig(level=logging.ERROR, format="informer process: %(name)s: %(message)s")
    receive = await parent_messages()

    cfg = await receive()
    async with sim_api_client(cfg["url"], os.environ[TOKEN_ENV]) as api:
        proc = InformerProcess(api, cfg)
        if proc.ops is not None:
            await proc.ops.install(api)  # the CRDs, before the manager starts its informers
        t0 = time.perf_counter()
        async with proc.manager:  # entered once every informer has synced
            emit(proc.synced(time.perf_counter() - t0))
            await proc.load(float((await receive())["start"]))
            emit({"loaded": True})
            result = await proc.drain(int((await receive())["drain_to"]))
    emit({"result": result})


if __name__ == "__main__":
    asyncio.run(main())

"""What each replica of a sharded-cache operator holds and does, with 1, 2 and 3 replicas.

A StatefulSet-shaped operator on KubeSim (in this process): ``--owners`` ConfigMaps each
controlling ``--pods`` pods (labelled with their owner's bucket, as ``client.create(...,
owner=...)`` makes them), reconciled by N managers in this process with
``Sharding(caches="sharded")`` (6 shards, short Lease timings), with KubeSim's
ShardedListAndWatch gate on (the server filters the primaries) and off (the informers
do), and once with ``caches="full"`` for comparison. Once every shard is ready and the
replicas' primaries add up to all of them, per replica: primaries and pods cached, the
bytes the caches hold (``cached_bytes``), the objects received (list items and watch
events of its informers: the egress it costs the server, in objects), and its reconciles.

    python bench/shard_caches_bench.py --owners 50 --pods 100 --json bench/results/shard_caches.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Literal

from aioinformer import Manager, Sharding, bucket_label, uid_bucket
from aioinformer._core.shardbuckets import SHARD_LABEL
from aioinformer._harness.procstats import machine_info
from aioinformer.testing import KubeSim

NS = "bench"
SHARDS = 6
TIMING = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}
Caches = Literal["full", "sharded"]


def populate(sim: KubeSim, owners: int, pods: int) -> None:
    sim.create("namespaces", {"metadata": {"name": NS}})
    for i in range(owners):
        owner = sim.create("configmaps", {"metadata": {"name": f"set-{i}"}}, NS)
        meta = owner["metadata"]
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"],
               "uid": meta["uid"], "controller": True}  # fmt: skip
        label = bucket_label(uid_bucket(meta["uid"]))
        for j in range(pods):
            sim.create(
                "pods",
                {
                    "metadata": {
                        "name": f"set-{i}-{j}",
                        "labels": {"app": f"set-{i}", SHARD_LABEL: label},
                        "ownerReferences": [ref],
                    },
                    "spec": {
                        "containers": [{"name": "main", "image": "pause:3.9"}],
                        "nodeName": f"node-{j % 20}",
                    },
                },
                NS,
            )


class Replica:
    def __init__(self, api: Any, identity: str, caches: Caches) -> None:
        sharding = Sharding("bench", NS, identity, SHARDS, caches=caches, **TIMING)
        self.manager = Manager(api, sharding=sharding, pipeline="loop", metrics_port=None)
        self.configs = self.manager.informer("v1", "configmaps", namespace=NS)
        self.pods = self.manager.informer("v1", "pods", namespace=NS)
        self.reconciled = 0

        async def reconcile(key: str) -> None:
            self.reconciled += 1

        self.manager.controller("sets", reconcile, primary=self.configs, owns=[self.pods])

    def row(self) -> dict[str, Any]:
        stats = [i.statistics() for i in self.manager.factory.informers]
        sharded, shards = self.manager.sharded_caches, self.manager.shards
        assert shards is not None
        return {
            "shards_ready": len(sharded.ready if sharded else shards.owned_shards()),
            "primaries": len(self.configs.snapshot()),
            "pods": len(self.pods.snapshot()),
            "cached_bytes": sum(s.cached_bytes for s in stats),
            "objects_received": sum(s.objects_received for s in stats),
            "reconciles": self.reconciled,
        }


async def run(n: int, caches: Caches, gate: bool, owners: int, pods: int) -> dict[str, Any]:
    async with KubeSim(feature_gates={"ShardedListAndWatch": gate}) as sim:
        populate(sim, owners, pods)
        async with contextlib.AsyncExitStack() as stack:
            replicas = []
            for r in range(n):
                api = await stack.enter_async_context(sim.api_client())
                replica = Replica(api, f"r{r}", caches)
                await stack.enter_async_context(replica.manager)
                replicas.append(replica)
            t0 = time.monotonic()
            while True:
                rows = [r.row() for r in replicas]
                total = sum(row["primaries"] for row in rows)
                shared = all(row["shards_ready"] for row in rows)
                every = sum(row["reconciles"] > 0 for row in rows) == n
                if shared and every and (caches == "full" or total == owners):
                    break
                if time.monotonic() - t0 > 120:
                    raise TimeoutError(f"not stable after 120 s: {rows}")
                await asyncio.sleep(0.2)
            await asyncio.sleep(1.0)  # (the last requeues reconciled)
            return {
                "replicas": n,
                "caches": caches,
                "gate": gate,
                "seconds_to_stable": round(time.monotonic() - t0, 2),
                "per_replica": [r.row() for r in replicas],
            }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--owners", type=int, default=50)
    p.add_argument("--pods", type=int, default=100)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    runs: list[dict[str, Any]] = []
    for caches, gate in (("sharded", True), ("sharded", False), ("full", True)):
        for n in (1, 2, 3):
            result = asyncio.run(run(n, caches, gate, args.owners, args.pods))  # type: ignore[arg-type]
            runs.append(result)
            for i, row in enumerate(result["per_replica"]):
                print(
                    f"{caches:7} gate={'on ' if gate else 'off'} N={n} r{i}: "
                    f"shards {row['shards_ready']}  primaries {row['primaries']:4}  "
                    f"pods {row['pods']:6}  cached {row['cached_bytes'] / 1e6:7.2f} MB  "
                    f"received {row['objects_received']:6}  reconciles {row['reconciles']:4}",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps({
            "command": "python bench/shard_caches_bench.py " + " ".join(argv or sys.argv[1:]),
            "machine": machine_info(),
            "owners": args.owners, "pods": args.pods, "shards": SHARDS, "runs": runs,
        }, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()

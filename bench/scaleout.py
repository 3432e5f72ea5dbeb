"""Scale-out: what each replica of the PodSet operator holds and costs with 1, 2 and 4 replicas.

The seed shape on KubeSim in its own process (bench/_scaleoutsim.py): ``--owners``
PodSets (examples/podset.py) of ``--pods-per-owner`` StatefulSet-shaped pods each, the pods
already made (Running, Ready, each with the controller ownerReference to its PodSet) and,
unless ``--labeled``, without the shard bucket label: the first replica's ShardLabeler
labels them (a run of its own, measured: ``labeling``). The operator runs as replica
processes started as a user starts them::

    python -m aioinformer run examples/podset.py:build --shards S --shard-caches sharded \\
        --kubeconfig K --metrics-port 0 --field-manager replica-I --identity replica-I ...

each with its own user (token) on the server. For N = 1, 2, 4 replicas, once with KubeSim's
ShardedListAndWatch gate on (``server``: the server filters the primaries) and once off
(``client``: the informers drop what is not theirs before decoding it), it waits (bounded
polling) until every shard is ready, the replicas' caches add up to every PodSet and pod
and the reconciles settled, then records per replica: RSS (VmRSS), CPU seconds
(utime+stime of /proc/PID/stat) and per 1000 objects received, objects cached, bytes
received, objects received/kept/dropped (per informer, from its /metrics) and reconciles.
The targets are ratios within the run (``targets``): per-replica RSS <= 1.2 x RSS(N=1)/N
+ the RSS of a replica that holds no objects (measured: ``overhead``), objects cached <=
1.2 x objects(N=1)/N, bytes received <= 1.2/N x bytes(N=1) with the server-side selector,
and the busiest replica's CPU falls as N grows.

``--drill``: 4 replicas under ``--write-rate`` writes/s (bench/_scaleoutwriter.py: pod
annotation patches over every pod, and ``--scale-rate`` of them PodSet scale-ups), then
SIGKILL one, start a new one, SIGTERM one; after each, the seconds until every shard is
held by a live replica that logged it ready after taking it (bounded polling every
0.2 s) and the shares are fair again. Then, from the server's write journal: writes by a
replica to a PodSet (its status) or to a PodSet's pods while another held the shard's
Lease, pairs of writes by two replicas to one key in flight at once, creates answered 409,
and at the end (after bounded waiting) the PodSets whose pods or status are not what
their spec says, and pods beyond a spec.

    python bench/scaleout.py --owners 20 --pods-per-owner 50 --json bench/results/scaleout-small.json
    python bench/scaleout.py --json bench/results/scaleout.json      # 200 x 1000
    python bench/scaleout.py --drill --json bench/results/scaleout-drill.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from aioinformer import uid_bucket
from aioinformer._core.shardbuckets import shard_buckets
from aioinformer._harness.procstats import machine_info
from aioinformer._harness.simproc import asker, spawn_python

ROOT = Path(__file__).resolve().parent.parent
PODSETS_INFORMER = "podsets.example.aioinformer.dev"
PODS_INFORMER = "pods"
LEASE_NAMESPACE = "default"
_READY = re.compile(r"sharded caches: shards \[([\d, ]*)\] ready")
_SERVING = re.compile(r"serving /metrics.* on [^:]+:(\d+)")
_SAMPLE = re.compile(r"^(\w+)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _env() -> dict[str, str]:
    path = (str(ROOT), str(ROOT / "kubesim" / "src"), os.environ.get("PYTHONPATH", ""))
    return {"PYTHONPATH": os.pathsep.join(p for p in path if p)}


def proc_stats(pid: int) -> dict[str, float]:
    """VmRSS (bytes) and utime+stime (seconds) of a process, from /proc."""
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    cpu = (int(fields[11]) + int(fields[12])) / _CLK_TCK
    return {"rss_bytes": rss, "cpu_seconds": round(cpu, 2)}


def parse_metrics(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of each sample of a Prometheus text page."""
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and not line.startswith("#"):
            labels = dict(_LABEL.findall(m.group(2) or ""))
            out.append((m.group(1), labels, float(m.group(3))))
    return out


class Sim:
    """The KubeSim child (bench/_scaleoutsim.py)."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.url = self.token = ""
        self.pid = 0
        self.journal: list[list[Any]] = []

    async def __aenter__(self) -> Sim:
        self.proc = await spawn_python("bench._scaleoutsim", env=_env())
        assert self.proc.stdout is not None
        hello = orjson.loads(await asyncio.wait_for(self.proc.stdout.readline(), 60))
        self.url, self.token, self.pid = hello["url"], hello["token"], hello["pid"]
        self._ask = asker(self.proc, "the KubeSim child")
        return self

    async def __aexit__(self, *exc: object) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    async def call(self, op: str, **args: Any) -> dict[str, Any]:
        reply = await self._ask({"op": op, **args})
        if not reply.pop("ok", False):
            raise RuntimeError(f"KubeSim child: {op}: {reply.get('error')}")
        return reply

    async def sync_journal(self) -> list[list[Any]]:
        """The journal so far (fetched incrementally)."""
        reply = await self.call("journal", since=len(self.journal))
        self.journal.extend(reply["entries"])
        return self.journal

    def kubeconfig(self, token: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "sim", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": {"token": token}}],
            "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "u"}}],
            "current-context": "sim",
        }  # fmt: skip


class Replica:
    """One operator process (``python -m aioinformer run examples/podset.py:build``)."""

    def __init__(self, identity: str, kubeconfig: Path, lease: str, args: argparse.Namespace,
                 namespace: str | None = None) -> None:  # fmt: skip
        self.identity = identity
        self.command = [
            sys.executable, "-m", "aioinformer", "run", "examples/podset.py:build",
            "--shards", str(args.shards), "--shard-caches", "sharded", "--kubeconfig", str(kubeconfig),
            "--metrics-host", "127.0.0.1", "--metrics-port", "0",
            "--field-manager", identity, "--identity", identity,
            "--lease-name", lease, "--lease-namespace", LEASE_NAMESPACE,
            "--lease-duration", str(args.lease_duration),
            "--renew-deadline", str(args.renew_deadline),
            "--retry-period", str(args.retry_period), "--log-format", "json",
        ]  # fmt: skip
        if namespace:
            self.command += ["--namespace", namespace]
        self.proc: asyncio.subprocess.Process | None = None
        self.port = 0
        self.ready: dict[int, float] = {}  # shard -> when it was last logged ready
        self.errors: list[str] = []
        self.started = 0.0
        self._reader: asyncio.Task[None] | None = None
        self.exit_status: int | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self) -> None:
        self.started = time.monotonic()
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, cwd=ROOT, env={**os.environ, **_env()},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, limit=16 << 20,
        )  # fmt: skip
        self._reader = asyncio.create_task(self._read_logs())

    async def _read_logs(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        async for raw in self.proc.stderr:
            now = time.monotonic()
            try:
                line = orjson.loads(raw)
                message = str(line.get("message", ""))
            except orjson.JSONDecodeError:
                line, message = {"level": "TEXT"}, raw.decode(errors="replace").strip()
            if m := _READY.search(message):
                for s in m.group(1).split(","):
                    if s.strip():
                        self.ready[int(s)] = now
            elif m := _SERVING.search(message):
                self.port = int(m.group(1))
            if (
                line.get("level") in ("WARNING", "ERROR", "CRITICAL", "TEXT")
                and len(self.errors) < 50
            ):
                self.errors.append(f"{self.identity} {now:.2f}: {message[:300]}")

    async def metrics(self, http: aiohttp.ClientSession) -> list[tuple[str, dict[str, str], float]]:
        if not self.port:
            return []
        async with http.get(f"http://127.0.0.1:{self.port}/metrics") as resp:
            return parse_metrics(await resp.text())

    async def row(self, http: aiohttp.ClientSession) -> dict[str, Any]:
        """What this replica holds and did, now."""
        samples = await self.metrics(http)
        informers: dict[str, dict[str, Any]] = {}
        reconciles = depth = 0.0
        owned = 0
        for name, labels, value in samples:
            inf = labels.get("informer")
            short = name.removeprefix("aioinformer_informer_").removesuffix("_total")
            if inf is not None and name.startswith("aioinformer_informer_") and short in (
                "objects", "bytes_received", "objects_received", "objects_kept",
                "objects_dropped",
            ):  # fmt: skip
                # (summed: two informers may share a name, e.g. the labeler's "pods")
                slot = informers.setdefault(inf, {})
                slot[short] = slot.get(short, 0) + int(value)
            elif name == "aioinformer_informer_shard_info" and inf is not None:
                informers.setdefault(inf, {})["mode"] = labels.get("mode")
            elif name == "aioinformer_reconcile_total":
                reconciles += value
            elif name == "aioinformer_workqueue_depth":
                depth += value
            elif name == "aioinformer_shards_owned":
                owned = int(value)
        stats = proc_stats(self.pid)
        total = {k: sum(i.get(k, 0) for i in informers.values())
                 for k in ("bytes_received", "objects_received", "objects_kept",
                           "objects_dropped")}  # fmt: skip
        received = total["objects_received"]
        return {
            "identity": self.identity,
            **stats,
            "shards_owned": owned,
            "shards_ready": sorted(self.ready),
            "podsets": informers.get(PODSETS_INFORMER, {}).get("objects", 0),
            "pods": informers.get(PODS_INFORMER, {}).get("objects", 0),
            **total,
            "cpu_per_1000_objects": round(1000 * stats["cpu_seconds"] / received, 4)
            if received
            else None,
            "reconciles": int(reconciles),
            "queue_depth": int(depth),
            "informers": informers,
        }

    def signal(self, sig: int) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(sig)

    async def stop(self, timeout: float = 60) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; waits for the exit."""
        if self.proc is None:
            return
        self.signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.signal(signal.SIGKILL)
            await self.proc.wait()
        self.exit_status = self.proc.returncode
        if self._reader is not None:
            await self._reader


def holders(journal: list[list[Any]], lease: str) -> dict[int, tuple[str, float]]:
    """Each shard's current holder by the journal, and since when (the end of the first
    write of its current uninterrupted run of writes naming it)."""
    out: dict[int, tuple[str, float]] = {}
    prefix = f"{lease}-shard-"
    for _t0, t1, _user, _m, resource, _ns, name, _sub, status, holder in journal:
        if resource != "leases" or status >= 300 or not name.startswith(prefix):
            continue
        shard = int(name[len(prefix) :])
        previous = out.get(shard)
        if previous is None or previous[0] != holder:
            out[shard] = (holder or "", t1)
    return out


class Cluster:
    """The sim, the replicas' identities and kubeconfigs, and the shard Leases' history."""

    def __init__(self, sim: Sim, tokens: dict[str, str], podsets: dict[str, str],
                 tmp: Path, args: argparse.Namespace) -> None:  # fmt: skip
        self.sim, self.tokens, self.podsets, self.tmp, self.args = sim, tokens, podsets, tmp, args
        self.shards = args.shards
        bucket_shard = {b: s for s in range(self.shards) for b in shard_buckets(s, self.shards)}
        self.shard_of_podset = {k: bucket_shard[uid_bucket(u)] for k, u in podsets.items()}

    def replica(self, identity: str, lease: str, namespace: str | None = None) -> Replica:
        path = self.tmp / f"{identity}.kubeconfig"
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(orjson.dumps(self.sim.kubeconfig(self.tokens[identity])))
        return Replica(identity, path, lease, self.args, namespace)

    def phase(self, journal: list[list[Any]], lease: str, live: list[Replica]) -> str:
        """Where the shards stand: "stable", every shard held by a live replica that
        logged it ready after taking it, and the shares fair (each live replica holds
        floor or ceil of shards / replicas); "owned", every shard held by a live replica;
        else "moving"."""
        by_id = {r.identity: r for r in live if r.alive}
        held = holders(journal, lease)
        counts = dict.fromkeys(by_id, 0)
        ready = True
        for shard in range(self.shards):
            holder, since = held.get(shard, ("", 0.0))
            replica = by_id.get(holder)
            if replica is None:
                return "moving"
            ready = ready and replica.ready.get(shard, -1.0) >= since
            counts[holder] += 1
        low = self.shards // max(1, len(by_id))
        fair = all(low <= c <= -(-self.shards // len(by_id)) for c in counts.values())
        return "stable" if ready and fair else "owned"

    def stable(self, journal: list[list[Any]], lease: str, live: list[Replica]) -> bool:
        """:meth:`phase` is "stable"."""
        return self.phase(journal, lease, live) == "stable"


async def eventually(check: Any, what: str, timeout: float, interval: float = 0.2) -> float:
    """Poll ``check()`` (async) until true; the seconds it took. TimeoutError naming
    ``what`` after ``timeout`` seconds."""
    t0 = time.monotonic()
    while not await check():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        await asyncio.sleep(interval)
    return time.monotonic() - t0


# -- the scale runs ------------------------------------------------------------------------


async def settle(cluster: Cluster, replicas: list[Replica], lease: str, http: Any,
                 owners: int, pods: int, timeout: float) -> float:  # fmt: skip
    """Wait until the shards are stable, the caches add up and the reconciles settled."""
    last: list[Any] = [None]

    async def check() -> bool:
        for r in replicas:
            if not r.alive:
                raise RuntimeError(f"{r.identity} exited: {r.errors[-5:]}")
        journal = await cluster.sim.sync_journal()
        if not cluster.stable(journal, lease, replicas):
            state[0] = f"shards not stable: holders {holders(journal, lease)}, ready " + str(
                {r.identity: sorted(r.ready) for r in replicas}
            )
            return False
        rows = [await r.row(http) for r in replicas]
        cached = (sum(x["podsets"] for x in rows), sum(x["pods"] for x in rows))
        work = (sum(x["reconciles"] for x in rows), sum(x["queue_depth"] for x in rows))
        done = cached == (owners, pods) and work[1] == 0 and last[0] == work
        last[0] = work
        state[0] = f"cached {cached} of {(owners, pods)}, reconciles and queue {work}: " + str(
            [x["informers"] for x in rows]
        )
        return done

    state = [""]
    try:
        return await eventually(check, "replicas stable and settled", timeout, interval=1.0)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}: {state[0]}") from None


async def scale_run(cluster: Cluster, n: int, mode: str, http: Any, owners: int, pods: int,
                    timeout: float) -> dict[str, Any]:  # fmt: skip
    await cluster.sim.call("gate", on=mode == "server")
    lease = f"scale-{mode}-{n}"
    replicas = [cluster.replica(f"replica-{i}", lease) for i in range(n)]
    t0 = time.monotonic()
    try:
        for r in replicas:
            await r.start()
        seconds = await settle(cluster, replicas, lease, http, owners, pods, timeout)
        rows = [await r.row(http) for r in replicas]
    finally:
        await asyncio.gather(*(r.stop() for r in replicas))
    return {"replicas": n, "mode": mode, "seconds_to_settle": round(time.monotonic() - t0, 1),
            "settled_after_stable": round(seconds, 1), "per_replica": rows,
            "exit_statuses": [r.exit_status for r in replicas],
            "errors": [e for r in replicas for e in r.errors][:20]}  # fmt: skip


async def overhead_run(cluster: Cluster, http: Any, timeout: float) -> dict[str, Any]:
    """A replica that holds no objects (it watches an empty namespace): the fixed RSS."""
    lease = "scale-empty"
    r = cluster.replica("replica-0", lease, namespace="scaleout-empty")
    try:
        await r.start()

        async def ready() -> bool:
            if not r.alive:
                raise RuntimeError(f"the empty replica exited: {r.errors[-5:]}")
            return len(r.ready) == cluster.shards

        await eventually(ready, "the empty replica ready", timeout)
        await asyncio.sleep(2)
        row = await r.row(http)
    finally:
        await r.stop()
    return row


async def labeling_run(cluster: Cluster, http: Any, pods: int, timeout: float) -> dict[str, Any]:
    """One replica (server mode) on unlabeled pods: until its labeler labelled them all."""
    await cluster.sim.call("gate", on=True)
    before = len(await cluster.sim.sync_journal())
    r = cluster.replica("replica-0", "scale-labeling")
    try:
        await r.start()

        async def labeled() -> bool:
            if not r.alive:
                raise RuntimeError(f"the labeling replica exited: {r.errors[-5:]}")
            return (await cluster.sim.call("labeled"))["labeled"] == pods

        seconds = await eventually(labeled, "every pod labelled", timeout, interval=2.0)
        row = await r.row(http)
    finally:
        await r.stop()
    journal = (await cluster.sim.sync_journal())[before:]
    patches = [e for e in journal if e[2] == "replica-0" and e[4] == "pods" and e[3] == "PATCH"]
    ok = sum(e[8] < 300 for e in patches)
    conflicts = sum(e[2] == "replica-0" and e[3] == "POST" and e[8] == 409 for e in journal)
    statuses = sum(e[2] == "replica-0" and e[4] == "podsets" and e[8] < 300 for e in journal)
    return {"seconds": round(seconds, 1), "pods": pods, "patches": len(patches),
            "patches_ok": ok, "creates_409": conflicts, "status_writes": statuses,
            "patches_per_second": round(ok / seconds, 1) if seconds else None,
            "replica": row}  # fmt: skip


def targets(runs: list[dict[str, Any]], overhead_rss: int) -> list[dict[str, Any]]:
    """Each target per mode and N > 1, held or missed, with the figures."""
    out = []
    for mode in ("server", "client"):
        by_n = {r["replicas"]: r["per_replica"] for r in runs if r["mode"] == mode}
        if 1 not in by_n:
            continue
        one = by_n[1][0]
        for n, rows in sorted(by_n.items()):
            if n == 1:
                continue
            worst = {k: max(x[k] for x in rows) for k in
                     ("rss_bytes", "podsets", "pods", "bytes_received", "cpu_seconds")}  # fmt: skip
            limit_rss = 1.2 * one["rss_bytes"] / n + overhead_rss
            checks = [
                ("rss", worst["rss_bytes"], limit_rss,
                 f"max RSS {worst['rss_bytes'] / 2**20:.0f} MiB <= 1.2 x "
                 f"{one['rss_bytes'] / 2**20:.0f}/{n} + {overhead_rss / 2**20:.0f} MiB "
                 f"= {limit_rss / 2**20:.0f} MiB"),
                ("objects", worst["podsets"] + worst["pods"], 1.2 * (one["podsets"] + one["pods"]) / n,
                 f"max objects {worst['podsets'] + worst['pods']} <= 1.2 x "
                 f"{one['podsets'] + one['pods']}/{n} = {1.2 * (one['podsets'] + one['pods']) / n:.0f}"),
            ]  # fmt: skip
            if mode == "server":
                lim = 1.2 * one["bytes_received"] / n
                checks.append(("bytes_received", worst["bytes_received"], lim,
                               f"max bytes {worst['bytes_received'] / 2**20:.1f} MiB <= 1.2/{n} x "
                               f"{one['bytes_received'] / 2**20:.1f} MiB = {lim / 2**20:.1f} MiB"))  # fmt: skip
            smaller = max((m for m in by_n if m < n), default=None)
            if smaller is not None:
                prev = max(x["cpu_seconds"] for x in by_n[smaller])
                checks.append(("cpu_falls", worst["cpu_seconds"], prev,
                               f"busiest replica's CPU {worst['cpu_seconds']:.1f} s < "
                               f"{prev:.1f} s at N={smaller}"))  # fmt: skip
            for name, value, limit, text in checks:
                held = value < limit if name == "cpu_falls" else value <= limit
                out.append({"mode": mode, "replicas": n, "target": name, "value": value,
                            "limit": round(limit, 2), "held": held, "text": text})  # fmt: skip
    return out


# -- the drill -----------------------------------------------------------------------------


def analyse(journal: list[list[Any]], cluster: Cluster, lease: str,
            identities: Iterable[str]) -> dict[str, Any]:  # fmt: skip
    """The writes' safety from the server's journal (see the module docstring)."""
    replicas = set(identities)
    prefix = f"{lease}-shard-"
    history: dict[int, list[tuple[float, float, str]]] = {}
    writes: list[tuple[float, float, str, str, str]] = []  # t0, t1, user, key, what
    conflicts = 0
    for t0, t1, user, method, resource, ns, name, sub, status, holder in journal:
        if resource == "leases" and name.startswith(prefix) and status < 300:
            history.setdefault(int(name[len(prefix) :]), []).append((t0, t1, holder or ""))
            continue
        if user not in replicas or (status >= 300 and not (method == "POST" and status == 409)):
            continue
        if resource == "pods":
            key = f"{ns}/{name.rpartition('-')[0]}"
        elif resource == "podsets":
            key = f"{ns}/{name}"
        else:
            continue
        if method == "POST" and status == 409:
            conflicts += 1
            continue
        if key in cluster.shard_of_podset:
            writes.append((t0, t1, user, key, f"{method} {resource}/{sub}".rstrip("/")))
    unleased = ambiguous = 0
    examples: list[str] = []
    for t0, t1, user, key, what in writes:
        shard = cluster.shard_of_podset[key]
        holder, unsure = "", False
        for a, b, h in history.get(shard, ()):
            if b <= t0:
                holder = h
            elif a < t1 and h != user:
                unsure = True  # a Lease write in flight during this write
        if holder != user:
            if unsure and not holder:
                ambiguous += 1
            else:
                unleased += 1
                if len(examples) < 5:
                    examples.append(f"{user} {what} {key} at {t0:.3f}: shard {shard} "
                                    f"held by {holder or 'nobody'}")  # fmt: skip
    by_key: dict[str, list[tuple[float, float, str]]] = {}
    for t0, t1, user, key, _ in writes:
        by_key.setdefault(key, []).append((t0, t1, user))
    overlapping = 0
    closest = float("inf")
    for items in by_key.values():
        items.sort()
        for (_a0, a1, au), (b0, _b1, bu) in itertools.pairwise(items):
            if au != bu:
                if b0 < a1:
                    overlapping += 1
                closest = min(closest, b0 - a1)
    return {"replica_writes": len(writes), "writes_without_the_lease": unleased,
            "writes_during_a_lease_write": ambiguous, "examples": examples,
            "overlapping_writes_by_two_replicas": overlapping,
            "closest_handoff_seconds": None if closest == float("inf") else round(closest, 3),
            "creates_409": conflicts}  # fmt: skip


async def drill(cluster: Cluster, http: Any, args: argparse.Namespace) -> dict[str, Any]:
    await cluster.sim.call("gate", on=True)
    lease = "drill"
    replicas = [cluster.replica(f"replica-{i}", lease) for i in range(4)]
    all_replicas = list(replicas)
    pods = args.owners * args.pods_per_owner
    timeline: list[dict[str, Any]] = []
    writer: asyncio.subprocess.Process | None = None
    t_start = t_writes = time.monotonic()

    owned_at: list[float | None] = [None]

    async def stable() -> bool:
        phase = cluster.phase(await cluster.sim.sync_journal(), lease, replicas)
        if phase != "moving" and owned_at[0] is None:
            owned_at[0] = time.monotonic()
        return phase == "stable"

    try:
        for r in replicas:
            await r.start()
        await settle(cluster, replicas, lease, http, args.owners, pods, args.timeout)
        if args.writer == "http":
            writer = await spawn_python("bench._scaleoutwriter", env=_env())
            assert writer.stdin is not None
            podset_spec = dict.fromkeys(cluster.podsets, args.pods_per_owner)
            pod_keys = [f"{k}-{i}" for k in cluster.podsets for i in range(args.pods_per_owner)]
            writer.stdin.write(orjson.dumps({
                "url": cluster.sim.url, "token": cluster.tokens["writer"],
                "rate": args.write_rate, "scale_rate": args.scale_rate, "concurrency": 32,
                "pods": pod_keys, "podsets": podset_spec}) + b"\n")  # fmt: skip
            await writer.stdin.drain()
        else:
            await cluster.sim.call("write", rate=args.write_rate, scale_rate=args.scale_rate)
        t_writes = time.monotonic()
        await asyncio.sleep(args.pause)

        async def event(what: str, action: Any) -> None:
            t = time.monotonic()
            await action()
            acted = time.monotonic() - t  # (SIGTERM: until the replica exited)
            owned_at[0] = None
            await asyncio.sleep(0.2)  # (the Leases still name the replica that left)
            try:
                await eventually(stable, what, args.timeout)
                seconds: float | None = round(time.monotonic() - t, 1)
            except TimeoutError:
                seconds = None
            owned = None if owned_at[0] is None else round(owned_at[0] - t, 1)
            timeline.append({"event": what, "at": round(t - t_writes, 1),
                             "action_seconds": round(acted, 1), "seconds_to_owned": owned,
                             "seconds_to_stable": seconds})  # fmt: skip
            print(f"drill: {timeline[-1]}", flush=True)
            await asyncio.sleep(args.pause)

        async def kill() -> None:
            victim = replicas.pop(0)
            victim.signal(signal.SIGKILL)
            await victim.stop()

        async def join() -> None:
            new = cluster.replica("replica-4", lease)
            replicas.append(new)
            all_replicas.append(new)
            await new.start()

        async def term() -> None:
            victim = replicas.pop(0)
            await victim.stop()

        await event("SIGKILL replica-0", kill)
        await event("start replica-4", join)
        await event("SIGTERM replica-1", term)
        if writer is not None:
            assert writer.stdin is not None and writer.stdout is not None
            writer.stdin.write(b"{}\n")
            await writer.stdin.drain()
            written = orjson.loads(await asyncio.wait_for(writer.stdout.readline(), 60))
            await writer.wait()
            writer = None
        else:
            written = await cluster.sim.call("write", rate=0)
        t_end_writes = time.monotonic()

        async def converged() -> bool:
            return not (await cluster.sim.call("converged"))["wrong"]

        try:
            seconds = await eventually(converged, "PodSets converged", args.timeout, 2.0)
        except TimeoutError:
            seconds = None
        final = await cluster.sim.call("converged", full=True)
        rows = [await r.row(http) for r in replicas]
    finally:
        if writer is not None:
            writer.kill()
            await writer.wait()
        await asyncio.gather(*(r.stop() for r in all_replicas))
    journal = await cluster.sim.sync_journal()
    safety = analyse([e for e in journal if e[0] >= t_start], cluster, lease,
                     (r.identity for r in all_replicas))  # fmt: skip
    changes: dict[str, list[tuple[float, str]]] = {}
    prefix = f"{lease}-shard-"
    for _t0, t1, _u, _m, resource, _ns, name, _sub, status, holder in journal:
        if resource == "leases" and name.startswith(prefix) and status < 300:
            seen = changes.setdefault(name[len(prefix) :], [])
            if not seen or seen[-1][1] != holder:
                seen.append((round(t1 - t_writes, 2), holder))
    return {
        "replicas": 4, "writer": args.writer, "write_rate_offered": args.write_rate,
        "scale_rate": args.scale_rate,
        "writes": written["writes"], "write_errors": written["errors"],
        "write_seconds": written["seconds"],
        "write_rate_achieved": round(written["writes"] / written["seconds"], 1),
        "events": timeline,
        "seconds_to_converge_after_writes": None if seconds is None else round(seconds, 1),
        "converge_wait_started_after": round(time.monotonic() - t_end_writes, 1),
        "never_reconciled": len(final["wrong"]), "not_converged": dict(list(final["wrong"].items())[:10]),
        "pods_beyond_spec": final["extra"], "pods_unlabeled": final["unlabeled"],
        **safety,
        "per_replica_at_end": rows,
        "lease_holders": changes,
        "ready_logged": {r.identity: {s: round(t - t_writes, 2) for s, t in sorted(r.ready.items())}
                         for r in all_replicas},
        "errors": [e for r in all_replicas for e in r.errors][:20],
    }  # fmt: skip


# -- main ----------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict[str, Any]:
    pods = args.owners * args.pods_per_owner
    users = [f"replica-{i}" for i in range(5)] + ["writer"]
    out: dict[str, Any] = {
        "command": "python bench/scaleout.py " + " ".join(args.argv),
        "machine": machine_info(),
        "load_before": os.getloadavg(),
        "owners": args.owners, "pods_per_owner": args.pods_per_owner, "pods": pods,
        "shards": args.shards, "labeled_at_start": args.labeled,
        "lease_timing": {"lease_duration": args.lease_duration,
                         "renew_deadline": args.renew_deadline, "retry_period": args.retry_period},
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="scaleout-") as tmp:
        async with Sim() as sim, aiohttp.ClientSession() as http:
            setup = await sim.call("setup", owners=args.owners, pods=args.pods_per_owner,
                                   namespaces=min(20, args.owners), labeled=args.labeled,
                                   users=users)  # fmt: skip
            print(f"sim: {setup['pods']} pods in {setup['seconds']} s", flush=True)
            out["populate_seconds"] = setup["seconds"]
            cluster = Cluster(sim, setup["tokens"], setup["podsets"], Path(tmp), args)
            if not args.labeled:
                out["labeling"] = await labeling_run(cluster, http, pods, args.timeout)
                print(f"labeling: {out['labeling']['seconds']} s, "
                      f"{out['labeling']['patches_ok']} patches", flush=True)  # fmt: skip
            if args.drill:
                out["drill"] = await drill(cluster, http, args)
            else:
                out["overhead"] = await overhead_run(cluster, http, args.timeout)
                print(f"overhead: RSS {out['overhead']['rss_bytes'] / 2**20:.0f} MiB", flush=True)
                runs = []
                for mode in args.modes:
                    for n in args.replicas:
                        result = await scale_run(cluster, n, mode, http, args.owners, pods,
                                                 args.timeout)  # fmt: skip
                        runs.append(result)
                        for row in result["per_replica"]:
                            print(f"{mode} N={n} {row['identity']}: RSS "
                                  f"{row['rss_bytes'] / 2**20:6.0f} MiB  podsets {row['podsets']:4} "
                                  f"pods {row['pods']:7}  bytes {row['bytes_received'] / 2**20:8.1f} MiB  "
                                  f"recv {row['objects_received']:7} drop {row['objects_dropped']:7}  "
                                  f"cpu {row['cpu_seconds']:6.1f} s  rec {row['reconciles']}",
                                  flush=True)  # fmt: skip
                out["runs"] = runs
                out["targets"] = targets(runs, out["overhead"]["rss_bytes"])
                for t in out["targets"]:
                    print(f"{'held  ' if t['held'] else 'MISSED'} {t['mode']} N={t['replicas']}: "
                          f"{t['text']}", flush=True)  # fmt: skip
            out["sim"] = await sim.call("stats")
    out["load_after"] = os.getloadavg()
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--owners", type=int, default=200)
    p.add_argument("--pods-per-owner", type=int, default=1000)
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--modes", nargs="+", choices=("server", "client"),
                   default=["server", "client"])  # fmt: skip
    p.add_argument(
        "--labeled",
        action="store_true",
        help="pods carry the bucket label from the start (no labeling run)",
    )
    p.add_argument("--drill", action="store_true", help="the rebalancing drill instead")
    p.add_argument("--write-rate", type=float, default=2000.0)
    p.add_argument("--scale-rate", type=float, default=5.0)
    p.add_argument(
        "--writer",
        choices=("http", "inproc"),
        default="http",
        help="the drill's writes: a process over HTTP, or committed by KubeSim itself",
    )
    p.add_argument(
        "--pause",
        type=float,
        default=10.0,
        help="seconds of writes before the first drill event and after each",
    )
    p.add_argument("--lease-duration", type=float, default=15.0)
    p.add_argument("--renew-deadline", type=float, default=10.0)
    p.add_argument("--retry-period", type=float, default=2.0)
    p.add_argument("--timeout", type=float, default=600.0, help="bound of each wait")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    result = asyncio.run(run(args))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()

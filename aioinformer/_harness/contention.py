"""The contention scenario (kubernetes/kubernetes#130767), reproduced: one workload, four caches.

:func:`run_contention` starts KubeSim in its own process (:class:`SimProcess`), creates
``owners`` x ``pods_per_owner`` StatefulSet-like pods, runs the scheduler/kubelet
emulation, and then, for each configuration in turn, starts a fresh informer process
(:mod:`.informer_process`) that syncs the pods and runs ``readers`` controller-like readers
fetching one owner's pods back to back while the sim makes kubelet status writes at
``rate`` per second for ``duration`` seconds. Configurations are ``STORE+READ``:

* ``locked+scan``: a dict behind a read/write lock, readers list every pod under the read
  lock (the incident's situation: client-go's ThreadSafeStore and a lister without index);
* ``locked+index``: the same store, readers use the controller-uid index (upstream's fix);
* ``snapshot+scan``: immutable snapshots, readers scan every pod (no lock to hold);
* ``snapshot+index``: immutable snapshots and the index (this project).

With ``examples_dir`` (a checkout's ``examples/``), each informer process also runs the
example operators PodSet and NodeAgent on the same shared pods informer, once with their
freshness protection (expectations + read-your-writes gate) and once without, each in its
own namespace, and counts their 409 answers and extra pods.

Figures per configuration (:class:`ConfigResult`, the keys of ``--json``): staleness of
every pod change (sim commit time -> first published state containing it: p50/p99/max,
and split into its wire and informer parts),
FIFO depth over time and its peak, writer throughput (deltas applied per second of load),
reader latency p50/p99 and calls completed, 409s and extra pods, the informer process's
RSS and sync time.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from aioinformer._core.errors import ConfigError
from aioinformer._harness.procstats import machine_info
from aioinformer._harness.simproc import SimProcess, SimProcessError, spawn_python

__all__ = [
    "CONFIGURATIONS",
    "ConfigResult",
    "ContentionOptions",
    "ContentionReport",
    "run_contention",
]

TOKEN_ENV = "AIOINFORMER_CONTENTION_TOKEN"
"""How the parent hands the sim's token to an informer process (never on a command line)."""

CONFIGURATIONS = ("locked+scan", "locked+index", "snapshot+scan", "snapshot+index")
"""Every configuration, in the order they run: the incident's first, this project's last."""


@dataclass(frozen=True)
class ContentionOptions:
    """The workload and what to run. Defaults are the incident's full scale (200 x 1000)."""

    owners: int = 200
    """StatefulSet-like owners."""
    pods_per_owner: int = 1000
    """Pods per owner."""
    readers: int = 4
    """Controller-like readers per informer process."""
    rate: float = 2000.0
    """Kubelet status writes per second offered by the sim during each load phase."""
    duration: float = 60.0
    """Seconds of load per configuration."""
    nodes: int = 100
    """Nodes in the cluster (Node objects; the emulation schedules on them)."""
    namespaces: int = 20
    """Namespaces the owners are spread over."""
    configurations: Sequence[str] = CONFIGURATIONS
    """Which configurations to run, in order."""
    chunk: int = 1000
    """A scanning reader lets the loop run after this many objects."""
    locked_batch: int = 1
    """Deltas the locked baseline's writer applies per write lock: 1 as client-go's
    DeltaFIFO Pop in the incident's kube-controller-manager (one object per store lock), 1000
    as RealFIFO PopBatch since 1.33. The snapshot store always takes up to 1000."""
    sample_interval: float = 0.25
    """Seconds between samples of FIFO depth and staleness."""
    examples_dir: str | None = None
    """A checkout's ``examples/``: run the example operators too (None: do not)."""
    podsets: int = 4
    """PodSets per operator namespace (with examples_dir)."""
    replicas: int = 10
    """Replicas of each PodSet."""
    drain_timeout: float = 600.0
    """Longest wait for an informer to catch up after the load stops."""
    settle_timeout: float = 60.0
    """Longest wait for the protected operators to converge after the load."""

    def __post_init__(self) -> None:
        unknown = [c for c in self.configurations if c not in CONFIGURATIONS]
        if unknown:
            raise ConfigError(f"unknown configurations {unknown}; choose from {CONFIGURATIONS}")
        for name in ("owners", "pods_per_owner", "readers", "nodes", "namespaces", "locked_batch"):
            if getattr(self, name) < (0 if name == "readers" else 1):
                raise ConfigError(f"{name} must be positive, not {getattr(self, name)}")
        if self.duration <= 0 or self.rate < 0:
            raise ConfigError("duration must be > 0 and rate >= 0")


@dataclass
class ConfigResult:
    """The figures of one configuration (times in seconds)."""

    config: str
    """``STORE+READ``, e.g. ``snapshot+index``."""
    objects: int
    """Pods in the informer's cache at the end."""
    sync_seconds: float
    """Initial list + store build."""
    changes: int
    """Pod changes committed by the sim during the load phase."""
    offered_rate: float
    """Sim writes per second asked for."""
    sim_rate: float
    """Pod changes per second the sim committed."""
    staleness_p50: float
    staleness_p99: float
    staleness_max: float
    """Sim commit time of a change -> first published state that contains it."""
    fifo_peak: int
    """Largest FIFO depth during the load, as the FIFO's puts counted it (exact with the
    pipeline thread too, which drains the FIFO between the depth samples)."""
    writer_throughput: float
    """Deltas applied per second of load."""
    reader_latency_p50: float
    reader_latency_p99: float
    reader_calls: int
    """Reader fetches completed during the load."""
    rss_bytes: int
    """Resident memory of the informer process at the end."""
    wire_p50: float = 0.0
    wire_p99: float = 0.0
    """The part of staleness before the informer: sim commit -> its watcher read the
    event (the sim's write path, the socket, the informer process's loop)."""
    informer_p50: float = 0.0
    informer_p99: float = 0.0
    """The part in the informer: its watcher read the event -> the first published state
    that contains it (FIFO wait and store writer)."""
    conflicts_409: dict[str, int] = field(default_factory=dict)
    """409 answers per operator (``podset/protected`` ...), with examples_dir."""
    extra_pods: dict[str, int] = field(default_factory=dict)
    """Pods beyond what the owner asked for, per operator, with examples_dir."""
    operators_converged: bool | None = None
    """Whether the protected operators converged after the load (None: not run)."""
    fifo_depth: list[tuple[float, int]] = field(default_factory=list)
    """(seconds since load start, depth) samples."""
    staleness_series: list[tuple[float, float]] = field(default_factory=list)
    """(seconds since load start, the largest staleness of the changes committed in the
    sample interval that ends then)."""
    lag_series: list[tuple[float, float]] = field(default_factory=list)
    """(seconds since load start, how long the oldest delta not yet applied had waited
    then: how far behind the cache was, sampled)."""
    own_latency_series: list[tuple[float, float]] = field(default_factory=list)
    """(seconds since load start, the informer's own latency: the longest time from its
    watcher's read of an event received in the sample interval that ends then to the
    publish of the first snapshot that holds it), from the ``on_receive`` and
    ``on_publish`` hooks."""


@dataclass
class ContentionReport:
    """A whole run: the options, the machine, and one result per configuration."""

    options: dict[str, Any]
    machine: dict[str, Any]
    """CPUs, memory, Python and package versions (:func:`machine_info`)."""
    pods: int
    populate_seconds: float
    sim_rss_bytes: int
    results: list[ConfigResult]
    command: str = ""
    """The command line that produced the report (set by the CLI)."""

    def to_json(self) -> bytes:
        """The report as JSON (``--json``)."""
        return orjson.dumps(asdict(self), option=orjson.OPT_INDENT_2)


Progress = Callable[[str, dict[str, Any]], None]
"""``progress(config, info)``: called with the informer process's progress lines."""


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def staleness_of(
    commits: Sequence[tuple[int, float]], publishes: Sequence[tuple[float, int]]
) -> list[tuple[float, float]]:
    """For each commit (rv, time) that some publish covers: (commit time, time of the
    first publish whose RV is at least rv, minus the commit time). Publishes are in
    order, with non-decreasing RVs."""
    rvs = [rv for _, rv in publishes]
    out: list[tuple[float, float]] = []
    for rv, committed in commits:
        i = bisect.bisect_left(rvs, rv)
        if i < len(publishes):
            out.append((committed, max(0.0, publishes[i][0] - committed)))
    return out


def own_latencies(
    receipts: Sequence[tuple[int, float]], publishes: Sequence[tuple[float, int]]
) -> list[tuple[float, float]]:
    """For each receipt (rv, time) that some publish covers: (receipt time, time of the
    first publish whose RV is at least rv, minus the receipt time)."""
    return staleness_of(receipts, [(t, rv) for t, rv in publishes])


def worst_per_interval(
    timed: Sequence[tuple[float, float]], start: float, step: float
) -> list[tuple[float, float]]:
    """(end of each ``step``-long interval since ``start``, the largest value timed in it)
    from (time, value) pairs, for the intervals that have one."""
    worst: dict[int, float] = {}
    for t, value in timed:
        bucket = int((t - start) / step) + 1
        worst[bucket] = max(worst.get(bucket, 0.0), value)
    return [(round(b * step, 3), round(v, 4)) for b, v in sorted(worst.items())]


def split_staleness(
    commits: Sequence[tuple[int, float]],
    receipts: Sequence[tuple[int, float]],
    publishes: Sequence[tuple[float, int]],
) -> tuple[list[float], list[float]]:
    """Per commit (rv, time) that was received and published: the wire part (first
    receipt of that rv minus the commit time) and the informer part (first publish whose
    RV is at least rv minus the receipt). Receipts are (rv, time), publishes (time, rv)."""
    first: dict[int, float] = {}
    for rv, t in receipts:
        first.setdefault(rv, t)
    rvs = [rv for _, rv in publishes]
    wire: list[float] = []
    informer: list[float] = []
    for rv, committed in commits:
        received = first.get(rv)
        i = bisect.bisect_left(rvs, rv)
        if received is None or i >= len(publishes):
            continue
        wire.append(max(0.0, received - committed))
        informer.append(max(0.0, publishes[i][0] - received))
    return wire, informer


async def run_contention(
    options: ContentionOptions, progress: Progress | None = None
) -> ContentionReport:
    """Run the scenario (see the module docstring) and return its figures."""
    say = progress or (lambda _c, _i: None)
    async with SimProcess(history_size=max(100_000, int(options.rate * 20))) as sim:
        say("setup", {"step": "populate", "pods": options.owners * options.pods_per_owner})
        await sim.add_nodes(options.nodes)
        made = await sim.populate(
            options.owners,
            options.pods_per_owner,
            namespaces=options.namespaces,
            nodes=options.nodes,
        )
        await sim.start_cluster(start_delay=0.5, delete_grace_cap=0.2)
        results = []
        for config in options.configurations:
            results.append(await _run_config(sim, config, options, say))
        sim_stats = await sim.stats()
    return ContentionReport(
        options=asdict(options),
        machine=machine_info(),
        pods=made["pods"],
        populate_seconds=made["seconds"],
        sim_rss_bytes=sim_stats["rss_bytes"],
        results=results,
    )


async def _run_config(
    sim: SimProcess, config: str, options: ContentionOptions, say: Progress
) -> ConfigResult:
    store, read = config.split("+")
    child = await spawn_python("aioinformer._harness.informer_process", env={TOKEN_ENV: sim.token})
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def send(msg: dict[str, Any]) -> None:
        stdin.write(orjson.dumps(msg) + b"\n")
        await stdin.drain()

    async def until(key: str) -> dict[str, Any]:
        while line := await stdout.readline():
            msg: dict[str, Any] = orjson.loads(line)
            if "progress" in msg:
                say(config, msg["progress"])
            elif key in msg:
                return msg
        raise SimProcessError(
            f"{config}: the informer process exited (status {await child.wait()})"
        )

    try:
        await send(
            {
                "url": sim.url,
                "store": store,
                "read": read,
                "readers": options.readers,
                "owners": options.owners,
                "namespaces": options.namespaces,
                "chunk": options.chunk,
                "locked_batch": options.locked_batch,
                "sample_interval": options.sample_interval,
                "examples_dir": options.examples_dir,
                "podsets": options.podsets,
                "replicas": options.replicas,
                "tag": config.replace("+", "-"),
                "drain_timeout": options.drain_timeout,
                "settle_timeout": options.settle_timeout,
            }
        )
        say(config, {"step": "sync"})
        synced = await until("synced")
        await sim.record()
        await sim.churn(options.rate)
        await send({"start": options.duration})
        await until("loaded")
        await sim.churn(0)
        # the last pod write: a later write of another kind reaches a pods informer only
        # with a bookmark (up to the sim's bookmark interval later)
        target = (await sim.stats())["pods_rv"]
        say(config, {"step": "drain"})
        await send({"drain_to": target})
        result = (await until("result"))["result"]
        commits = await sim.commits()
    finally:
        if child.returncode is None:
            stdin.close()
            try:
                await asyncio.wait_for(child.wait(), 30)
            except TimeoutError:
                child.kill()
                await child.wait()
    return summarise(config, options, synced, result, commits)


def summarise(
    config: str,
    options: ContentionOptions,
    synced: dict[str, Any],
    raw: dict[str, Any],
    commits: list[tuple[int, float]],
) -> ConfigResult:
    """Turn one informer process's raw measurements and the sim's commit log into figures."""
    t_start, t_end = raw["t_start"], raw["t_end"]
    in_load = [(rv, t) for rv, t in commits if t_start <= t <= t_end]
    timed = staleness_of(in_load, [(t, rv) for t, rv in raw["publishes"]])
    stale = [s for _, s in timed]
    wire, informer = split_staleness(in_load, raw.get("receipts", []), raw["publishes"])
    step = options.sample_interval
    received = [(rv, t) for rv, t in raw.get("receipts", []) if t_start <= t <= t_end]
    own = own_latencies(received, raw["publishes"])
    latencies = raw["latencies"]
    samples = raw["samples"]
    span = max(1e-9, t_end - t_start)
    return ConfigResult(
        config=config,
        objects=raw["objects"],
        sync_seconds=synced["synced"],
        changes=len(in_load),
        offered_rate=options.rate,
        sim_rate=len(in_load) / span,
        staleness_p50=percentile(stale, 0.50),
        staleness_p99=percentile(stale, 0.99),
        staleness_max=max(stale, default=0.0),
        # the FIFO's own peak over the load (its puts count it): samples of the depth
        # miss what a pipeline thread drains between them
        fifo_peak=max([int(raw.get("fifo_peak", 0))] + [int(s[1]) for s in samples]),
        writer_throughput=raw["applied"] / span,
        reader_latency_p50=percentile(latencies, 0.50),
        reader_latency_p99=percentile(latencies, 0.99),
        reader_calls=len(latencies),
        rss_bytes=raw["rss_bytes"],
        wire_p50=percentile(wire, 0.50),
        wire_p99=percentile(wire, 0.99),
        informer_p50=percentile(informer, 0.50),
        informer_p99=percentile(informer, 0.99),
        conflicts_409=raw.get("conflicts_409", {}),
        extra_pods=raw.get("extra_pods", {}),
        operators_converged=raw.get("operators_converged"),
        fifo_depth=[(round(s[0] - t_start, 3), int(s[1])) for s in samples],
        lag_series=[(round(s[0] - t_start, 3), round(float(s[2]), 4)) for s in samples],
        staleness_series=worst_per_interval(timed, t_start, step),
        own_latency_series=worst_per_interval(own, t_start, step),
    )

"""Deterministic simulation of an operator's runtime: many replicas, one KubeSim, one
virtual clock, a seeded schedule of faults, invariants checked at every step.

:class:`Simulation` runs an operator (its ``build(manager)``, what ``python -m aioinformer
run`` takes) as several replicas in one process, each a :class:`~aioinformer.Manager` with
leader election or sharding, against an in-process KubeSim, all on one
:class:`~aioinformer.testing._virtual_loop.VirtualLoop`: client-go's Lease durations pass
in microseconds, and nothing but the seed decides what happens when. The seed draws a plan
(:mod:`~aioinformer.testing._sim_plan`): the workload's writes (a :class:`Workload` says how
to make, change and delete the operator's objects), and the faults between the requests
and their answers (lost answers after the write is applied, cut watches and connections,
Lease writes and deletions by a third party, frozen replicas, clock-rate differences,
duplicate identities, non-Lease bodies answered 200 to Lease requests). The invariants
(:mod:`~aioinformer.testing._sim_invariants`) are checked from the server's write log as
each write lands, at each reconcile's start and every 0.1 virtual seconds. After the plan
the faults are lifted and the run waits (virtual time) until every object is reconciled,
then stops the replicas gracefully.

Determinism: the replicas talk real HTTP to KubeSim (aiohttp's client and server, the
library's whole client stack) over in-memory connections, so every byte is a callback in
the loop's order; no thread runs (executor jobs run inline); futures and tasks hash by
serial number; the global :mod:`random` generator and :func:`uuid.uuid4` (KubeSim's uids)
are seeded from the seed for the run and restored after; every clock is the loop's. So one
seed is one run: :attr:`SimulationResult.trace_digest` (the server's write log) is the same
each time, and :attr:`SimulationResult.replay` is the command that plays it again. What is
not covered: wall-clock readings written into objects (``creationTimestamp``, a Lease's
``renewTime``) differ, and nothing in the runtime reads them; code that starts threads or
does real I/O of its own (a reconcile calling another service) is outside the simulation.

Example::

    from aioinformer.testing import Simulation, Workload

    result = Simulation(build, workload, seed=7).run()
    assert result.ok, result.report()
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import random
import ssl
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from kubernetes_asyncio.client import ApiClient

from aioinformer._cache.informer import Informer
from aioinformer._coordination.lease import micro_time
from aioinformer._coordination.sharding import shard_of
from aioinformer._core.shardbuckets import shard_buckets, uid_bucket
from aioinformer._runtime.controller import Controller, Reconciler
from aioinformer._runtime.manager import LeaderElection, Manager, Sharding
from aioinformer._runtime.target import BuildFunction, build_manager
from aioinformer.testing._helpers import crd_resource, load_crd
from aioinformer.testing._memory_network import MemoryNetwork, serve
from aioinformer.testing._sim_invariants import (
    INVARIANTS,
    SAMPLE_PERIOD,
    Invariants,
    Violation,
)
from aioinformer.testing._sim_plan import (
    FAULT_KINDS,
    RUN_FAULTS,
    ReplicaSpec,
    SimulationPlan,
    Step,
    draw_plan,
)
from aioinformer.testing._sim_workload import REPLICA_SETS, Workload, build_replica_sets
from aioinformer.testing._virtual_loop import Node, Runaway, VirtualLoop
from kubesim import KubeSim
from kubesim.registry.store import Api
from kubesim.server.faults import RequestFault, RequestInfo

__all__ = ["Simulation", "SimulationResult"]

_WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})
_NOT_A_LEASE = orjson.dumps(
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "proxy", "namespace": "x"}}
)
MAX_STEPS = 2_000_000
"""Event-loop iterations one seed may take (a normal seed takes a few tens of thousands):
beyond, the run ends with a ``runaway`` violation (something ran without waiting)."""
MIN_LATENCY = 0.001
"""Seconds every connection delivers late, each way, at the least (a LAN's): work costs
virtual time, so a loop of requests cannot keep the clock still while a backoff waits."""
_SETTLE_POLL = 1.0
_STOP_TIMEOUT = 120.0


@dataclass
class SimulationResult:
    """What one seed did, what it broke and how to replay it."""

    seed: int
    """The seed played."""
    plan_digest: str
    """The plan's digest (:attr:`SimulationPlan.digest`)."""
    trace_digest: str
    """sha256 of the server's write log (every write: its RV, virtual time, writer, object,
    operation; an Event's name without its wall-clock suffix), first 12 hex digits: a
    replay of the seed gives the same."""
    coordination: str
    """"leader" or "shards"."""
    replicas: int
    """How many replicas ran."""
    faults: dict[str, int]
    """Fault steps played, by kind (run-wide kinds count 1)."""
    violations: list[Violation]
    """Every broken invariant, in the order it broke."""
    overlap_seconds: float
    """Seconds two replicas held one Lease at once, by their own clocks (sampled)."""
    conflicting_writes: int
    """Writes a replica made for a key while another replica held its Lease."""
    duplicate_children: int
    """Children beyond what their primary ever asked for."""
    stale_reconciles: int
    """Reconciles that started on a snapshot older than the replica's last write."""
    writes: int
    """Writes the server applied."""
    requests: int
    """Requests the server received."""
    reconciles: int
    """Reconciles run, on all replicas."""
    virtual_seconds: float
    """How long the run lasted on the virtual clock."""
    real_seconds: float
    """How long it took."""
    replay: str
    """The command line that plays this seed again."""
    notes: list[str] = field(default_factory=list)
    """What else to know (a replica's error, a run cut short)."""

    @property
    def ok(self) -> bool:
        """No invariant broken."""
        return not self.violations

    @property
    def broken(self) -> list[str]:
        """The invariants broken, in :data:`INVARIANTS` order."""
        seen = {v.invariant for v in self.violations}
        return [i for i in INVARIANTS if i in seen]

    def report(self, limit: int = 20) -> str:
        """A few lines: the verdict, the figures, the first ``limit`` violations, the
        replay command."""
        verdict = "ok" if self.ok else "BROKEN: " + ", ".join(self.broken)
        faults = ", ".join(f"{k}={n}" for k, n in sorted(self.faults.items())) or "none"
        lines = [
            f"seed {self.seed} ({self.coordination}, {self.replicas} replicas, plan "
            f"{self.plan_digest}, trace {self.trace_digest}): {verdict}",
            f"  faults: {faults}",
            f"  overlap {self.overlap_seconds:g} s, conflicting writes "
            f"{self.conflicting_writes}, duplicate children {self.duplicate_children}, "
            f"stale reconciles {self.stale_reconciles}; {self.writes} writes, "
            f"{self.requests} requests, {self.reconciles} reconciles, "
            f"{self.virtual_seconds:.0f} virtual s in {self.real_seconds:.2f} s",
        ]
        lines += [f"  {v}" for v in self.violations[:limit]]
        if len(self.violations) > limit:
            lines.append(f"  ... and {len(self.violations) - limit} more")
        lines += [f"  note: {n}" for n in self.notes]
        lines.append(f"  replay: {self.replay}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Simulation:
    """One seeded run of an operator's replicas (see the module docstring).

    Args:
        build: the operator's ``build(manager)`` (a coroutine function is awaited).
        workload: its objects, as the simulation writes and checks them.
        seed: draws the plan: the same seed and settings, the same run.
        replicas: how many replicas run it.
        coordination: "leader", "shards" or "shard-caches" (None: the seed chooses
            "leader" or "shards").
        duration: virtual seconds of workload and faults.
        settle: virtual seconds allowed, after the faults are lifted, for every object to
            be reconciled.
        faults: the fault kinds the seeds may play (:data:`FAULT_KINDS`).
        without: fault kinds removed from the seed's plan, everything else the same (to
            find which faults a failure needs).
        target: the command-line options that name the operator for
            :attr:`SimulationResult.replay` (``--target FILE.py:build``, and ``--workload
            NAME`` when its Workload is not named ``WORKLOAD``); empty: found from
            ``build`` and ``workload`` when they are attributes of an importable module
            (``--target package.module:build``), none for the reference operator.
        max_steps: event-loop iterations the run may take before it ends with a
            ``runaway`` violation.
    """

    build: BuildFunction
    workload: Workload
    seed: int
    replicas: int = 3
    coordination: str | None = None
    duration: float = 60.0
    settle: float = 120.0
    faults: Collection[str] = FAULT_KINDS
    without: Collection[str] = ()
    target: str = ""
    max_steps: int = MAX_STEPS

    @classmethod
    def reference(cls, seed: int, **options: Any) -> Simulation:
        """The simulation of the reference operator (a ReplicaSet in miniature: see
        :mod:`~aioinformer.testing._sim_workload`), what ``python -m aioinformer soak
        --simulation`` and the test suite run."""
        return cls(build_replica_sets, REPLICA_SETS, seed, **options)

    def plan(self) -> SimulationPlan:
        """The plan the seed stands for."""
        plan = draw_plan(
            self.seed,
            replicas=self.replicas,
            coordination=self.coordination,
            duration=self.duration,
            objects=self.workload.objects,
            faults=self.faults,
        )
        return plan.without(self.without) if self.without else plan

    @property
    def command(self) -> str:
        """The command line that plays this simulation."""
        parts = ["python -m aioinformer soak --simulation"]
        target = self.target or _target_of(self.build, self.workload)
        if target:
            parts.append(target)
        parts.append(f"--seed {self.seed}")
        defaults = Simulation(self.build, self.workload, self.seed)
        if self.replicas != defaults.replicas:
            parts.append(f"--replicas {self.replicas}")
        if self.coordination is not None:
            parts.append(f"--coordination {self.coordination}")
        if self.duration != defaults.duration:
            parts.append(f"--duration {self.duration:g}")
        if self.settle != defaults.settle:
            parts.append(f"--settle {self.settle:g}")
        if set(self.faults) != set(FAULT_KINDS):
            parts.append(f"--faults {','.join(sorted(self.faults))}")
        if self.without:
            parts.append(f"--without {','.join(sorted(self.without))}")
        if self.max_steps != MAX_STEPS:
            parts.append(f"--max-steps {self.max_steps}")
        return " ".join(parts)

    def run(self) -> SimulationResult:
        """Play the seed on a fresh virtual-time loop (not inside a running loop) and
        check every invariant; returns the result (an invariant broken is a result, not an
        exception)."""
        plan = self.plan()
        started = time.perf_counter()
        loop = VirtualLoop(max_steps=self.max_steps)
        try:
            with _seeded(plan.seed):
                run = _Run(self, plan, loop)
                try:
                    result = loop.run_until_complete(run.execute())
                except Runaway as exc:
                    result = run.abandon(exc)
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        result.real_seconds = round(time.perf_counter() - started, 3)
        return result


@contextlib.contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """The process-wide generators the run draws from (the global :mod:`random`, KubeSim's
    uids), seeded from ``seed`` while the block runs, restored after."""
    state = random.getstate()
    uuid4 = uuid.uuid4
    uids = random.Random(f"uids-{seed}")
    random.seed(f"simulation-{seed}")
    uuid.uuid4 = lambda: uuid.UUID(int=uids.getrandbits(128), version=4)
    try:
        yield
    finally:
        uuid.uuid4 = uuid4
        random.setstate(state)


@contextlib.contextmanager
def _cheap_tls() -> Iterator[None]:
    """kubernetes_asyncio loads the system's CA bundle into a TLS context for each client
    (about 50 ms); in memory no TLS is spoken, so its clients get a bare context."""
    create = ssl.create_default_context
    ssl.create_default_context = lambda *a, **k: ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        yield
    finally:
        ssl.create_default_context = create


class _Scheduler:
    """KubeSim's per-request fault scheduler: what each replica's next requests suffer."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.lost_writes: Counter[tuple[str, str]] = Counter()  # (user, verb): answers to lose
        self.lost_renewals: Counter[str] = Counter()
        self.misrouted: dict[str, float] = {}

    def decide(self, info: RequestInfo) -> RequestFault | None:
        lease = "/leases" in info.path
        user = info.user
        if lease and self.misrouted.get(user, -1.0) > self.clock():
            return RequestFault.raw(_NOT_A_LEASE)
        if info.verb not in _WRITE_VERBS:
            return None
        if lease:
            if self.lost_renewals[user] > 0:
                self.lost_renewals[user] -= 1
                return RequestFault.lost()
            return None
        for whose in (user, _ANYONE):
            for verb in (info.verb, _ANY_VERB):
                if self.lost_writes[whose, verb] > 0:
                    self.lost_writes[whose, verb] -= 1
                    return RequestFault.lost()
        return None

    def lift(self) -> None:
        self.lost_writes.clear()
        self.lost_renewals.clear()
        self.misrouted.clear()


class _TrackedManager(Manager):
    """A manager whose controllers of the workload's primaries report every reconcile to
    the invariants."""

    def __init__(
        self, *args: Any, replica: str, invariants: Invariants, primary: tuple[str, str],
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        self._replica = replica
        self._invariants = invariants
        self._primary = primary
        self.reconciles = 0

    def controller(
        self, name: str, reconcile: Reconciler, *, primary: Informer, **kwargs: Any
    ) -> Controller:
        if (primary.group, primary.plural) == self._primary:
            reconcile = self._tracked(reconcile, primary)
        return super().controller(name, reconcile, primary=primary, **kwargs)

    def _tracked(self, reconcile: Reconciler, primary: Informer) -> Reconciler:
        invariants, replica = self._invariants, self._replica

        async def tracked(key: str) -> Any:
            self.reconciles += 1
            obj = primary.snapshot().get(key)
            rv = obj.rv if obj is not None else None
            invariants.reconcile_started(replica, key, self.factory.informers, rv)
            ok = False
            try:
                result = await reconcile(key)
                ok = True
                return result
            finally:
                invariants.reconcile_ended(key, rv, ok)

        return tracked


@dataclass
class _Replica:
    spec: ReplicaSpec
    node: Node
    manager: _TrackedManager
    api: Any
    task: asyncio.Task[None] | None = None
    context: Any = None


class _Run:
    def __init__(self, simulation: Simulation, plan: SimulationPlan, loop: VirtualLoop) -> None:
        self.simulation = simulation
        self.workload = simulation.workload
        self.plan = plan
        self.loop = loop
        self.rng = random.Random(f"workload-{plan.seed}")
        self.faults: Counter[str] = Counter({k: 1 for k in plan.faults & RUN_FAULTS})
        self.notes: list[str] = []
        self.replicas: list[_Replica] = []
        self.start = 0.0
        self.scheduler = _Scheduler(lambda: self.loop.virtual_time)
        self.lag_until = 0.0

    def now(self) -> float:
        return self.loop.virtual_time - self.start

    async def execute(self) -> SimulationResult:
        loop, workload = self.loop, self.workload
        async with KubeSim(bookmark_interval=60.0) as sim:
            self.sim = sim
            sim.mvcc.clock = sim.faults.clock = loop.time  # (no node here: the virtual time)
            runner = serve(sim.server.make_app())
            await runner.setup()
            try:
                assert runner.server is not None
                self.network = MemoryNetwork(loop, runner.server)
                await self._install()
                self.invariants = self._invariants()
                sim.mvcc.on_commit.append(self.invariants.committed)
                for name in self.plan.primaries:  # (in the write log: what each asks for)
                    self._create(name)
                sim.faults.scheduler = self.scheduler.decide
                self.start = loop.virtual_time
                for spec in self.plan.replicas:
                    await self._start(spec)
                sampler = asyncio.ensure_future(self._sample())
                try:
                    await self._play()
                    self._lift()
                    await self._settle()
                finally:
                    sampler.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await sampler
                await self._stop()
            finally:
                sim.faults.scheduler = None
                await runner.cleanup()
            return self._result(workload)

    def abandon(self, error: Runaway) -> SimulationResult:
        """The result of a run its loop gave up on (a ``runaway`` violation), its tasks
        cancelled (given a little more of the loop's budget to end)."""
        self.invariants.violate("runaway", str(error))
        result = self._result(self.workload)
        loop = self.loop
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        loop.max_steps = loop.steps + _WIND_DOWN_STEPS
        with contextlib.suppress(Exception):
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        return result

    # -- setting up -------------------------------------------------------------------------

    async def _install(self) -> None:
        sim, workload = self.sim, self.workload
        for crd in workload.crds:
            body = load_crd(crd)
            sim.create("customresourcedefinitions", body)
            group_version, plural = crd_resource(body)
            await sim.wait_served(f"{group_version}/{plural}")
        sim.create("namespaces", {"metadata": {"name": workload.namespace}})

    def _invariants(self) -> Invariants:
        sim, workload, plan = self.sim, self.workload, self.plan
        rt = sim.resource(workload.resource)
        child = sim.resource(workload.children) if workload.children else None
        name, shards = _LEASE, plan.shards
        if plan.coordination == "leader":
            guard_of: Callable[[str], str] = lambda _key: name  # noqa: E731
        else:
            guard_of = lambda key: f"{name}-shard-{shard_of(key, shards)}"  # noqa: E731
        return Invariants(
            clock=self.now,
            identities={r.name: r.identity for r in plan.replicas},
            primary_store=Api.type_name(rt),
            primary_kind=rt.kind,
            primary_group=rt.group,
            child_store=Api.type_name(child) if child is not None else None,
            expected_children=workload.expected_children,
            guard_of=guard_of,
            lease_namespace=workload.namespace,
            guard_of_uid=_uid_guard(shards) if plan.coordination == "shard-caches" else None,
        )

    async def _start(self, spec: ReplicaSpec) -> None:
        loop, sim, workload = self.loop, self.sim, self.workload
        node = Node(spec.name, rate=spec.rate, offset=spec.offset)
        token = sim.add_user(spec.name, [("*", "*", "*")])
        rt = sim.resource(workload.resource)
        with loop.on(node):
            cfg = sim.client_configuration()
            cfg.api_key = {"BearerToken": token}
            with _cheap_tls():
                api = ApiClient(configuration=cfg)
            await api.rest_client.pool_manager.close()
            latency = max(spec.latency, MIN_LATENCY)
            api.rest_client.pool_manager = self.network.session(node, latency)
            coordination: dict[str, Any] = {}
            if self.plan.coordination == "leader":
                coordination["leader_election"] = LeaderElection(
                    _LEASE, workload.namespace, spec.identity
                )
            else:
                caches: Literal["full", "sharded"] = (
                    "sharded" if self.plan.coordination == "shard-caches" else "full"
                )
                coordination["sharding"] = Sharding(
                    _LEASE, workload.namespace, spec.identity, shards=self.plan.shards,
                    caches=caches,
                )  # fmt: skip
            manager = _TrackedManager(
                api,
                replica=spec.name,
                invariants=self.invariants,
                primary=(rt.group, rt.plural),
                pipeline="loop",
                clock=loop.time,
                blocked_loop_threshold=None,
                **coordination,
            )
            await build_manager(self.simulation.build, manager)
            replica = _Replica(spec, node, manager, api, context=loop.node_context(node))
            replica.task = loop.create_task(manager.run(), name=f"replica {spec.name}")
            replica.task.add_done_callback(functools.partial(self._ended, replica))
        self.replicas.append(replica)

    def _ended(self, replica: _Replica, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        what = repr(error) if error is not None else "returned"
        self.invariants.violate("crashed", f"{replica.spec.name}: its manager ended: {what}")

    # -- the plan ---------------------------------------------------------------------------

    async def _play(self) -> None:
        for step in self.plan.steps:
            wait = self.start + step.at - self.loop.virtual_time
            if wait > 0:
                await asyncio.sleep(wait)
            if self._apply(step) and step.kind not in _WORKLOAD:
                self.faults[step.kind] += 1
        wait = self.start + self.plan.duration - self.loop.virtual_time
        if wait > 0:
            await asyncio.sleep(wait)

    def _apply(self, step: Step) -> bool:
        """Play one step; False when it found nothing to act on."""
        sim, kind = self.sim, step.kind
        if kind in _WORKLOAD:
            return self._workload_step(step)
        replica = next((r for r in self.replicas if r.spec.name == step.target), None)
        if kind == "lost_answer":
            self.scheduler.lost_writes[step.target, step.verb] += step.number
        elif kind == "lost_renewal":
            self.scheduler.lost_renewals[step.target] += max(1, step.number - 1)
        elif kind == "cut_watches":
            sim.drop_watches()
        elif kind == "reset":
            return replica is not None and self.network.cut(replica.node) > 0
        elif kind == "server_error":
            status = (500, 503, 429)[step.number % 3]
            sim.fail_next(step.number, status, retry_after=1, users=[step.target])
        elif kind in ("lease_write", "lease_delete"):
            return self._lease_step(step)
        elif kind == "freeze":
            if replica is None or replica.node.frozen:
                return False
            replica.node.freeze()
            self.loop.call_later(step.seconds, replica.node.thaw)
        elif kind == "misroute":
            self.scheduler.misrouted[step.target] = self.loop.virtual_time + step.seconds
        elif kind == "watch_lag":
            self.lag_until = max(self.lag_until, self.loop.virtual_time + step.seconds)
            sim.faults.delay_watch_events(step.number / 10)
            self.loop.call_later(step.seconds, self._lag_over)
        return True

    def _lag_over(self) -> None:
        if self.loop.virtual_time >= self.lag_until:
            self.sim.faults.delay_watch_events(0.0)

    def _workload_step(self, step: Step) -> bool:
        sim, workload, ns = self.sim, self.workload, self.workload.namespace
        name = step.target
        exists = name in self._primaries()
        if step.kind == "create":
            if exists:
                return False
            self._create(name)
        elif step.kind == "change":
            if not exists or workload.change is None:
                return False
            current = sim.get(workload.resource, name, ns)
            sim.patch(workload.resource, name, dict(workload.change(current, self.rng)), ns)
        elif step.kind == "delete":
            if not exists:
                return False
            sim.delete(workload.resource, name, ns)
        elif step.kind == "kill":
            children = self._children(name)
            if not children or workload.children is None:
                return False
            victim = children[step.number % len(children)]
            sim.delete(workload.children, victim["metadata"]["name"], ns)
        return True

    def _lease_step(self, step: Step) -> bool:
        sim, ns = self.sim, self.workload.namespace
        names = sorted(
            lease["metadata"]["name"]
            for lease in sim.list("leases", ns)
            if lease["metadata"]["name"] == _LEASE or "-shard-" in lease["metadata"]["name"]
        )
        if not names:
            return False
        name = names[step.number % len(names)]
        if step.kind == "lease_delete":
            sim.delete("leases", name, ns)
        elif step.number % 2:
            sim.patch("leases", name, {"metadata": {"annotations": {"touched": f"{step.at}"}}}, ns)
        else:
            lease = sim.get("leases", name, ns)
            spec = lease.get("spec") or {}
            now = micro_time()
            taken = {
                "holderIdentity": "intruder",
                "leaseDurationSeconds": 15,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": int(spec.get("leaseTransitions") or 0) + 1,
            }
            sim.patch("leases", name, {"spec": taken}, ns)
        return True

    def _create(self, name: str) -> None:
        workload = self.workload
        body = dict(workload.create(name, self.rng))
        body["metadata"] = {**(body.get("metadata") or {}), "name": name,
                            "namespace": workload.namespace}  # fmt: skip
        self.sim.create(workload.resource, body, workload.namespace)

    def _primaries(self) -> dict[str, dict[str, Any]]:
        workload = self.workload
        return {
            o["metadata"]["name"]: o for o in self.sim.list(workload.resource, workload.namespace)
        }

    def _children(self, name: str) -> list[dict[str, Any]]:
        """The live children of primary ``name``, by name."""
        workload = self.workload
        primary = self._primaries().get(name)
        if primary is None or workload.children is None:
            return []
        uid = primary["metadata"]["uid"]
        out = [
            o
            for o in self.sim.list(workload.children, workload.namespace)
            if not o["metadata"].get("deletionTimestamp")
            and any(
                r.get("uid") == uid and r.get("controller")
                for r in o["metadata"].get("ownerReferences") or ()
            )
        ]
        return sorted(out, key=lambda o: str(o["metadata"]["name"]))

    def _lift(self) -> None:
        """Every fault ends: frozen replicas thaw, nothing more is lost or misrouted."""
        for replica in self.replicas:
            replica.node.thaw()
        self.scheduler.lift()
        self.sim.faults.request_faults.clear()
        self.lag_until = 0.0
        self.sim.faults.delay_watch_events(0.0)

    # -- checking ---------------------------------------------------------------------------

    async def _sample(self) -> None:
        leader = self.plan.coordination == "leader"
        while True:
            holders: dict[str, list[str]] = {}
            for replica in self.replicas:
                for lease in replica.context.run(self._held, replica.manager, leader):
                    holders.setdefault(lease, []).append(replica.spec.name)
            self.invariants.sampled(holders)
            await asyncio.sleep(SAMPLE_PERIOD)

    @staticmethod
    def _held(manager: Manager, leader: bool) -> list[str]:
        if leader:
            return [_LEASE] if manager.elector is not None and manager.elector.is_leader else []
        assert manager.shards is not None
        return [f"{_LEASE}-shard-{s}" for s in sorted(manager.shards.owned_shards())]

    async def _settle(self) -> None:
        deadline = self.loop.virtual_time + self.simulation.settle
        while True:
            waiting = self._unsettled()
            if not waiting:
                return
            if self.loop.virtual_time >= deadline:
                for line in waiting:
                    self.invariants.violate("unreconciled", line)
                return
            await asyncio.sleep(_SETTLE_POLL)

    def _unsettled(self) -> list[str]:
        waiting = self.invariants.unreconciled()
        done = self.workload.done
        if done is None:
            return waiting
        for name, primary in sorted(self._primaries().items()):
            children = self._children(name)
            if not done(primary, children):
                waiting.append(
                    f"{self.workload.namespace}/{name}: not done ({len(children)} children)"
                )
        return waiting

    async def _stop(self) -> None:
        tasks = [r.task for r in self.replicas if r.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=_STOP_TIMEOUT)
            for task in pending:
                self.notes.append(f"{task.get_name()} did not stop within {_STOP_TIMEOUT:g} s")
        for replica in self.replicas:
            await replica.api.close()

    def _result(self, workload: Workload) -> SimulationResult:
        inv = self.invariants
        trace = hashlib.sha256()
        for w in inv.writes:
            key = w.key
            if w.store in _WALL_CLOCK_NAMED:  # an Event's name ends in its wall-clock time
                key = key.rsplit(".", 1)[0]
            trace.update(repr((w.rv, w.at, w.writer, w.store, w.op, key)).encode())
        return SimulationResult(
            seed=self.plan.seed,
            plan_digest=self.plan.digest,
            trace_digest=trace.hexdigest()[:12],
            coordination=self.plan.coordination,
            replicas=len(self.plan.replicas),
            faults=dict(sorted(self.faults.items())),
            violations=list(inv.violations),
            overlap_seconds=inv.overlap,
            conflicting_writes=inv.conflicting_writes,
            duplicate_children=inv.duplicate_children,
            stale_reconciles=inv.stale_reconciles,
            writes=len(inv.writes),
            requests=self.sim.server.requests_served,
            reconciles=sum(r.manager.reconciles for r in self.replicas),
            virtual_seconds=round(self.now(), 3),
            real_seconds=0.0,
            replay=self.simulation.command,
            notes=self.notes,
        )


_WALL_CLOCK_NAMED = frozenset({"events", "events.events.k8s.io"})
"""Stores whose object names end in a wall-clock reading (client-go names an Event
``<object>.<UnixNano hex>``): the trace digest leaves that part out."""
_LEASE = "simulation"
_ANYONE = ""  # a step's target: whichever replica writes next
_ANY_VERB = ""
_WIND_DOWN_STEPS = 100_000
_WORKLOAD = frozenset({"create", "change", "delete", "kill"})


def _target_of(build: BuildFunction, workload: Workload) -> str:
    """``--target MODULE:NAME`` (and ``--workload NAME``) naming ``build`` and ``workload``
    where they are module attributes of one importable module ("" for the reference
    operator, "--target ?" when they cannot be named)."""
    if build is build_replica_sets and workload is REPLICA_SETS:
        return ""
    name = getattr(build, "__qualname__", "")
    module = sys.modules.get(getattr(build, "__module__", "") or "")
    if module is None or getattr(module, name, None) is not build or module.__name__ == "__main__":
        return "--target ?"
    target = f"--target {module.__name__}:{name}"
    if getattr(module, "WORKLOAD", None) is workload:
        return target
    for attr, value in sorted(vars(module).items()):
        if value is workload:
            return f"{target} --workload {attr}"
    return target + " --workload ?"


def _uid_guard(shards: int) -> Callable[[str], str]:
    """The Lease guarding an object of a given uid with sharded caches: its bucket's
    shard's (``-1``: no uid)."""
    of_bucket = {b: i for i in range(shards) for b in shard_buckets(i, shards)}
    return lambda uid: f"{_LEASE}-shard-{of_bucket[uid_bucket(uid)] if uid else -1}"

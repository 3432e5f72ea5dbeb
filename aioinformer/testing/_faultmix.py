"""Seeded fault mixes: a random workload against KubeSim under a random mix of faults, then
a check that every cache, every handler and every controller converged exactly.

:class:`FaultMix` draws a plan from its ``seed``: ``steps`` writes (pods created, updated,
status-patched, relabelled across the ``app=web`` selector, deleted; custom objects
created, updated, status-patched, deleted; and, when controllers run, their pods killed
and nodes added or removed), each maybe followed by a fault, then a short pause. The same
seed gives the same plan (compare :meth:`FaultMix.plan` or ``FaultMixResult.plan_digest``);
the timing of a run, and so what the cluster emulation and the controllers do in between,
may differ. The fault kinds (``FaultMix.fault_kinds``):

``drop`` (watch connections closed abruptly), ``stall`` (watches silent for 1-3 s; the
harness's idle watchdog is 1.5 s), ``expire`` (watch history evicted: 410), ``compact``
(etcd compaction), ``restart`` (apiserver restart: drop + expire), ``http_429`` /
``http_500`` / ``http_504`` (the next 1-3 requests fail, with Retry-After), ``latency``
(every request waits 50-300 ms for the next 10 steps), ``cut`` (the next 1-2 responses stop
in the middle of a line).

:meth:`FaultMix.run` starts a KubeSim (three nodes, the scheduler/kubelet emulation, a
watch history of 100 events so that 410s also come naturally, bookmarks every 0.5 s),
five informers on one factory (all pods; pods labelled ``app=web``; pods' metadata only;
the pods of one namespace; a custom resource), an exact handler on each and a coalescing
one on the pods, and the ``operators`` on one :class:`~aioinformer.Manager`. It plays the
plan, lifts every fault, and waits up to ``converge_timeout`` seconds until, at one instant:

* every informer holds exactly the server's objects (keys and resourceVersions; the
  selector and namespace informers the matching ones);
* every handler's view (replaying its changes) equals its informer's cache, and no
  handler ever saw a key's resourceVersion go backwards;
* every operator's ``progress`` says done (the example operators check exact pod sets:
  no extra pods).

The result (:class:`FaultMixResult`) counts the faults injected by kind, the relists and
watch restarts of every informer, and says whether it converged, with the differences if
not. Watchers run with short watch timeouts, a 1.5 s idle watchdog and a backoff capped at
2 s (one per factory), and the controllers' expectations expire after 10 s, so that a
seed converges in seconds. Production defaults (a 30 s backoff cap, client-go's 5 minute
expectations TTL) change how long recovery takes, not whether it happens. The TTL is what
recovers a controller whose owned object was created and deleted while its informer was
relisting: the informer never sees it, so the expected creation is never observed (as in
client-go); the fault mixes make that happen.

Example (``python -m aioinformer soak`` runs many seeds)::

    result = await FaultMix(seed=7, operators=example_operators()).run()
    assert result.converged, result.differences
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from aioinformer import (
    Client,
    Informer,
    InformerFactory,
    KubeObject,
    Manager,
    WatchOptions,
)
from aioinformer._runtime.target import build_manager, module_from_file
from aioinformer.testing._example import Example
from kubesim import KubeSim, KubeSimApiError

__all__ = [
    "FAULT_KINDS",
    "FaultMix",
    "FaultMixResult",
    "FaultStep",
    "Operator",
    "example_operators",
]

FAULT_KINDS = (
    "drop", "stall", "expire", "compact", "restart",
    "http_429", "http_500", "http_504", "latency", "cut",
)  # fmt: skip
"""Every fault kind a plan draws from (see the module docstring)."""

_GROUP, _VERSION, _PLURAL = "faultmix.aioinformer.dev", "v1", "widgets"
_WIDGETS = f"{_GROUP}/{_VERSION}/{_PLURAL}"
_NAMESPACES = ("fm-a", "fm-b")
_OPERATOR_NS = "default"
_POD_SPEC = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}
_LATENCY_STEPS = 10
_EXPECTATIONS_TTL = 10.0  # client-go's is 5 minutes: see the module docstring
_STEP_RATE = 40.0  # mean steps per second (pauses are exponential)


class Operator(Protocol):
    """An operator the fault mix runs and checks: your own operator, soaked under random
    writes and network and API server faults and then checked for exact convergence, which
    no other framework's test kit offers. An :class:`Example` is one (every
    ``examples/*.py`` describes one: :meth:`Example.from_module`); so is any object with
    these four members.
    ``name`` labels it in the results;
    ``install(client)`` creates its CRDs and sample objects; ``build(manager)`` registers its
    informers and controllers on the fault mix's manager (the function ``python -m aioinformer
    run`` takes); ``progress(client)`` reads the API server and returns ``(line, done)``:
    done when its objects have converged exactly (no missing and no extra object)."""

    @property
    def name(self) -> str:
        """The operator's name, in the result's ``operators`` and the soak table."""
        ...

    @property
    def install(self) -> Callable[[Client], Awaitable[None]]:
        """``await install(client)``: create its CRDs and sample objects through the
        :class:`~aioinformer.Client` ``client``."""
        ...

    @property
    def build(self) -> Callable[[Manager], object]:
        """``build(manager)``: its informers and controller on the mix's manager
        (``python -m aioinformer run``'s target function; may be a coroutine function)."""
        ...

    @property
    def progress(self) -> Callable[[Client], Awaitable[tuple[str, bool]]]:
        """``await progress(client)``: read the server, return ``(line, done)``; done once
        its objects have converged exactly."""
        ...


@dataclass(frozen=True, slots=True)
class FaultStep:
    """One step of a plan: a write, maybe a fault, then a pause."""

    op: str
    """The write: create, update, status, relabel, delete; with operators also kill,
    add_node, remove_node."""
    kind: str
    """What it writes: "pods", "widgets" (a custom resource) or "nodes"."""
    namespace: str
    """The object's namespace."""
    name: str
    """The object's name."""
    value: str
    """A label value, a phase, or a number (which pod or node)."""
    fault: str | None
    """None, or one of ``FaultMix.fault_kinds``, injected after the write."""
    fault_arg: float
    """The fault's argument: seconds, or a request count."""
    pause: float
    """Seconds to wait before the next step."""


@dataclass
class FaultMixResult:
    """What one seed did and whether everything converged."""

    seed: int
    """The seed played."""
    steps: int
    """Steps in its plan."""
    plan_digest: str
    """sha256 of the plan, first 12 hex digits: equal for equal seeds and settings."""
    faults: dict[str, int]
    """Faults injected, by kind."""
    writes: dict[str, int]
    """Workload writes the server accepted, by op (404/409 answers are not counted)."""
    relists: int
    """Relists, summed over every informer (the controllers' too)."""
    watch_restarts: int
    """Watch restarts, summed over every informer."""
    converged: bool
    """Whether every cache, handler view and operator converged exactly."""
    differences: list[str] = field(default_factory=list)
    """Why it did not converge (empty when it did)."""
    workload_seconds: float = 0.0
    """Seconds the plan took to play."""
    converge_seconds: float = 0.0
    """Seconds from the end of the plan until everything converged (or the timeout)."""
    operators: dict[str, str] = field(default_factory=dict)
    """Each operator's last progress line."""


@dataclass(frozen=True)
class FaultMix:
    """One seeded run (see the module docstring); :meth:`plan` is deterministic in
    ``seed``, ``steps``, ``fault_rate`` and whether ``operators`` are given."""

    fault_kinds: ClassVar[tuple[str, ...]] = FAULT_KINDS
    """Every fault kind a plan draws from (see the module docstring)."""

    seed: int
    """Draws the plan: the same seed (and settings) gives the same plan."""
    steps: int = 150
    """Writes in the plan (:meth:`lasting` sets it from a duration)."""
    fault_rate: float = 0.1
    """Probability that a step is followed by a fault."""
    operators: Sequence[Operator] = ()
    """Operators (:class:`Operator`) to run on the mix's manager and check."""
    converge_timeout: float = 30.0
    """Seconds to wait, after the plan, for everything to converge."""

    @classmethod
    def lasting(cls, seed: int, seconds: float, **options: Any) -> FaultMix:
        """A mix whose workload lasts about ``seconds``: steps come at about 40 per second
        (pauses are drawn from the plan; writes and faults take time on top), at least 20."""
        return cls(seed, steps=max(20, round(seconds * _STEP_RATE)), **options)

    def plan(self) -> list[FaultStep]:
        """The workload and fault schedule this seed stands for."""
        rng = random.Random(self.seed)
        ops = ["create", "update", "status", "relabel", "delete"]
        weights = [30, 20, 15, 20, 15]
        if self.operators:
            ops += ["kill", "add_node", "remove_node"]
            weights += [4, 2, 2]
        plan = []
        for _ in range(self.steps):
            op = rng.choices(ops, weights)[0]
            kind = "widgets" if rng.random() < 0.25 and op not in _OPERATOR_OPS else "pods"
            if op in _OPERATOR_OPS:
                kind = "nodes" if op.endswith("node") else "pods"
            namespace = rng.choice(_NAMESPACES) if op not in _OPERATOR_OPS else _OPERATOR_NS
            name = f"{kind[0]}{rng.randrange(12)}"
            value = rng.choice(["web", "db"]) if op != "status" else rng.choice(_PHASES)
            if op in _OPERATOR_OPS:
                value = str(rng.randrange(1000))  # which pod or node, modulo the count
            fault, arg = None, 0.0
            if rng.random() < self.fault_rate:
                fault = rng.choice(FAULT_KINDS)
                arg = _fault_arg(fault, rng)
            pause = round(rng.expovariate(_STEP_RATE), 4)
            plan.append(FaultStep(op, kind, namespace, name, value, fault, arg, pause))
        return plan

    async def run(self) -> FaultMixResult:
        """Play the plan against a fresh KubeSim and check convergence."""
        plan = self.plan()
        digest = hashlib.sha256(repr(plan).encode()).hexdigest()[:12]
        async with KubeSim(history_size=100, bookmark_interval=0.5, nodes=3) as sim:
            sim.start_cluster(start_delay=0.05, delete_grace_cap=0.1)
            for ns in _NAMESPACES:
                sim.create("namespaces", {"metadata": {"name": ns}})
            sim.create("customresourcedefinitions", _widget_crd())
            await sim.wait_served(_WIDGETS)
            async with sim.api_client() as api:
                return await _Run(self, sim, api, plan, digest).execute()


_OPERATOR_OPS = frozenset({"kill", "add_node", "remove_node"})
_PHASES = ("Running", "Succeeded", "Failed")


def _fault_arg(fault: str, rng: random.Random) -> float:
    if fault == "stall":
        return round(rng.uniform(1.0, 3.0), 2)
    if fault == "latency":
        return round(rng.uniform(0.05, 0.3), 3)
    if fault.startswith("http_"):
        return float(rng.randint(1, 3))
    if fault == "cut":
        return float(rng.randint(1, 2))
    return 0.0


_WATCH_OPTIONS = WatchOptions(
    min_watch_timeout=2.0, max_watch_timeout=4.0, idle_timeout=1.5, backoff_maximum=2.0
)
"""Fast recovery for tests: short watches, a 1.5 s watchdog, backoff capped at 2 s."""


def _widget_crd() -> dict[str, Any]:
    version = {
        "name": _VERSION,
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{_PLURAL}.{_GROUP}"},
        "spec": {
            "group": _GROUP,
            "scope": "Namespaced",
            "names": {"plural": _PLURAL, "singular": "widget", "kind": "Widget"},
            "versions": [version],
        },
    }


class _Recorder:
    """A handler's view of its informer, replayed from its changes."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.view: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self.backwards: list[str] = []

    def _see(self, obj: KubeObject) -> None:
        last = self.last.get(obj.key, 0)
        if obj.rv < last:
            self.backwards.append(f"{self.label}: {obj.key} went from rv {last} to {obj.rv}")
        self.last[obj.key] = obj.rv

    def on_add(self, obj: KubeObject) -> None:
        self._see(obj)
        self.view[obj.key] = obj.rv

    def on_update(self, _old: KubeObject, new: KubeObject) -> None:
        self.on_add(new)

    def on_delete(self, obj: KubeObject) -> None:
        self._see(obj)
        self.view.pop(obj.key, None)


@dataclass
class _Check:
    """One informer and the server view it must equal."""

    informer: Informer
    resource: str
    namespace: str | None = None
    selector: str = ""
    recorders: list[_Recorder] = field(default_factory=list)


class _Run:
    def __init__(
        self, mix: FaultMix, sim: KubeSim, api: Any, plan: list[FaultStep], digest: str
    ) -> None:
        self.mix, self.sim, self.api, self.plan, self.digest = mix, sim, api, plan, digest
        self.client = Client(api, field_manager="faultmix")
        self.faults: Counter[str] = Counter()
        self.writes: Counter[str] = Counter()
        self.latency_until = -1
        self.lines: dict[str, str] = {}

    async def execute(self) -> FaultMixResult:
        stack = contextlib.AsyncExitStack()
        async with stack:
            factory = await stack.enter_async_context(
                InformerFactory(self.api, watch_options=_WATCH_OPTIONS)
            )
            checks = self._informers(factory)
            manager = Manager(self.api, watch_options=_WATCH_OPTIONS)
            for op in self.mix.operators:
                await op.install(self.client)
                await build_manager(op.build, manager)
            for ctl in manager.controllers:
                ctl.expectations.ttl = _EXPECTATIONS_TTL
            if self.mix.operators:
                manager.cache_sync_timeout = 30.0
                await stack.enter_async_context(manager)
            await factory.wait_for_sync(timeout=30)
            started = time.monotonic()
            await self._play()
            self._lift_faults()
            workload = time.monotonic() - started
            converged, differences = await self._converge(checks)
            if not converged:
                differences += _controller_states(manager)
            informers = factory.informers + manager.factory.informers
            stats = [inf.statistics() for inf in informers]
            return FaultMixResult(
                seed=self.mix.seed,
                steps=len(self.plan),
                plan_digest=self.digest,
                faults=dict(sorted(self.faults.items())),
                writes=dict(sorted(self.writes.items())),
                relists=sum(s.relists for s in stats),
                watch_restarts=sum(s.watch_restarts for s in stats),
                converged=converged,
                differences=differences,
                workload_seconds=round(workload, 2),
                converge_seconds=round(time.monotonic() - started - workload, 2),
                operators=dict(self.lines),
            )

    def _informers(self, factory: InformerFactory) -> list[_Check]:
        pods, ns = factory.informer, _NAMESPACES[0]
        checks = [
            _Check(pods("v1", "pods"), "pods"),
            _Check(pods("v1", "pods", label_selector="app=web"), "pods", None, "app=web"),
            _Check(pods("v1", "pods", metadata_only=True), "pods"),
            _Check(pods("v1", "pods", namespace=ns), "pods", ns),
            _Check(factory.informer(f"{_GROUP}/{_VERSION}", _PLURAL), _WIDGETS),
        ]
        for check in checks:
            modes = [False, True] if check is checks[0] else [False]
            for coalesce in modes:
                rec = _Recorder(f"{check.informer.name}/{'coalescing' if coalesce else 'exact'}")
                check.informer.add_handler(
                    rec.on_add, rec.on_update, rec.on_delete, coalesce=coalesce, name=rec.label
                )
                check.recorders.append(rec)
        return checks

    # -- the workload ----------------------------------------------------------------------

    async def _play(self) -> None:
        for i, step in enumerate(self.plan):
            try:
                if self._write(step):
                    self.writes[step.op] += 1
            except KubeSimApiError as exc:  # random targets: missing (404) or taken (409)
                if exc.code not in (404, 409):
                    raise
            if step.fault is not None:
                self._inject(i, step.fault, step.fault_arg)
                self.faults[step.fault] += 1
            if i == self.latency_until:
                self.sim.faults.set_latency(0)
            await asyncio.sleep(step.pause)

    def _write(self, step: FaultStep) -> bool:
        """Apply one write in-process; False when it did not apply."""
        sim, ns, name = self.sim, step.namespace, step.name
        resource = "pods" if step.kind == "pods" else _WIDGETS
        if step.op == "create":
            body: dict[str, Any] = {"metadata": {"name": name, "labels": {"app": step.value}}}
            body["spec"] = _POD_SPEC if step.kind == "pods" else {"size": 1}
            sim.create(resource, body, ns)
        elif step.op == "update":
            sim.patch(resource, name, {"metadata": {"annotations": {"touch": step.value}}}, ns)
        elif step.op == "relabel":
            sim.patch(resource, name, {"metadata": {"labels": {"app": step.value}}}, ns)
        elif step.op == "status":
            sim.patch(resource, name, {"status": {"phase": step.value}}, ns, subresource="status")
        elif step.op == "delete":
            sim.delete(resource, name, ns)
        elif step.op == "kill":
            pods = sorted(p["metadata"]["name"] for p in sim.list("pods", ns))
            if not pods:
                return False
            sim.delete("pods", pods[int(step.value) % len(pods)], ns, gracePeriodSeconds=0)
        elif step.op == "add_node":
            if len(sim.list("nodes")) >= 5:
                return False
            sim.add_nodes(1)
        elif step.op == "remove_node":
            nodes = sorted(n["metadata"]["name"] for n in sim.list("nodes"))
            if len(nodes) <= 2:
                return False
            sim.cluster.remove_node(nodes[int(step.value) % len(nodes)])
        return True

    def _inject(self, i: int, fault: str, arg: float) -> None:
        sim = self.sim
        if fault == "drop":
            sim.drop_watches()
        elif fault == "stall":
            sim.stall_watches(arg)
        elif fault == "expire":
            sim.expire_watch_history()
        elif fault == "compact":
            sim.compact()
        elif fault == "restart":
            sim.restart()
        elif fault.startswith("http_"):
            sim.fail_next(int(arg), int(fault[5:]), retry_after=1)
        elif fault == "latency":
            sim.faults.set_latency(arg)
            self.latency_until = i + _LATENCY_STEPS
        elif fault == "cut":
            sim.faults.cut_next(int(arg))

    def _lift_faults(self) -> None:
        faults = self.sim.faults
        faults.unstall_watches()
        faults.set_latency(0)
        faults.request_faults.clear()
        faults.cut_remaining = 0

    # -- convergence -----------------------------------------------------------------------

    async def _converge(self, checks: list[_Check]) -> tuple[bool, list[str]]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.mix.converge_timeout
        while True:
            differences = [d for c in checks for d in self._differences(c)]
            differences += await self._operators()
            if not differences or loop.time() >= deadline:
                return not differences, differences
            await asyncio.sleep(0.1)

    def _differences(self, check: _Check) -> list[str]:
        want = {
            _key(o): int(o["metadata"]["resourceVersion"])
            for o in self.sim.list(check.resource, check.namespace, label_selector=check.selector)
        }
        have = {o.key: o.rv for o in check.informer.snapshot().list()}
        name = check.informer.name
        out = _diff(name, have, want, "server")
        for rec in check.recorders:
            out += rec.backwards[:5]
            if not out:
                out += _diff(f"handler {rec.label}", rec.view, have, "cache")
        return out

    async def _operators(self) -> list[str]:
        out = []
        for op in self.mix.operators:
            try:
                line, done = await op.progress(self.client)
            except Exception as exc:  # an operator's sample may be missing or the read fail
                line, done = f"progress failed: {exc!r}", False
            self.lines[op.name] = line
            if not done:
                out.append(f"operator {op.name}: {line}")
        return out


def _controller_states(manager: Manager) -> list[str]:
    """What may hold a controller back: pending expectations, freshness waits, its queue."""
    out = []
    for ctl in manager.controllers:
        for key in ctl.primary.snapshot().keys():
            adds, deletes = ctl.expectations.pending(key)
            if adds or deletes:
                out.append(
                    f"controller {ctl.name}: {key} expects {adds} creations, {deletes} deletions"
                )
        out.append(f"controller {ctl.name}: {ctl.statistics()}")
    return out


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def _diff(label: str, have: dict[str, int], want: dict[str, int], other: str) -> list[str]:
    out = [f"{label}: missing {k} (rv {want[k]})" for k in sorted(want.keys() - have.keys())]
    out += [f"{label}: extra {k} (rv {have[k]})" for k in sorted(have.keys() - want.keys())]
    out += [
        f"{label}: {k} at rv {have[k]}, {other} at {want[k]}"
        for k in sorted(have.keys() & want.keys())
        if have[k] != want[k]
    ]
    return out[:10]


def example_operators(
    directory: str | Path | None = None, names: Sequence[str] = ("podset", "nodeagent")
) -> list[Operator]:
    """The example operators: :meth:`Example.from_module` of each ``examples/NAME.py`` of
    ``directory``
    (default: the ``examples/`` directory next to the package, in a source checkout),
    loaded from the file (``sys.path`` is left alone); an empty list when the directory
    does not exist.

    Args:
        directory: where the example files are.
        names: which examples to load (file names without ``.py``).
    """
    path = Path(directory) if directory is not None else Path(__file__).parents[2] / "examples"
    if not path.is_dir():
        return []
    operators: list[Operator] = []
    for name in names:
        operators.append(Example.from_module(module_from_file(path / f"{name}.py")))
    return operators

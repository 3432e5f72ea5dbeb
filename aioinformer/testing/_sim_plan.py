"""A simulation's plan: everything a seed decides, drawn before anything runs.

:func:`draw_plan` turns a seed into a :class:`SimulationPlan`: how the replicas coordinate
(one leader, or shards), each replica (its identity, its clock's rate and origin, the
delay of its connections), which fault kinds this seed plays (each seed picks its own mix,
as FoundationDB's simulation "buggifies" a different subset each run) and every timed step:
the workload's writes and the faults, at their virtual times. The same seed and settings
give the same plan (``plan.digest``); what happens request by request afterwards follows
from the plan alone (see :mod:`~aioinformer.testing._virtual_loop`).

The fault kinds (:data:`FAULT_KINDS`):

* ``lost_answer``: the next 1-3 writes (one step in two: creates) of one replica (one step
  in two: of whichever replica writes next) are applied by the server and their answers
  lost (the connection closes instead): the incident's lost create.
* ``lost_renewal``: the same for the next 1-2 Lease writes of one replica.
* ``cut_watches``: every open watch connection is closed abruptly.
* ``watch_lag``: for 5-30 s, the server delivers every watch event 0.2-3 s after its
  commit (a slow watch cache): a replica's informers lag behind its own writes.
* ``reset``: every connection of one replica is closed abruptly (its requests in flight
  get no answer).
* ``server_error``: the next 1-3 requests of one replica are answered 500, 503 or 429
  (with Retry-After).
* ``lease_write``: someone else writes a coordination Lease: touches it (an annotation,
  the holder kept) or names a holder that is no replica, renewed now.
* ``lease_delete``: someone deletes a coordination Lease (``kubectl delete lease``).
* ``freeze``: one replica stops for 1-40 s (as under SIGSTOP: its clock moves on), then
  resumes where it stopped.
* ``misroute``: for 5-30 s, one replica's Lease requests are answered 200 with a body that
  is not that Lease (a ConfigMap), as by a proxy or a request routed elsewhere.
* ``clock_rate`` (the whole run): each replica's clock runs 0.9-1.1 times as fast as the
  server's, within the documented margin (``lease_duration / renew_deadline``).
* ``duplicate_identity`` (the whole run): the last replica is configured with the first's
  identity.
* ``latency`` (the whole run): each replica's connections deliver up to 30 ms late (at
  least 1 ms in every run).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection
from dataclasses import dataclass, field

__all__ = [
    "COORDINATIONS",
    "FAULT_KINDS",
    "RUN_FAULTS",
    "WORKLOAD_KINDS",
    "ReplicaSpec",
    "SimulationPlan",
    "Step",
    "draw_plan",
]

COORDINATIONS = ("leader", "shards", "shard-caches")
"""How the replicas coordinate: leader election, sharding, sharding with sharded caches."""

FAULT_KINDS = (
    "lost_answer", "lost_renewal", "cut_watches", "watch_lag", "reset", "server_error",
    "lease_write", "lease_delete", "freeze", "misroute", "clock_rate", "duplicate_identity",
    "latency",
)  # fmt: skip
"""Every fault kind a plan draws from (see the module docstring)."""

RUN_FAULTS = frozenset({"clock_rate", "duplicate_identity", "latency"})
"""The fault kinds that shape the whole run rather than a step."""

WORKLOAD_KINDS = ("create", "change", "delete", "kill")
"""The workload's steps: create a primary, change one, delete one, delete a child."""

_CHANCE = {"duplicate_identity": 0.15, "clock_rate": 0.5, "latency": 0.6}
_DEFAULT_CHANCE = 0.4
_PLAY_ALL = 3  # this many fault kinds allowed or fewer: every seed plays them all
_CLOCK_RATES = (0.9, 1.1)
_MAX_LATENCY = 0.03


@dataclass(frozen=True, slots=True)
class ReplicaSpec:
    """One replica of the simulated operator."""

    name: str
    """Its name (its user on the server: what the write log attributes its writes to)."""
    identity: str
    """Its Lease holder identity (two replicas share one under ``duplicate_identity``)."""
    rate: float = 1.0
    """How fast its clock runs against the server's."""
    offset: float = 0.0
    """Its clock's reading when the simulation starts."""
    latency: float = 0.0
    """Seconds each of its connections delivers late, each way."""


@dataclass(frozen=True, slots=True)
class Step:
    """One timed step of a plan."""

    at: float
    """Virtual seconds after the replicas start."""
    kind: str
    """A workload kind (:data:`WORKLOAD_KINDS`) or a fault kind (:data:`FAULT_KINDS`)."""
    target: str = ""
    """The replica it hits, or the primary it writes (empty: none in particular; for a
    lost answer, whichever replica writes next)."""
    number: int = 0
    """How many requests it hits; which Lease, child or variant it picks (modulo); a
    watch lag's tenths of a second."""
    seconds: float = 0.0
    """How long it lasts (a freeze, a misroute, a watch lag)."""
    verb: str = ""
    """The only verb whose requests it hits (a lost answer; empty: every write)."""


@dataclass(frozen=True)
class SimulationPlan:
    """Everything a seed decides (see the module docstring)."""

    seed: int
    """The seed it was drawn from."""
    coordination: str
    """"leader" (one leader Lease), "shards" (one Lease per shard) or "shard-caches"
    (shards whose replicas cache only their shards' objects: ``Sharding(caches="sharded")``;
    never drawn, only chosen)."""
    shards: int
    """Shards (with ``coordination="shards"`` or ``"shard-caches"``)."""
    replicas: tuple[ReplicaSpec, ...]
    """The replicas, in the order they start."""
    faults: frozenset[str]
    """The fault kinds this seed plays."""
    steps: tuple[Step, ...]
    """The timed steps, in time order."""
    duration: float
    """Virtual seconds of workload and faults; then the faults are lifted."""
    primaries: tuple[str, ...] = field(default=())
    """The names of the primaries created at the start."""

    @property
    def digest(self) -> str:
        """sha256 of the plan, first 12 hex digits: equal plans, equal digests."""
        canonical = (
            self.seed, self.coordination, self.shards, self.replicas, sorted(self.faults),
            self.steps, self.duration, self.primaries,
        )  # fmt: skip
        return hashlib.sha256(repr(canonical).encode()).hexdigest()[:12]

    def without(self, kinds: Collection[str]) -> SimulationPlan:
        """The same plan without the fault kinds ``kinds`` (their steps dropped, their
        run-wide effects undone; everything else identical): which faults a failure
        needs."""
        replicas = self.replicas
        if "clock_rate" in kinds:
            replicas = tuple(_replace(r, rate=1.0) for r in replicas)
        if "latency" in kinds:
            replicas = tuple(_replace(r, latency=0.0) for r in replicas)
        if "duplicate_identity" in kinds:
            replicas = tuple(_replace(r, identity=r.name) for r in replicas)
        return SimulationPlan(
            self.seed,
            self.coordination,
            self.shards,
            replicas,
            self.faults - frozenset(kinds),
            tuple(s for s in self.steps if s.kind not in kinds),
            self.duration,
            self.primaries,
        )


def _replace(spec: ReplicaSpec, **changes: object) -> ReplicaSpec:
    fields = {
        "name": spec.name,
        "identity": spec.identity,
        "rate": spec.rate,
        "offset": spec.offset,
        "latency": spec.latency,
    }
    fields.update(changes)
    return ReplicaSpec(**fields)  # type: ignore[arg-type]


def draw_plan(
    seed: int,
    *,
    replicas: int = 3,
    coordination: str | None = None,
    duration: float = 60.0,
    objects: int = 3,
    faults: Collection[str] = FAULT_KINDS,
) -> SimulationPlan:
    """The plan seed ``seed`` stands for (see the module docstring).

    Args:
        seed: draws everything.
        replicas: how many replicas run the operator.
        coordination: "leader", "shards" or "shard-caches" (None: drawn, two in three
            seeds "leader", the others "shards").
        duration: virtual seconds of workload and faults.
        objects: primaries at most at once.
        faults: the fault kinds a seed may play (each seed plays a random subset; when
            they are three or fewer, every seed plays them all).
    """
    unknown = set(faults) - set(FAULT_KINDS)
    if unknown:
        raise ValueError(f"unknown fault kinds {sorted(unknown)}: choose among {FAULT_KINDS}")
    if replicas < 1 or objects < 1 or duration <= 0:
        raise ValueError("need replicas >= 1, objects >= 1 and duration > 0")
    rng = random.Random(seed)
    mode = coordination or ("leader" if rng.random() < 2 / 3 else "shards")
    if mode not in COORDINATIONS:
        raise ValueError(f"coordination must be one of {COORDINATIONS}, not {mode!r}")
    shards = rng.randint(2, 6)
    chosen = frozenset(
        kind for kind in FAULT_KINDS if rng.random() < _CHANCE.get(kind, _DEFAULT_CHANCE)
    ) & frozenset(faults)
    if len(set(faults)) <= _PLAY_ALL:
        chosen = frozenset(faults)
    if replicas < 2:
        chosen -= {"duplicate_identity"}
    specs = []
    for i in range(replicas):
        name = f"replica-{i}"
        rate = round(rng.uniform(*_CLOCK_RATES), 4)
        offset = round(rng.uniform(0, 10_000), 3)
        latency = round(rng.uniform(0, _MAX_LATENCY), 4)
        specs.append(
            ReplicaSpec(
                name,
                "replica-0" if "duplicate_identity" in chosen and i == replicas - 1 else name,
                rate if "clock_rate" in chosen else 1.0,
                offset,
                latency if "latency" in chosen else 0.0,
            )
        )
    names = [s.name for s in specs]
    primaries = tuple(f"set-{i}" for i in range(objects))
    steps: list[Step] = []
    # the workload: a change every ~4 s, a delete or create every ~15 s, a kill every ~10 s
    for kind, every in (("change", 4.0), ("delete", 15.0), ("create", 15.0), ("kill", 10.0)):
        t = rng.expovariate(1 / every)
        while t < duration:
            steps.append(Step(round(t, 3), kind, rng.choice(primaries), rng.randrange(100)))
            t += rng.expovariate(1 / every)
    for kind in FAULT_KINDS:
        if kind not in chosen or kind in RUN_FAULTS:
            continue
        for _ in range(rng.randint(1, 4)):
            at = round(rng.uniform(2.0, duration), 3)
            target = rng.choice(names)
            if kind == "freeze":
                steps.append(Step(at, kind, target, 0, round(rng.uniform(1.0, 40.0), 2)))
            elif kind in ("misroute", "watch_lag"):
                seconds = round(rng.uniform(5.0, 30.0), 2)
                steps.append(Step(at, kind, target, rng.randint(2, 30), seconds))
            elif kind == "lost_answer":
                anyone = rng.random() < 0.5  # whichever replica writes next
                verb = "create" if rng.random() < 0.5 else ""
                steps.append(Step(at, kind, "" if anyone else target, rng.randint(1, 3), verb=verb))
            else:
                steps.append(Step(at, kind, target, rng.randint(1, 3)))
    steps.sort(key=lambda s: (s.at, s.kind, s.target))
    return SimulationPlan(
        seed, mode, shards, tuple(specs), chosen, tuple(steps), duration, primaries
    )

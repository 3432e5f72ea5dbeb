"""What a simulation drives and checks: an operator's primary objects and their children.

A :class:`Workload` tells the simulation how to make, change and delete the objects an
operator reconciles (its primaries), which objects it controls (its children, found by
their controller ownerReference) and how many of those each primary asks for (the
duplicate check), and when a primary counts as done (the convergence check). The
simulation plays these writes as a third party (KubeSim's admin), at the times its plan
says, against the operator's replicas.

:data:`REPLICA_SETS` with :func:`build_replica_sets` is the simulation's reference
operator (what ``python -m aioinformer soak --simulation`` and the test suite run): a
ReplicaSet in miniature. Its primaries are ConfigMaps labelled ``simulation.aioinformer.dev/set``
whose ``data.replicas`` says how many pods they want; its children are pods made with
``generateName`` (so a create retried after a lost answer makes a second pod, as a
ReplicaSet's would), deleted newest first when there are too many; each reconcile records
the count it saw in an annotation on the ConfigMap. Its controller keeps the default
protections (read-your-writes and expectations) and reconciles two keys at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aioinformer._core.errors import NotFound
from aioinformer._core.objects import KubeObject
from aioinformer._runtime.controller import ControllerOptions, Result
from aioinformer._runtime.manager import Manager

__all__ = ["REPLICA_SETS", "Workload", "build_replica_sets", "replica_sets"]

Body = Mapping[str, Any]


@dataclass(frozen=True)
class Workload:
    """The operator's objects as the simulation writes and checks them (see the module
    docstring)."""

    resource: str
    """The primaries' resource, as KubeSim names it: ``"v1/configmaps"``,
    ``"example.aioinformer.dev/v1/podsets"``."""
    create: Callable[[str, random.Random], Body]
    """``create(name, rng)``: the body of a new primary named ``name`` (in the workload's
    namespace; the simulation sets both)."""
    change: Callable[[Body, random.Random], Body] | None = None
    """``change(primary, rng)``: a JSON merge patch that changes a primary's spec (None:
    primaries are never changed)."""
    children: str | None = None
    """The resource of the objects a primary controls (None: no duplicate check)."""
    expected_children: Callable[[Body], int] | None = None
    """How many live children a primary asks for. A primary that has more live
    (not terminating) children than it ever asked for has a duplicate."""
    done: Callable[[Body, Sequence[Body]], bool] | None = None
    """``done(primary, children)``: whether the primary and its live children are what
    the operator should have made of them (None: only checked that the last version of
    every primary was reconciled)."""
    crds: Sequence[Mapping[str, Any] | str | Path] = ()
    """CustomResourceDefinitions installed before the replicas start."""
    namespace: str = "simulation"
    """Where the primaries (and the coordination Leases) live."""
    objects: int = 3
    """Primaries at most at once (the plan creates up to this many, deletes and re-creates
    them)."""


# -- the reference operator --------------------------------------------------------------------

SET_LABEL = "simulation.aioinformer.dev/set"
OBSERVED = "simulation.aioinformer.dev/observed"
_POD_SPEC = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}


def build_replica_sets(manager: Manager) -> None:
    """The reference operator on ``manager`` (see the module docstring)."""
    replica_sets(manager, ControllerOptions(concurrency=2))


def replica_sets(manager: Manager, options: ControllerOptions) -> None:
    """The reference operator on ``manager``, its controller tuned by ``options`` (turn a
    protection off and the simulation finds what it protects against)."""
    sets = manager.informer("v1", "configmaps", label_selector=SET_LABEL)
    pods = manager.informer("v1", "pods")
    client = manager.client

    async def reconcile(key: str) -> Result | None:
        primary = sets.snapshot().get(key)
        if primary is None:
            return None  # its pods go with it (the garbage collector)
        want = int(primary.field("data.replicas", "0"))
        live = sorted(
            (p for p in pods.snapshot().by_index("controller", primary.uid) if not _gone(p)),
            key=lambda p: p.name,
        )
        for _ in range(want - len(live)):
            await client.create(_pod_for(primary), owner=primary)
        for pod in reversed(live[want:]):
            try:
                await client.delete(pod)
            except NotFound:
                pass
        seen = str(len(live))
        if primary.annotations.get(OBSERVED) != seen:
            try:
                await client.patch(primary, {"metadata": {"annotations": {OBSERVED: seen}}})
            except NotFound:
                pass
        return None

    manager.controller(
        "replica-sets",
        reconcile,
        primary=sets,
        owns=[pods],
        options=options,
    )


def _gone(obj: KubeObject) -> bool:
    return obj.deletion_timestamp is not None


def _pod_for(primary: KubeObject) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": f"{primary.name}-", "labels": {"set": primary.name}},
        "spec": _POD_SPEC,
    }


def _set_body(name: str, rng: random.Random) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {SET_LABEL: "true"}},
        "data": {"replicas": str(rng.randint(1, 3))},
    }


def _set_change(_primary: Body, rng: random.Random) -> Body:
    return {"data": {"replicas": str(rng.randint(0, 3))}}


def _wanted(primary: Body) -> int:
    return int((primary.get("data") or {}).get("replicas", "0"))


def _set_done(primary: Body, children: Sequence[Body]) -> bool:
    want = _wanted(primary)
    observed = ((primary.get("metadata") or {}).get("annotations") or {}).get(OBSERVED)
    return len(children) == want and observed == str(want)


REPLICA_SETS = Workload(
    resource="v1/configmaps",
    create=_set_body,
    change=_set_change,
    children="v1/pods",
    expected_children=_wanted,
    done=_set_done,
)
"""The reference operator's workload (see the module docstring; its ``build`` is
:func:`build_replica_sets`)."""

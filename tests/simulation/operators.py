"""Operators with one known bug each, for the simulation to find (and for
``soak --simulation --target``): each builds the reference operator (a ReplicaSet in
miniature, :mod:`aioinformer.testing._sim_workload`) and breaks one thing. Their workload
is the reference one (``WORKLOAD``)."""

from __future__ import annotations

import asyncio

from aioinformer import ControllerOptions, Manager
from aioinformer._core.objects import KubeObject
from aioinformer.testing._sim_workload import REPLICA_SETS, SET_LABEL, replica_sets

WORKLOAD = REPLICA_SETS

TOUCHED = "simulation.aioinformer.dev/touched"


def no_expectations(manager: Manager) -> None:
    """Expectations and read-your-writes off (either one makes the next reconcile wait
    for a lost create to show): a create whose answer was lost is made again while the
    watch has not shown it yet (a duplicate child)."""
    replica_sets(manager, ControllerOptions(concurrency=2, expectations=False, freshness=False))


def no_freshness(manager: Manager) -> None:
    """Read-your-writes off: a reconcile may start on a snapshot that lacks the replica's
    own last write."""
    replica_sets(manager, ControllerOptions(concurrency=2, freshness=False))


def handler_writer(manager: Manager) -> None:
    """Writes from an informer handler (it notes each set's wanted count), which runs on
    every replica, leader or not (the controller's writes are the leader's only): two
    replicas act on one key."""
    replica_sets(manager, ControllerOptions(concurrency=2))
    sets = manager.informer("v1", "configmaps", label_selector=SET_LABEL)

    async def touch(obj: KubeObject) -> None:
        wanted = obj.field("data.replicas", "")
        if obj.annotations.get(TOUCHED) != wanted:
            await manager.client.patch(obj, {"metadata": {"annotations": {TOUCHED: wanted}}})

    sets.add_handler(on_add=touch, on_update=lambda _old, new: touch(new))


def idle(manager: Manager) -> None:
    """Reconciles every set and makes none of its pods: no set is ever done."""
    sets = manager.informer("v1", "configmaps", label_selector=SET_LABEL)

    async def nothing(_key: str) -> None:
        return None

    manager.controller("idle", nothing, primary=sets)


def busy(manager: Manager) -> None:
    """A reconcile that yields to the loop for ever without letting time pass."""

    async def spin(_key: str) -> None:
        while True:  # noqa: ASYNC110 (the bug: it waits for nothing)
            await asyncio.sleep(0)

    sets = manager.informer("v1", "configmaps", label_selector=SET_LABEL)
    manager.controller("spinner", spin, primary=sets)

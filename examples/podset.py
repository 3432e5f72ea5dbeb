"""PodSet: a StatefulSet-like operator on aioinformer's controller runtime.

A PodSet (``example.aioinformer.dev/v1``, ``examples/crds/podset.yaml``) asks for
``spec.replicas`` pods made from ``spec.template``, named NAME-0 .. NAME-(replicas-1) in the
PodSet's namespace and controlled by it (a controller ownerReference). Like a StatefulSet:

* creation is ordered: one reconcile creates the lowest missing ordinal, and the next
  one runs only once the informer has seen that pod, so a pod is created only when all
  lower ordinals exist;
* scaling down deletes the highest ordinals first;
* ``status.replicas`` (pods) and ``status.readyReplicas`` (Running, Ready=True) are patched
  on the status subresource when they change;
* every pod created or deleted is an Event on the PodSet (``kubectl describe podset``);
* the pods of a deleted PodSet go with it: the garbage collector follows their
  ownerReferences (a pod left by a deleted PodSet of the same name holds its name until
  then, and is waited for).

Fixed pod names make the incident's bug visible: a reconcile that reads a cache which has
not seen the pod it just created creates it again and gets 409 AlreadyExists. Every write
goes through ``manager.client``, which keeps the controller's read-your-writes and
expectations by itself; ``build(manager, protect=False)`` builds the controller without
them (the incident's buggy controller) to show the bug: ``counters["conflicts"]`` counts
the 409s.

Run it: ``python examples/podset.py`` (embedded KubeSim, three nodes, a PodSet ``web`` with
3 replicas; Ctrl-C to stop), ``--once`` to exit once converged, ``--kubeconfig PATH`` for a
real cluster; in production ``python -m aioinformer run examples/podset.py:build``.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from contextlib import suppress
from pathlib import Path
from typing import Any

from aioinformer import (
    AlreadyExists,
    Client,
    Conflict,
    ControllerOptions,
    KubeObject,
    Manager,
    NotFound,
    Result,
    is_condition_true,
)

GROUP_VERSION = "example.aioinformer.dev/v1"
CRD = Path(__file__).resolve().parent / "crds" / "podset.yaml"
SAMPLE_NAMESPACE, SAMPLE_NAME = "default", "web"

log = logging.getLogger("examples.podset")


class PodSetOperator:
    """The PodSet controller: informers on podsets and pods, and its reconcile."""

    def __init__(
        self,
        manager: Manager,
        *,
        protect: bool = True,
        concurrency: int = 4,
        namespace: str | None = None,
    ) -> None:
        name = "podset" if namespace is None else f"podset-{namespace}"
        self.client = manager.client
        self.events = manager.event_recorder(name)
        self.podsets = manager.informer(GROUP_VERSION, "podsets", namespace=namespace)
        self.pods = manager.informer("v1", "pods")
        self.counters: Counter[str] = Counter()
        """``creates`` and ``conflicts`` (409 AlreadyExists: a create on a stale cache)."""
        self.controller = manager.controller(
            name,
            self.reconcile,
            primary=self.podsets,
            owns=[self.pods],
            options=ControllerOptions(
                concurrency=concurrency, freshness=protect, expectations=protect
            ),
        )

    async def reconcile(self, key: str) -> Result | None:
        podset = self.podsets.snapshot().get(key)
        if podset is None or terminating(podset):
            return None  # its pods are garbage collected
        replicas = podset.field("spec.replicas", 0, type=int)
        pods = self.pods.snapshot()
        owned = pods.by_index("controller", podset.uid)
        by_ordinal = {ordinal(p, podset.name): p for p in owned}
        missing = first_missing(by_ordinal, replicas)
        name_taken = missing is not None and f"{key}-{missing}" in pods
        misnamed = [p for p in owned if ordinal(p, podset.name) < 0 and not terminating(p)]
        doomed = misnamed + excess(by_ordinal, replicas)
        for pod in doomed:
            await self.delete(podset, pod)
        if not doomed and missing is not None and not name_taken:
            await self.create(podset, missing)
        live = [p for o, p in by_ordinal.items() if 0 <= o < replicas and not terminating(p)]
        status = {"replicas": len(live), "readyReplicas": sum(map(pod_ready, live))}
        current = podset.field("status", {}, type=dict[str, Any])
        if any(current.get(k) != v for k, v in status.items()):
            with suppress(NotFound):  # deleted meanwhile: its delete event follows
                await self.client.patch_status(podset, {"status": status})
        return None

    async def create(self, podset: KubeObject, number: int) -> None:
        try:
            pod = await self.client.create(pod_for(podset, number), owner=podset)
        except AlreadyExists:
            self.counters["conflicts"] += 1
            log.warning("%s: pod %s-%d exists already (409)", podset.key, podset.name, number)
            return
        self.counters["creates"] += 1
        self.events.record(podset, "Normal", "SuccessfulCreate", f"Created pod {pod.name}")

    async def delete(self, podset: KubeObject, pod: KubeObject) -> None:
        # the uid precondition (Conflict): never delete a newer pod that took the name
        with suppress(NotFound, Conflict):
            await self.client.delete(pod)
            self.events.record(podset, "Normal", "SuccessfulDelete", f"Deleted pod {pod.name}")


def build(
    manager: Manager, *, protect: bool = True, concurrency: int = 4, namespace: str | None = None
) -> PodSetOperator:
    """The PodSet operator on ``manager``; ``protect=False`` turns off the controller's
    read-your-writes and expectations (the incident's buggy controller); ``namespace``
    limits it to the PodSets of one namespace (several operators can then share one
    manager)."""
    return PodSetOperator(manager, protect=protect, concurrency=concurrency, namespace=namespace)


# -- the decisions, as pure functions -------------------------------------------------------------


def terminating(obj: KubeObject) -> bool:
    return obj.deletion_timestamp is not None


def pod_ready(pod: KubeObject) -> bool:
    """A pod that is Running with Ready=True, and not terminating."""
    running = pod.field("status.phase") == "Running" and not terminating(pod)
    return running and is_condition_true(pod, "Ready")


def ordinal(pod: KubeObject, podset_name: str) -> int:
    """The ordinal of ``pod`` named PODSET-N, or -1."""
    prefix, _, number = pod.name.rpartition("-")
    canonical = number.isdigit() and str(int(number)) == number  # not "01"
    return int(number) if prefix == podset_name and canonical else -1


def excess(by_ordinal: dict[int, KubeObject], replicas: int) -> list[KubeObject]:
    """Pods at ordinals >= ``replicas``, highest first, not yet terminating."""
    doomed = sorted((o for o in by_ordinal if o >= replicas), reverse=True)
    return [by_ordinal[o] for o in doomed if not terminating(by_ordinal[o])]


def first_missing(by_ordinal: dict[int, KubeObject], replicas: int) -> int | None:
    """The lowest ordinal below ``replicas`` with no pod (all lower ones exist)."""
    return next((i for i in range(replicas) if i not in by_ordinal), None)


def pod_for(podset: KubeObject, number: int) -> dict[str, Any]:
    """Pod NAME-``number`` from the PodSet's template (the client adds the owner)."""
    template = podset.field("spec.template", {}, type=dict[str, Any])
    metadata = {**(template.get("metadata") or {}), "name": f"{podset.name}-{number}"}
    spec = template.get("spec") or {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


# -- the program ----------------------------------------------------------------------------------


def podset_body(name: str, replicas: int, namespace: str = SAMPLE_NAMESPACE) -> dict[str, Any]:
    """A PodSet of ``replicas`` pause containers labelled ``app=NAME``."""
    container = {"name": "main", "image": "registry.k8s.io/pause:3.9"}
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "PodSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "template": template},
    }


async def progress(
    client: Client, namespace: str = SAMPLE_NAMESPACE, name: str = SAMPLE_NAME
) -> tuple[str, bool]:
    """Where PodSet ``namespace/name`` stands, read from the API server. Converged: exactly
    pods NAME-0 .. NAME-(replicas-1), all Running and Ready, and the status says so."""
    podset = await client.get(GROUP_VERSION, "PodSet", name, namespace)
    replicas = podset.field("spec.replicas", 0, type=int)
    ready = podset.field("status.readyReplicas", 0, type=int)
    total = podset.field("status.replicas", 0, type=int)
    listed = await client.list("v1", "Pod", namespace)
    pods = [p for p in listed if p.controller_ref and p.controller_ref.uid == podset.uid]
    want = sorted(f"{name}-{i}" for i in range(replicas))
    done = (
        sorted(p.name for p in pods if pod_ready(p)) == want
        and len(pods) == replicas
        and ready == total == replicas
    )
    line = (
        f"podset {namespace}/{name}: {replicas} wanted, {len(pods)} pods, "
        f"{sum(map(pod_ready, pods))} ready; status {ready}/{total}"
    )
    return line, done


CRDS = [CRD]
"""What ``python examples/podset.py`` installs first."""
SAMPLES = [podset_body(SAMPLE_NAME, replicas=3)]
"""What it creates then: the PodSet it converges."""

if __name__ == "__main__":  # python examples/podset.py: run it on an embedded KubeSim
    from aioinformer.testing import Example

    sys.exit(Example.from_module(sys.modules[__name__]).main())

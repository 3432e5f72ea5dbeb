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
* the pods of a deleted PodSet are deleted.

Fixed pod names make the seed's bug visible: a reconcile that reads a cache which has not
seen the pod it just created creates it again and gets 409 AlreadyExists. The controller's
freshness gate (``record_write``) and expectations prevent it; ``build(manager,
protect=False)`` turns both off to show the bug (``counters.conflicts``).

Run it: ``python examples/podset.py`` (embedded KubeSim, three nodes, a PodSet ``web``
with 3 replicas; Ctrl-C to stop), ``--once`` to exit once converged, ``--kubeconfig PATH``
for a real cluster.
"""

from __future__ import annotations

import sys
from typing import Any

from _common import (
    GROUP,
    GROUP_VERSION,
    VERSION,
    Counters,
    Example,
    OwnedPods,
    Progress,
    StatusWriter,
    as_object,
    controlled_by,
    create_ignoring_conflict,
    install_crd,
    is_terminating,
    list_objects,
    load_crd,
    main,
    pod_from_template,
    pod_ready,
    pods_informer,
)
from kubernetes_asyncio import client

from aioinformer import Controller, KubeObject, Manager, Result

KIND = "PodSet"
PLURAL = "podsets"
SAMPLE_NAMESPACE, SAMPLE_NAME = "default", "web"


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
        # the PodSets are read from snapshots whatever the manager's default store
        self.podsets = manager.informer(
            GROUP_VERSION, PLURAL, namespace=namespace, store="snapshot"
        )
        self.pods = pods_informer(manager, KIND)
        self.counters = Counters()
        self.controller: Controller = manager.controller(
            "podset" if namespace is None else f"podset-{namespace}",
            self.reconcile,
            primary=self.podsets,
            primary_kind=KIND,
            owns=[self.pods],
            concurrency=concurrency,
            freshness=protect,
            expectations=protect,
        )
        api = manager.api_client
        self.owned = OwnedPods(api, self.controller, self.pods, self.counters)
        self.status = StatusWriter(api, PLURAL, self.controller, self.podsets, self.counters)

    async def reconcile(self, key: str) -> Result | None:
        podset = self.podsets.snapshot().get(key)
        pods = await self.owned.owned(key)
        if podset is None:
            # KubeSim has no garbage collector (a real cluster's would also do this)
            await self.owned.apply(key, delete=[p for p in pods if not is_terminating(p)])
            return None
        replicas = int(podset.field("spec.replicas", 0))
        by_ordinal = {ordinal(p, podset.name): p for p in pods if owns(podset, p)}
        doomed = strays(podset, pods) + excess(by_ordinal, replicas)
        if doomed:
            await self.owned.apply(key, delete=doomed)
        elif (missing := first_missing(by_ordinal, replicas)) is not None:
            await self.owned.apply(key, create=[pod_for(podset, missing)])
        live = [p for o, p in by_ordinal.items() if o < replicas and not is_terminating(p)]
        status = {"replicas": len(live), "readyReplicas": sum(map(pod_ready, live))}
        await self.status.update(podset, status)
        return None


def build(
    manager: Manager, *, protect: bool = True, concurrency: int = 4, namespace: str | None = None
) -> PodSetOperator:
    """The PodSet operator on ``manager``; ``protect=False`` turns off the controller's
    freshness gate and expectations (the seed's buggy controller); ``namespace`` limits it
    to the PodSets of one namespace (several operators can then share one manager)."""
    return PodSetOperator(manager, protect=protect, concurrency=concurrency, namespace=namespace)


# -- the decisions, as pure functions -------------------------------------------------------------


def owns(podset: KubeObject, pod: KubeObject) -> bool:
    """Whether ``pod`` belongs to this incarnation of the PodSet (not to a deleted one
    of the same name) and has one of its names."""
    return controlled_by(pod, podset.uid) and ordinal(pod, podset.name) >= 0


def ordinal(pod: KubeObject, podset_name: str) -> int:
    """The ordinal of ``pod`` named PODSET-N, or -1."""
    prefix, _, number = pod.name.rpartition("-")
    canonical = number.isdigit() and str(int(number)) == number  # not "01"
    return int(number) if prefix == podset_name and canonical else -1


def strays(podset: KubeObject, pods: list[KubeObject]) -> list[KubeObject]:
    """Pods in the index that this PodSet does not own (a deleted PodSet of the same name
    left them, or their name is not one of ours), not yet terminating."""
    return [p for p in pods if not owns(podset, p) and not is_terminating(p)]


def excess(by_ordinal: dict[int, KubeObject], replicas: int) -> list[KubeObject]:
    """Pods at ordinals >= ``replicas``, highest first, not yet terminating."""
    doomed = sorted((o for o in by_ordinal if o >= replicas), reverse=True)
    return [by_ordinal[o] for o in doomed if not is_terminating(by_ordinal[o])]


def first_missing(by_ordinal: dict[int, KubeObject], replicas: int) -> int | None:
    """The lowest ordinal below ``replicas`` with no pod (all lower ones exist)."""
    return next((i for i in range(replicas) if i not in by_ordinal), None)


def pod_for(podset: KubeObject, number: int) -> dict[str, Any]:
    return pod_from_template(
        podset, {"name": f"{podset.name}-{number}", "namespace": podset.namespace}
    )


# -- the program ----------------------------------------------------------------------------------


def load_podset_crd() -> dict[str, Any]:
    """The PodSet CustomResourceDefinition (``examples/crds/podset.yaml``)."""
    return load_crd("podset")


def podset_body(name: str, replicas: int, namespace: str = "default") -> dict[str, Any]:
    """A PodSet of ``replicas`` pause containers labelled ``app=NAME``."""
    container = {"name": "main", "image": "registry.k8s.io/pause:3.9"}
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
    return {
        "apiVersion": GROUP_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "template": template,
        },
    }


async def install(api: client.ApiClient) -> None:
    """The CRD (if missing) and the sample PodSet (if missing)."""
    await install_crd(api, load_podset_crd())
    custom = client.CustomObjectsApi(api)
    body = podset_body(SAMPLE_NAME, 3, SAMPLE_NAMESPACE)
    await create_ignoring_conflict(
        custom.create_namespaced_custom_object(GROUP, VERSION, SAMPLE_NAMESPACE, PLURAL, body)
    )


async def progress(
    api: client.ApiClient, namespace: str = SAMPLE_NAMESPACE, name: str = SAMPLE_NAME
) -> Progress:
    """Where PodSet ``namespace/name`` stands, read from the API server. Converged: exactly
    pods NAME-0 .. NAME-(replicas-1), all Running and Ready, and the status says so."""
    custom = client.CustomObjectsApi(api)
    podset = as_object(
        await custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    )
    replicas = podset.field("spec.replicas")
    ready, total = podset.field("status.readyReplicas", 0), podset.field("status.replicas", 0)
    listed = client.CoreV1Api(api).list_namespaced_pod(namespace, _preload_content=False)
    pods = [p for p in await list_objects(listed) if controlled_by(p, podset.uid)]
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
    return Progress(line, done)


EXAMPLE = Example(name="podset", install=install, build=build, progress=progress)

if __name__ == "__main__":
    sys.exit(main(EXAMPLE))

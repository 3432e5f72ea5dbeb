"""NodeAgent: a DaemonSet-like operator on aioinformer's controller runtime.

A NodeAgent (``example.aioinformer.dev/v1``, ``examples/crds/nodeagent.yaml``) runs one pod
made from ``spec.template`` on every Ready node:

* a node that joins (or becomes Ready) gets a pod: ``metadata.generateName`` NAME-,
  ``spec.nodeName`` set to the node (no scheduler involved), a controller ownerReference
  to the NodeAgent;
* the pods of nodes that vanished or are no longer Ready are deleted, and so is any
  second pod on a node;
* ``status.desiredNumberScheduled`` (Ready nodes), ``status.currentNumberScheduled``
  (Ready nodes with a pod) and ``status.numberReady`` (of those pods, the Running and
  Ready ones) are patched on the status subresource when they change;
* the pods of a deleted NodeAgent are deleted.

Generated names make the seed's bug silent: a reconcile that reads a cache which has not
seen the pod it just created creates a second pod on the node, and nothing answers 409.
The controller's expectations and freshness gate prevent it; ``build(manager,
protect=False)`` turns both off to show it (``counters.surplus``: second pods found).

Run it: ``python examples/nodeagent.py`` (embedded KubeSim, three nodes, a NodeAgent
``agent``; Ctrl-C to stop), ``--once`` to exit once converged, ``--kubeconfig PATH`` for a
real cluster.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable
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
    has_ready_condition,
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

KIND = "NodeAgent"
PLURAL = "nodeagents"
SAMPLE_NAMESPACE, SAMPLE_NAME = "default", "agent"


class NodeAgentOperator:
    """The NodeAgent controller: informers on nodeagents, pods and nodes, and its reconcile."""

    def __init__(
        self,
        manager: Manager,
        *,
        protect: bool = True,
        concurrency: int = 4,
        namespace: str | None = None,
    ) -> None:
        # NodeAgents and nodes are read from snapshots whatever the manager's default store
        self.agents = manager.informer(GROUP_VERSION, PLURAL, namespace=namespace, store="snapshot")
        self.pods = pods_informer(manager, KIND)
        self.nodes = manager.informer("v1", "nodes", store="snapshot")
        self.counters = Counters()
        self._surplus_seen: set[str] = set()
        self.controller: Controller = manager.controller(
            "nodeagent" if namespace is None else f"nodeagent-{namespace}",
            self.reconcile,
            primary=self.agents,
            primary_kind=KIND,
            owns=[self.pods],
            watches=[(self.nodes, self._every_agent)],
            concurrency=concurrency,
            freshness=protect,
            expectations=protect,
        )
        api = manager.api_client
        self.owned = OwnedPods(api, self.controller, self.pods, self.counters)
        self.status = StatusWriter(api, PLURAL, self.controller, self.agents, self.counters)

    def _every_agent(self, _node: KubeObject) -> Iterable[str]:
        """A node changed: every NodeAgent may have to act."""
        return self.agents.snapshot().keys()

    async def reconcile(self, key: str) -> Result | None:
        agent = self.agents.snapshot().get(key)
        pods = [p for p in await self.owned.owned(key) if not is_terminating(p)]
        if agent is None:
            # KubeSim has no garbage collector (a real cluster's would also do this)
            await self.owned.apply(key, delete=pods)
            return None
        nodes = sorted(n.name for n in self.nodes.snapshot().list() if has_ready_condition(n))
        mine = [p for p in pods if controlled_by(p, agent.uid)]
        placed, extra, elsewhere = place(mine, nodes)
        self._count_surplus(extra)
        strays = [p for p in pods if not controlled_by(p, agent.uid)]  # a deleted namesake's
        missing = [n for n in nodes if n not in placed]
        await self.owned.apply(
            key, delete=extra + elsewhere + strays, create=[pod_for(agent, n) for n in missing]
        )
        status = {
            "desiredNumberScheduled": len(nodes),
            "currentNumberScheduled": len(placed),
            "numberReady": sum(map(pod_ready, placed.values())),
        }
        await self.status.update(agent, status)
        return None

    def _count_surplus(self, extra: list[KubeObject]) -> None:
        for pod in extra:
            if pod.uid not in self._surplus_seen:
                self._surplus_seen.add(pod.uid)
                self.counters.surplus += 1


def build(
    manager: Manager, *, protect: bool = True, concurrency: int = 4, namespace: str | None = None
) -> NodeAgentOperator:
    """The NodeAgent operator on ``manager``; ``protect=False`` turns off the controller's
    freshness gate and expectations (the seed's buggy controller); ``namespace`` limits it
    to the NodeAgents of one namespace (several operators can then share one manager)."""
    return NodeAgentOperator(manager, protect=protect, concurrency=concurrency, namespace=namespace)


# -- the decisions, as pure functions -------------------------------------------------------------


def by_node(pods: Iterable[KubeObject]) -> dict[str, list[KubeObject]]:
    """Pods grouped by ``spec.nodeName``, oldest first in each group."""
    groups: dict[str, list[KubeObject]] = defaultdict(list)
    for pod in sorted(pods, key=lambda p: (p.metadata.creation_timestamp or "", p.rv)):
        groups[pod.field("spec.nodeName") or ""].append(pod)
    return groups


def place(
    pods: list[KubeObject], nodes: list[str]
) -> tuple[dict[str, KubeObject], list[KubeObject], list[KubeObject]]:
    """The pod kept on each Ready node (the oldest), the extra pods on those nodes, and the
    pods on nodes that are gone or not Ready."""
    kept: dict[str, KubeObject] = {}
    extra: list[KubeObject] = []
    elsewhere: list[KubeObject] = []
    wanted = set(nodes)
    for node, on_node in by_node(pods).items():
        if node in wanted:
            kept[node] = on_node[0]
            extra += on_node[1:]
        else:
            elsewhere += on_node
    return kept, extra, elsewhere


def pod_for(agent: KubeObject, node: str) -> dict[str, Any]:
    pod = pod_from_template(agent, {"generateName": f"{agent.name}-", "namespace": agent.namespace})
    pod["spec"]["nodeName"] = node
    return pod


# -- the program ----------------------------------------------------------------------------------


def load_nodeagent_crd() -> dict[str, Any]:
    """The NodeAgent CustomResourceDefinition (``examples/crds/nodeagent.yaml``)."""
    return load_crd("nodeagent")


def nodeagent_body(name: str, namespace: str = "default") -> dict[str, Any]:
    """A NodeAgent running a pause container labelled ``app=NAME``."""
    container = {"name": "agent", "image": "registry.k8s.io/pause:3.9"}
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
    return {
        "apiVersion": GROUP_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": template},
    }


async def install(api: client.ApiClient) -> None:
    """The CRD (if missing) and the sample NodeAgent (if missing)."""
    await install_crd(api, load_nodeagent_crd())
    custom = client.CustomObjectsApi(api)
    body = nodeagent_body(SAMPLE_NAME, SAMPLE_NAMESPACE)
    await create_ignoring_conflict(
        custom.create_namespaced_custom_object(GROUP, VERSION, SAMPLE_NAMESPACE, PLURAL, body)
    )


async def progress(
    api: client.ApiClient, namespace: str = SAMPLE_NAMESPACE, name: str = SAMPLE_NAME
) -> Progress:
    """Where NodeAgent ``namespace/name`` stands, read from the API server. Converged:
    exactly one pod on every Ready node and none elsewhere, all Running and Ready, and the
    status says so."""
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    agent = as_object(
        await custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    )
    nodes = await list_objects(core.list_node(_preload_content=False))
    ready_nodes = sorted(n.name for n in nodes if has_ready_condition(n))
    listed = await list_objects(core.list_namespaced_pod(namespace, _preload_content=False))
    pods = [p for p in listed if controlled_by(p, agent.uid)]
    placed = sorted(p.field("spec.nodeName") for p in pods)
    ready = sum(map(pod_ready, pods))
    status = agent.field("status") or {}
    done = (
        placed == ready_nodes
        and ready == len(ready_nodes)
        and status.get("desiredNumberScheduled") == len(ready_nodes)
        and status.get("numberReady") == len(ready_nodes)
    )
    line = (
        f"nodeagent {namespace}/{name}: {len(ready_nodes)} Ready nodes, {len(pods)} pods, "
        f"{ready} ready; status {status.get('numberReady', 0)}/"
        f"{status.get('desiredNumberScheduled', 0)}"
    )
    return Progress(line, done)


EXAMPLE = Example(name="nodeagent", install=install, build=build, progress=progress)

if __name__ == "__main__":
    sys.exit(main(EXAMPLE))

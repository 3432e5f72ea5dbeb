"""NodeAgent: a DaemonSet-like operator on aioinformer's controller runtime.

A NodeAgent (``example.aioinformer.dev/v1``, ``examples/crds/nodeagent.yaml``) runs one pod
made from ``spec.template`` on every Ready node:

* a node that joins (or becomes Ready) gets a pod, once no pod of the NodeAgent is still
  terminating there: ``metadata.generateName`` NAME-,
  ``spec.nodeName`` set to the node (no scheduler involved), a controller ownerReference
  to the NodeAgent;
* the pods of nodes that vanished or are no longer Ready are deleted, and so is any
  second pod on a node;
* ``status.desiredNumberScheduled`` (Ready nodes), ``status.currentNumberScheduled``
  (Ready nodes with a pod) and ``status.numberReady`` (of those pods, the Running and
  Ready ones) are patched on the status subresource when they change;
* every pod created or deleted is an Event on the NodeAgent;
* the pods of a deleted NodeAgent go with it: the garbage collector follows their
  ownerReferences.

Generated names make the incident's bug silent: a reconcile that reads a cache which has
not seen the pod it just created creates a second pod on the node, and nothing answers 409.
Every write goes through ``manager.client``, which keeps the controller's expectations and
read-your-writes by itself; ``build(manager, protect=False)`` builds the controller
without them to show the bug (``counters["surplus"]``: second pods found).

Run it: ``python examples/nodeagent.py`` (embedded KubeSim, three nodes, a NodeAgent
``agent``; Ctrl-C to stop), ``--once`` to exit once converged, ``--kubeconfig PATH`` for a
real cluster; in production ``python -m aioinformer run examples/nodeagent.py:build``.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from aioinformer import (
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
CRD = Path(__file__).resolve().parent / "crds" / "nodeagent.yaml"
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
        name = "nodeagent" if namespace is None else f"nodeagent-{namespace}"
        self.client = manager.client
        self.events = manager.event_recorder(name)
        self.agents = manager.informer(GROUP_VERSION, "nodeagents", namespace=namespace)
        self.pods = manager.informer("v1", "pods")
        self.nodes = manager.informer("v1", "nodes")
        self.counters: Counter[str] = Counter()
        """``creates`` and ``surplus`` (second pods found on a node: creates on a stale cache)."""
        self._surplus_seen: set[str] = set()
        self.controller = manager.controller(
            name,
            self.reconcile,
            primary=self.agents,
            owns=[self.pods],
            watches=[(self.nodes, self._every_agent)],
            options=ControllerOptions(
                concurrency=concurrency, freshness=protect, expectations=protect
            ),
        )

    def _every_agent(self, _node: KubeObject) -> Iterable[str]:
        """A node changed: every NodeAgent may have to act."""
        return self.agents.snapshot().keys()

    async def reconcile(self, key: str) -> Result | None:
        agent = self.agents.snapshot().get(key)
        if agent is None or terminating(agent):
            return None  # its pods are garbage collected
        pods = self.pods.snapshot().by_index("controller", agent.uid)
        nodes = sorted(
            n.name for n in self.nodes.snapshot().list() if is_condition_true(n, "Ready")
        )
        placed, extra, elsewhere, busy = place(pods, nodes)
        self._count_surplus(extra)
        for pod in extra + elsewhere:
            # the uid precondition (Conflict): never delete a newer pod that took the name
            with suppress(NotFound, Conflict):
                await self.client.delete(pod)
                self.events.record(agent, "Normal", "SuccessfulDelete", f"Deleted pod {pod.name}")
        for node in nodes:
            if node not in placed and node not in busy:
                pod = await self.client.create(pod_for(agent, node), owner=agent)
                self.counters["creates"] += 1
                self.events.record(
                    agent, "Normal", "SuccessfulCreate", f"Created pod {pod.name} on {node}"
                )
        status = {
            "desiredNumberScheduled": len(nodes),
            "currentNumberScheduled": len(placed),
            "numberReady": sum(map(pod_ready, placed.values())),
        }
        current = agent.field("status", {}, type=dict[str, Any])
        if any(current.get(k) != v for k, v in status.items()):
            with suppress(NotFound):  # deleted meanwhile: its delete event follows
                await self.client.patch_status(agent, {"status": status})
        return None

    def _count_surplus(self, extra: list[KubeObject]) -> None:
        for pod in extra:
            if pod.uid not in self._surplus_seen:
                self._surplus_seen.add(pod.uid)
                self.counters["surplus"] += 1


def build(
    manager: Manager, *, protect: bool = True, concurrency: int = 4, namespace: str | None = None
) -> NodeAgentOperator:
    """The NodeAgent operator on ``manager``; ``protect=False`` turns off the controller's
    read-your-writes and expectations (the incident's buggy controller); ``namespace``
    limits it to the NodeAgents of one namespace (several operators can then share one
    manager)."""
    return NodeAgentOperator(manager, protect=protect, concurrency=concurrency, namespace=namespace)


# -- the decisions, as pure functions -------------------------------------------------------------


def terminating(obj: KubeObject) -> bool:
    return obj.deletion_timestamp is not None


def pod_ready(pod: KubeObject) -> bool:
    """A pod that is Running with Ready=True, and not terminating."""
    return (
        pod.field("status.phase") == "Running"
        and is_condition_true(pod, "Ready")
        and not terminating(pod)
    )


def by_node(pods: Iterable[KubeObject]) -> dict[str, list[KubeObject]]:
    """Pods grouped by ``spec.nodeName``, oldest first in each group."""
    groups: dict[str, list[KubeObject]] = defaultdict(list)
    for pod in sorted(pods, key=lambda p: (p.metadata.creation_timestamp or "", p.rv)):
        groups[pod.field("spec.nodeName", "", type=str)].append(pod)
    return groups


def place(
    pods: list[KubeObject], nodes: list[str]
) -> tuple[dict[str, KubeObject], list[KubeObject], list[KubeObject], set[str]]:
    """The pod kept on each Ready node (the oldest live one), the extra live pods on those
    nodes, the live pods on nodes that are gone or not Ready, and the nodes where a pod is
    still terminating (as a DaemonSet does, no new pod goes there until it is gone)."""
    kept: dict[str, KubeObject] = {}
    extra: list[KubeObject] = []
    elsewhere: list[KubeObject] = []
    wanted = set(nodes)
    busy = {p.field("spec.nodeName", "", type=str) for p in pods if terminating(p)}
    for node, on_node in by_node(p for p in pods if not terminating(p)).items():
        if node in wanted:
            kept[node] = on_node[0]
            extra += on_node[1:]
        else:
            elsewhere += on_node
    return kept, extra, elsewhere, busy


def pod_for(agent: KubeObject, node: str) -> dict[str, Any]:
    """A pod from the NodeAgent's template, on ``node`` (the client adds the owner)."""
    template = agent.field("spec.template", {}, type=dict[str, Any])
    metadata = {**(template.get("metadata") or {}), "generateName": f"{agent.name}-"}
    spec = {**(template.get("spec") or {}), "nodeName": node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


# -- the program ----------------------------------------------------------------------------------


def nodeagent_body(name: str, namespace: str = SAMPLE_NAMESPACE) -> dict[str, Any]:
    """A NodeAgent running a pause container labelled ``app=NAME``."""
    container = {"name": "agent", "image": "registry.k8s.io/pause:3.9"}
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "NodeAgent",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": template},
    }


async def progress(
    client: Client, namespace: str = SAMPLE_NAMESPACE, name: str = SAMPLE_NAME
) -> tuple[str, bool]:
    """Where NodeAgent ``namespace/name`` stands, read from the API server. Converged:
    exactly one pod on every Ready node and none elsewhere, all Running and Ready, and the
    status says so."""
    agent = await client.get(GROUP_VERSION, "NodeAgent", name, namespace)
    nodes = await client.list("v1", "Node")
    ready_nodes = sorted(n.name for n in nodes if is_condition_true(n, "Ready"))
    listed = await client.list("v1", "Pod", namespace)
    pods = [p for p in listed if p.controller_ref and p.controller_ref.uid == agent.uid]
    placed = sorted(p.field("spec.nodeName", "", type=str) for p in pods)
    ready = sum(map(pod_ready, pods))
    status = agent.field("status", {}, type=dict[str, Any])
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
    return line, done


CRDS = [CRD]
"""What ``python examples/nodeagent.py`` installs first."""
SAMPLES = [nodeagent_body(SAMPLE_NAME)]
"""What it creates then: the NodeAgent it converges."""

if __name__ == "__main__":  # python examples/nodeagent.py: run it on an embedded KubeSim
    from aioinformer.testing import Example

    sys.exit(Example.from_module(sys.modules[__name__]).main())

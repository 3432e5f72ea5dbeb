"""The example operators inside the contention scenario's informer process (see :mod:`.contention`).

The PodSet (StatefulSet-like, fixed pod names) and NodeAgent (DaemonSet-like, generated
names) operators from a checkout's ``examples/`` (loaded from their files) run on the
informer process's manager, so they read the same shared pods informer as the readers,
under the same load. Each runs twice, with its freshness protection (namespace ``TAG-on``)
and without (``TAG-off``).

Their workload during the load phase: ``podsets`` PodSets of ``replicas`` pods and one
NodeAgent per namespace are created at the start; every object is touched (an annotation
patch: a burst of reconciles, as informer resyncs and unrelated updates cause) every 0.2 s;
halfway, the PodSets scale to twice their replicas and the NodeAgents are deleted and
re-created (a new uid: every agent pod is replaced). Counted:

* ``conflicts_409``: 409 AlreadyExists answers to the operator's creates (a PodSet
  recreating a pod its stale cache had not seen): the operator's ``counters["conflicts"]``;
* ``extra_pods``: pods that existed beyond what the owner asked for: for a NodeAgent, a
  second live (not terminating) pod of the same agent on one node (seen in the shared
  informer's changes, so even short-lived duplicates count; a replacement made while
  the old pod terminates is none, as for a DaemonSet); for a PodSet, pods beyond
  ``replicas``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from pathlib import Path
from typing import Any

from aioinformer._cache.informer import Informer
from aioinformer._client.client import Client
from aioinformer._core.errors import AlreadyExists, NotFound
from aioinformer._core.objects import KubeObject
from aioinformer._runtime.manager import Manager
from aioinformer._runtime.target import module_from_file
from aioinformer.testing._helpers import install_crd

__all__ = ["ScenarioOperators"]

TOUCH_INTERVAL = 0.2
GROUP_VERSION = "example.aioinformer.dev/v1"


class ScenarioOperators:
    """Build on ``manager`` before it runs; :meth:`install` before too; then
    :meth:`drive` for the load phase, :meth:`settle` and :meth:`figures` after it."""

    def __init__(
        self, manager: Manager, examples_dir: str, tag: str, podsets: int, replicas: int
    ) -> None:
        podset = module_from_file(Path(examples_dir) / "podset.py")
        nodeagent = module_from_file(Path(examples_dir) / "nodeagent.py")
        self._podset, self._nodeagent = podset, nodeagent
        self.manager, self.tag = manager, tag
        self.podsets, self.replicas = podsets, replicas
        self.ops: dict[str, Any] = {}
        for protect in (True, False):
            ns = self.namespace(protect)
            label = "protected" if protect else "unprotected"
            self.ops[f"podset/{label}"] = podset.build(manager, protect=protect, namespace=ns)
            self.ops[f"nodeagent/{label}"] = nodeagent.build(manager, protect=protect, namespace=ns)
        pods: Informer = self.ops["podset/protected"].pods
        self._live: dict[tuple[str, str], set[str]] = defaultdict(set)  # (agent uid, node)
        self._extra: dict[str, int] = defaultdict(int)
        for protect in (True, False):
            pods.add_handler(
                on_add=self._added,
                on_update=self._updated,
                on_delete=self._deleted,
                name=f"scenario-extra-pods/{self.namespace(protect)}",
                namespace=self.namespace(protect),
            )

    def namespace(self, protect: bool) -> str:
        return f"{self.tag}-{'on' if protect else 'off'}"

    # -- counting duplicates ------------------------------------------------------------------

    def _agent_key(self, pod: KubeObject) -> tuple[str, str] | None:
        ref = pod.controller_ref
        if ref is None or ref.kind != "NodeAgent":
            return None
        return ref.uid, str(pod.field("spec.nodeName") or "")

    def _added(self, pod: KubeObject) -> None:
        if (key := self._agent_key(pod)) is None or pod.deletion_timestamp is not None:
            return
        live = self._live[key]
        if live:
            self._extra[f"nodeagent/{self._label(pod.namespace)}"] += 1
        live.add(pod.uid)

    def _updated(self, _old: KubeObject, pod: KubeObject) -> None:
        if pod.deletion_timestamp is not None:  # terminating: a replacement is no duplicate
            self._deleted(pod)

    def _deleted(self, pod: KubeObject) -> None:
        if (key := self._agent_key(pod)) is not None:
            self._live[key].discard(pod.uid)

    def _label(self, namespace: str) -> str:
        return "protected" if namespace == self.namespace(True) else "unprotected"

    # -- the workload ---------------------------------------------------------------------------

    async def install(self, api: Any) -> None:
        """The CRDs and the two namespaces (before the manager starts its informers)."""
        client = Client(api, field_manager="scenario")
        await install_crd(client, self._podset.CRD)
        await install_crd(client, self._nodeagent.CRD)
        for protect in (True, False):
            namespace = {"apiVersion": "v1", "kind": "Namespace"}
            with contextlib.suppress(AlreadyExists):
                await client.create({**namespace, "metadata": {"name": self.namespace(protect)}})

    async def drive(self, api: Any, seconds: float) -> None:
        """Create, touch, scale and re-create the operators' objects for ``seconds``."""
        client = Client(api, field_manager="scenario")
        podset_names = [f"ps-{i}" for i in range(self.podsets)]
        namespaces = [self.namespace(p) for p in (True, False)]
        for ns in namespaces:
            for name in podset_names:
                await client.create(self._podset.podset_body(name, self.replicas, ns))
            await client.create(self._nodeagent.nodeagent_body("agent", ns))
        loop = asyncio.get_running_loop()
        start = loop.time()
        halfway_done = False
        touch = 0
        while (now := loop.time()) < start + seconds:
            touch += 1
            patch = {"metadata": {"annotations": {"scenario/touch": str(touch)}}}
            if not halfway_done and now >= start + seconds / 2:
                halfway_done = True
                await self._halfway(client, namespaces, podset_names)
            for ns in namespaces:
                for name in podset_names:
                    await self._patch(client, _ref("PodSet", ns, name), patch)
                await self._patch(client, _ref("NodeAgent", ns, "agent"), patch)
            await asyncio.sleep(TOUCH_INTERVAL)

    async def _halfway(
        self, client: Client, namespaces: list[str], podset_names: list[str]
    ) -> None:
        scale = {"spec": {"replicas": 2 * self.replicas}}
        for ns in namespaces:
            for name in podset_names:
                await self._patch(client, _ref("PodSet", ns, name), scale)
            await client.delete(_ref("NodeAgent", ns, "agent"), missing_ok=True)
            body = self._nodeagent.nodeagent_body("agent", ns)
            for _ in range(50):  # the delete may take a moment to be observable
                try:
                    await client.create(body)
                    break
                except AlreadyExists:
                    await asyncio.sleep(0.05)

    async def _patch(self, client: Client, ref: dict[str, Any], body: Any) -> None:
        with contextlib.suppress(NotFound):
            await client.patch(ref, body)

    async def settle(self, api: Any, timeout: float) -> bool:
        """Wait until the protected operators' objects have converged; whether they did."""
        client = Client(api, field_manager="scenario")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        ns = self.namespace(True)
        while loop.time() < deadline:
            checks = [self._podset.progress(client, ns, f"ps-{i}") for i in range(self.podsets)]
            checks.append(self._nodeagent.progress(client, ns, "agent"))
            if all(done for _line, done in await asyncio.gather(*checks)):
                return True
            await asyncio.sleep(0.25)
        return False

    async def figures(self, api: Any) -> dict[str, dict[str, int]]:
        """``conflicts_409`` and ``extra_pods`` per operator (``podset/protected`` ...)."""
        client = Client(api, field_manager="scenario")
        conflicts = {name: op.counters["conflicts"] for name, op in self.ops.items()}
        extra = {name: 0 for name in self.ops}
        for name, count in self._extra.items():
            extra[name] = count
        for protect in (True, False):
            ns, label = self.namespace(protect), "protected" if protect else "unprotected"
            pods = await client.list("v1", "Pod", ns)
            for i in range(self.podsets):
                ps = await client.get(GROUP_VERSION, "PodSet", f"ps-{i}", ns)
                owned = [p for p in pods if p.controller_ref and p.controller_ref.uid == ps.uid]
                extra[f"podset/{label}"] += max(0, len(owned) - int(ps.field("spec.replicas")))
        return {"conflicts_409": conflicts, "extra_pods": extra}


def _ref(kind: str, namespace: str, name: str) -> dict[str, Any]:
    """What the client needs to name an example object."""
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": GROUP_VERSION, "kind": kind, "metadata": meta}

"""KubeSim for bench/scaleout.py, in its own process, with a server-side write journal.

Run as ``python -m bench._scaleoutsim``. The first line on stdout is ``{"url", "token",
"pid"}``; then each JSON line on stdin is one command, answered by one JSON line (``{"ok":
true, ...}`` or ``{"ok": false, "error"}``); EOF stops the server.

The journal: every request that is not a GET (creates, updates, patches, deletes; events
left out) is recorded as ``[t0, t1, user, method, resource, namespace, name, subresource,
status, holder]``: ``t0``/``t1`` the server's ``time.monotonic()`` when the handler began
and ended (the commit happens in between: one thread), ``user`` the name the bearer token
authenticates (each replica has its own token), ``name`` from the path, or for a create
from the answer (the object's, or a 409's ``details.name``), and ``holder`` for a Lease
written (2xx) the ``spec.holderIdentity`` it now names ("" released; None otherwise).

Commands (``op``): ``setup`` (the PodSet CRD, ``owners`` PodSets of ``pods`` replicas over
``namespaces`` namespaces, each with its pods already made, StatefulSet-shaped, Running and
Ready, each with the controller ownerReference to its PodSet and, with ``labeled``, the
bucket label; ``users``: one token each), ``gate`` (ShardedListAndWatch on or off for the
requests that follow), ``write`` (the in-process writer: :meth:`Driver.write`), ``journal`` (the entries from index ``since``), ``labeled`` (how
many pods carry the bucket label), ``converged`` (each PodSet against its pods: see
:meth:`Driver.converged`), ``stats`` (RSS and CPU of this process, RV, pod count).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web

from aioinformer import bucket_label, uid_bucket
from aioinformer._core.shardbuckets import SHARD_LABEL
from aioinformer._harness.procstats import cpu_seconds, rss_bytes
from aioinformer._harness.simproc import answer_parent
from aioinformer._harness.workload import realistic_pod
from kubesim import KubeSim
from kubesim.errors import KubeSimApiError

CRD = Path(__file__).resolve().parent.parent / "examples" / "crds" / "podset.yaml"
GROUP_VERSION = "example.aioinformer.dev/v1"
PODSETS = "example.aioinformer.dev/v1/podsets"
ALL_RIGHTS = [("*", "*", "*")]
MERGE = "application/merge-patch+json"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _route(path: str) -> tuple[str, str, str, str]:
    """(resource, namespace, name, subresource) of a namespaced resource path."""
    parts = path.strip("/").split("/")
    try:
        i = parts.index("namespaces")
    except ValueError:
        return "", "", "", ""
    rest = [*parts[i + 1 :], "", "", ""]
    return rest[1], rest[0], rest[2], rest[3]


class Driver:
    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self.journal: list[list[Any]] = []
        self.podsets: dict[str, str] = {}  # key -> uid
        self._writer: asyncio.Task[None] | None = None
        self._writes = 0
        self._write_seconds = 0.0
        self._replicas: dict[str, int] = {}

    def wrap(self) -> None:
        """Journal every write the server answers (before it starts: make_app binds it)."""
        handle: Handler = self.sim.server.handle
        tokens = self.sim.options.tokens
        journal = self.journal

        async def journaled(request: web.Request) -> web.StreamResponse:
            if request.method == "GET":
                return await handle(request)
            t0 = time.monotonic()
            resp = await handle(request)
            t1 = time.monotonic()
            resource, ns, name, sub = _route(request.path)
            if resource == "events":
                return resp
            auth = request.headers.get("Authorization", "")
            user = tokens.get(auth.removeprefix("Bearer "))
            holder = None
            body = getattr(resp, "body", None)
            if isinstance(body, bytes) and (
                (request.method == "POST" and not name) or resource == "leases"
            ):
                try:
                    doc = orjson.loads(body)
                except orjson.JSONDecodeError:
                    doc = {}
                if not name:
                    name = (doc.get("metadata") or doc.get("details") or {}).get("name", "")
                if resource == "leases" and resp.status < 300:
                    holder = (doc.get("spec") or {}).get("holderIdentity") or ""
            journal.append([t0, t1, user.name if user else "?", request.method, resource, ns,
                            name, sub, resp.status, holder])  # fmt: skip
            return resp

        self.sim.server.handle = journaled  # type: ignore[method-assign]

    async def setup(
        self, owners: int, pods: int, namespaces: int, labeled: bool, users: list[str]
    ) -> dict[str, Any]:
        t0 = time.perf_counter()
        tokens = {u: self.sim.add_user(u, ALL_RIGHTS) for u in users}
        self.sim.create("customresourcedefinitions", yaml.safe_load(CRD.read_text()))
        await self.sim.wait_served(PODSETS, timeout=30)
        for n in range(namespaces):
            self.sim.create("namespaces", {"metadata": {"name": f"ps-{n}"}})
        made = 0
        for o in range(owners):
            ns, name = f"ps-{o % namespaces}", f"set-{o}"
            container = {"name": "main", "image": "registry.k8s.io/pause:3.9"}
            podset = self.sim.create(PODSETS, {
                "apiVersion": GROUP_VERSION, "kind": "PodSet",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": pods, "template": {"metadata": {"labels": {"app": name}},
                                                        "spec": {"containers": [container]}}},
            }, ns)  # fmt: skip
            uid = podset["metadata"]["uid"]
            self.podsets[f"{ns}/{name}"] = uid
            ref = {"apiVersion": GROUP_VERSION, "kind": "PodSet", "name": name, "uid": uid,
                   "controller": True, "blockOwnerDeletion": True}  # fmt: skip
            label = bucket_label(uid_bucket(uid))

            def body(i: int, ns: str = ns, name: str = name, ref: Any = ref, label: str = label
                     ) -> dict[str, Any]:  # fmt: skip
                pod = realistic_pod(ns, name, i, node=f"node-{i % 100}", phase="Running")
                pod["metadata"]["ownerReferences"] = [ref]
                if labeled:
                    pod["metadata"]["labels"][SHARD_LABEL] = label
                return pod

            for start in range(0, pods, 500):
                bodies = (body(i) for i in range(start, min(pods, start + 500)))
                made += self.sim.create_many("pods", bodies, ns, keep_status=True)
                await asyncio.sleep(0)
        gc.collect()
        gc.freeze()
        return {
            "podsets": self.podsets,
            "pods": made,
            "seconds": round(time.perf_counter() - t0, 2),
            "tokens": tokens,
        }

    def gate(self, on: bool) -> dict[str, Any]:
        self.sim.options.sharding = on
        return {}

    def journal_since(self, since: int) -> dict[str, Any]:
        return {"entries": self.journal[since:], "next": len(self.journal)}

    def _pods(self) -> list[dict[str, Any]]:
        store = self.sim.api.store(self.sim.resource("pods"))
        return [s.decode() for s in store.objects.values()]

    def labeled(self) -> dict[str, Any]:
        store = self.sim.api.store(self.sim.resource("pods"))
        label = f'"{SHARD_LABEL}"'.encode()  # (a scan of the stored bytes: no decode)
        return {
            "pods": len(store.objects),
            "labeled": sum(label in s.raw for s in store.objects.values()),
        }

    def converged(self, full: bool = False) -> dict[str, Any]:
        """Each PodSet against the pods it controls: ``wrong`` the PodSets whose pods are not
        exactly NAME-0 .. NAME-(replicas-1) or whose status does not count them (with the
        reason), ``extra`` the pods beyond a PodSet's spec (duplicates), ``unlabeled`` the
        owned pods without the right bucket label. Unless ``full``, a PodSet whose status
        does not count its spec yet answers at once (no pod scan; ``extra`` None)."""
        wrong: dict[str, str] = {}
        for key in self.podsets:  # (cheap first: only a converged status is worth a pod scan)
            ns, name = key.split("/")
            podset = self.sim.get(PODSETS, name, ns)
            replicas = podset["spec"]["replicas"]
            if (podset.get("status") or {}).get("replicas") != replicas:
                wrong[key] = f"status.replicas {podset.get('status')} for {replicas}"
        if wrong and not full:
            return {"podsets": len(self.podsets), "wrong": wrong, "extra": None,
                    "unlabeled": None}  # fmt: skip
        owned: dict[str, list[dict[str, Any]]] = {uid: [] for uid in self.podsets.values()}
        for pod in self._pods():
            for ref in pod["metadata"].get("ownerReferences") or ():
                if ref.get("controller") and ref.get("uid") in owned:
                    owned[ref["uid"]].append(pod)
        extra = unlabeled = 0
        for key, uid in self.podsets.items():
            ns, name = key.split("/")
            podset = self.sim.get(PODSETS, name, ns)
            replicas = podset["spec"]["replicas"]
            pods = [p for p in owned[uid] if not p["metadata"].get("deletionTimestamp")]
            names = sorted(p["metadata"]["name"] for p in pods)
            want = sorted(f"{name}-{i}" for i in range(replicas))
            extra += max(0, len(pods) - replicas)
            label = bucket_label(uid_bucket(uid))
            unlabeled += sum(
                p["metadata"].get("labels", {}).get(SHARD_LABEL) != label for p in pods
            )
            status = podset.get("status") or {}
            if names != want:
                wrong[key] = f"{len(pods)} pods for {replicas} replicas"
            elif status.get("replicas") != replicas or key in wrong:
                wrong[key] = f"status.replicas {status.get('replicas')} for {replicas}"
        return {"podsets": len(self.podsets), "wrong": wrong, "extra": extra,
                "unlabeled": unlabeled}  # fmt: skip

    async def write(self, rate: float, scale_rate: float = 0.0) -> dict[str, Any]:
        """Start (rate > 0) or stop (0) the in-process writer: at ``rate`` per second, JSON
        merge patches of an annotation on the pods (round robin), ``scale_rate`` of them a
        PodSet scaled up by one (round robin), committed by the server itself (manager
        "writer", no HTTP). Returns the writes so far, the seconds written and the
        PodSets' ``spec.replicas`` as it left them."""
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None
        if rate > 0:
            self._writes, self._write_seconds = 0, 0.0
            self._writer = asyncio.create_task(self._write(rate, scale_rate))
        return {"writes": self._writes, "errors": 0, "seconds": round(self._write_seconds, 3),
                "scaled": self._replicas}  # fmt: skip

    async def _write(self, rate: float, scale_rate: float) -> None:
        pods_rt, sets_rt = self.sim.resource("pods"), self.sim.resource(PODSETS)
        keys = [k for k in self.sim.api.store(pods_rt).keys]
        podsets = sorted(self.podsets)
        self._replicas = {k: self.sim.get(PODSETS, *reversed(k.split("/")))["spec"]["replicas"]
                          for k in podsets}  # fmt: skip
        budget = scale_budget = 0.0
        start = last = time.monotonic()
        n = 0
        try:
            while True:
                await asyncio.sleep(0.002)
                now = time.monotonic()
                budget = min(budget + (now - last) * rate, max(1.0, rate * 0.1))
                scale_budget += (now - last) * scale_rate
                last = now
                while budget >= 1:
                    budget -= 1
                    n += 1
                    if scale_budget >= 1:
                        scale_budget -= 1
                        key = podsets[n % len(podsets)]
                        self._replicas[key] += 1
                        ns, name = key.split("/")
                        body: dict[str, Any] = {"spec": {"replicas": self._replicas[key]}}
                        self.sim.api.patch(sets_rt, ns, name, MERGE, body, manager="writer")
                    else:
                        ns, name = keys[n % len(keys)].split("/")
                        body = {"metadata": {"annotations": {"bench.aioinformer.dev/tick": str(n)}}}
                        try:
                            self.sim.api.patch(pods_rt, ns, name, MERGE, body, manager="writer")
                        except KubeSimApiError:  # (a pod deleted meanwhile)
                            continue
                    self._writes += 1
        finally:
            self._write_seconds = time.monotonic() - start

    def stats(self) -> dict[str, Any]:
        return {"rss_bytes": rss_bytes(), "cpu_seconds": cpu_seconds(),
                "rv": self.sim.resource_version}  # fmt: skip


async def serve() -> None:
    sim = KubeSim(history_size=500_000, controllers=True)
    driver = Driver(sim)
    driver.wrap()
    async with sim:
        commands: dict[str, Callable[..., Any]] = {
            "setup": driver.setup,
            "gate": driver.gate,
            "journal": driver.journal_since,
            "labeled": driver.labeled,
            "converged": driver.converged,
            "stats": driver.stats,
            "write": driver.write,
        }
        await answer_parent({"url": sim.url, "token": sim.token, "pid": os.getpid()}, commands)


if __name__ == "__main__":
    try:
        asyncio.run(serve())
    except (KeyboardInterrupt, SystemExit):
        pass

"""Leaving a cluster as a scenario found it, whether a namespace controller runs there or not.

What a scenario made (:attr:`~tests.kubesim.differential.runner.Run.made`: the namespaces
its requests named, the cluster-scoped objects it created) is removed the way the
namespace controller and a kubectl user would: the namespace is deleted (so nothing new is
created in it), every namespaced kind that discovery lists is emptied in it (pods without
grace, every finalizer still holding an object removed), then the ``kubernetes`` finalizer
is removed through ``/finalize``. A bare kube-apiserver + etcd runs no namespace controller,
so without this its namespaces stay Terminating; on a full cluster the controller does the
same work and whichever finishes first wins. Cluster-scoped objects (CRDs, Nodes) go after
the namespaces that held their instances, and are waited for.

:class:`Found` is what the cluster had before a scenario (namespaces, CRDs, Nodes, the API
groups of ``/apis``): :func:`restore` returns only when nothing the scenario added is left
in it, so a CRD's group is gone from discovery before the next scenario (which may list
``/apis`` or create the same CRD), and fails naming what was left otherwise.

Objects are listed as Tables without their objects (``includeObject=None``): names only,
whatever the objects hold (25d's are nested 2000 levels deep, in their fields and their
managedFields alike, beyond what a JSON parser takes; what cleanup does not need is not
decoded)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import aiohttp

#: The namespace a request path names: ``/api/v1/namespaces/<ns>[/...]``,
#: ``/apis/<group>/<version>/namespaces/<ns>/...``.
_IN_NAMESPACE = re.compile(r"^/apis?/(?:[^/]+/)?[^/]+/namespaces/([^/]+)")
NAMESPACES = "/api/v1/namespaces"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NODES = "/api/v1/nodes"
_NAMES_ONLY = "application/json;as=Table;v=v1;g=meta.k8s.io"
_MERGE = {"Content-Type": "application/merge-patch+json"}
#: How often a wait looks again.
POLL = 0.1


def namespace_of(path: str) -> str | None:
    """The namespace a request path names, if it names one."""
    m = _IN_NAMESPACE.match(path)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Found:
    """The names of what a cluster has, of the kinds scenarios make at cluster scope."""

    namespaces: frozenset[str]
    crds: frozenset[str]
    nodes: frozenset[str]
    groups: frozenset[str]  #: the API groups ``/apis`` lists

    def added(self, before: Found) -> list[str]:
        """What this has that ``before`` had not, as ``kind/name`` strings."""
        return [
            f"{kind}/{name}"
            for kind in ("namespaces", "crds", "nodes", "groups")
            for name in sorted(getattr(self, kind) - getattr(before, kind))
        ]


async def found(http: aiohttp.ClientSession) -> Found:
    """What the cluster has now (:class:`Found`)."""
    namespaces, crds, nodes, groups = await asyncio.gather(
        names_in(http, NAMESPACES), names_in(http, CRDS), names_in(http, NODES), api_groups(http)
    )
    return Found(frozenset(namespaces), frozenset(crds), frozenset(nodes), frozenset(groups))


async def restore(
    http: aiohttp.ClientSession, made: list[str], before: Found, timeout: float
) -> None:
    """Remove what a scenario made (request paths: each namespace one names that was not
    there ``before``, with all it holds, and each cluster-scoped object) and wait until
    the cluster has nothing ``before`` had not; fail naming what is left after
    ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    namespaces = {ns for path in made if (ns := namespace_of(path))} - before.namespaces
    objects = list(dict.fromkeys(p for p in made if namespace_of(p) is None))
    if namespaces:
        kinds = await namespaced_kinds(http)
        for ns in sorted(namespaces):
            await remove_namespace(http, ns, kinds, deadline, timeout)
    for path in objects:
        async with http.delete(path) as r:
            assert r.status in (200, 202, 404), f"DELETE {path}: {r.status}"
    for path in objects:
        await _until(deadline, timeout, path, partial(_gone, http, path))
    left: list[str] = []

    async def as_found() -> bool:
        left[:] = (await found(http)).added(before)
        return not left

    await _until(deadline, timeout, "what the scenario added", as_found, lambda: left)


@dataclass(frozen=True)
class Kind:
    """A namespaced kind discovery lists that can be listed and deleted."""

    prefix: str  #: ``/api/v1`` or ``/apis/<group>/<version>``
    plural: str
    deletecollection: bool

    def collection(self, namespace: str) -> str:
        return f"{self.prefix}/namespaces/{namespace}/{self.plural}"


async def namespaced_kinds(http: aiohttp.ClientSession) -> list[Kind]:
    """Every namespaced kind (no subresource) that can be listed and deleted, in each
    group's preferred version (as the namespace controller empties a namespace); a group
    version that does not answer (an unavailable aggregated API) is left out."""
    async with http.get("/apis") as r:
        assert r.status == 200, f"GET /apis: {r.status}"
        groups = (await r.json())["groups"]
    prefixes = ["/api/v1", *(f"/apis/{g['preferredVersion']['groupVersion']}" for g in groups)]
    documents = await asyncio.gather(*(_json_or_none(http, p) for p in prefixes))
    kinds = []
    for prefix, doc in zip(prefixes, documents, strict=True):
        for res in (doc or {}).get("resources", []):
            verbs = set(res.get("verbs") or ())
            if "/" not in res["name"] and res.get("namespaced") and {"list", "delete"} <= verbs:
                kinds.append(Kind(prefix, res["name"], "deletecollection" in verbs))
    return kinds


async def remove_namespace(
    http: aiohttp.ClientSession, ns: str, kinds: list[Kind], deadline: float, timeout: float
) -> None:
    """Delete namespace ``ns``, empty it of every kind and finalize it, as the namespace
    controller does; return when it is gone."""
    path = f"{NAMESPACES}/{ns}"
    async with http.delete(path) as r:
        if r.status == 404:
            return
        assert r.status in (200, 202), f"DELETE {path}: {r.status}"
    left: list[str] = []

    async def emptied() -> bool:
        left[:] = await empty(http, ns, kinds)
        return not left

    await _until(deadline, timeout, f"the content of {path}", emptied, lambda: left)
    await _until(deadline, timeout, path, lambda: _finalized(http, path))


async def empty(http: aiohttp.ClientSession, ns: str, kinds: list[Kind]) -> list[str]:
    """Delete everything of ``kinds`` in ``ns`` (pods without grace) and remove the
    finalizers of what stays; the paths of what was still there before that."""
    held = await asyncio.gather(*(_empty_kind(http, kind.collection(ns), kind) for kind in kinds))
    return [path for paths in held for path in paths]


async def _empty_kind(http: aiohttp.ClientSession, collection: str, kind: Kind) -> list[str]:
    names = await names_in(http, collection)
    if not names:
        return []
    now = {"gracePeriodSeconds": "0"}
    if kind.deletecollection:
        async with http.delete(collection, params=now) as r:
            assert r.status in (200, 404), f"DELETE {collection}: {r.status}"
    else:
        for name in names:
            async with http.delete(f"{collection}/{name}", params=now) as r:
                assert r.status in (200, 202, 404), f"DELETE {collection}/{name}: {r.status}"
    held = [f"{collection}/{name}" for name in await names_in(http, collection)]
    for path in held:  # a finalizer (its controller may not run here) or a late pod
        patch = {"metadata": {"finalizers": None}}
        async with http.patch(path, json=patch, headers=_MERGE) as r:
            assert r.status in (200, 404), f"PATCH {path} finalizers: {r.status}"
    return held


async def _finalized(http: aiohttp.ClientSession, path: str) -> bool:
    """Whether namespace ``path`` is gone, removing its ``kubernetes`` finalizer if it is
    still there (what the namespace controller does once the namespace is empty)."""
    async with http.get(path) as r:
        if r.status == 404:
            return True
        assert r.status == 200, f"GET {path}: {r.status}"
        ns = await r.json()
    finalizers = ns.get("spec", {}).get("finalizers") or []
    if "kubernetes" in finalizers:
        ns["spec"]["finalizers"] = [f for f in finalizers if f != "kubernetes"]
        async with http.put(f"{path}/finalize", json=ns) as r:
            # 409/404: the namespace controller changed or removed it meanwhile
            assert r.status in (200, 404, 409), f"PUT {path}/finalize: {r.status}"
    return False


async def names_in(http: aiohttp.ClientSession, collection: str) -> list[str]:
    """The names of the objects in ``collection`` (none when it is not served), listed as
    a Table without objects."""
    params = {"includeObject": "None"}
    async with http.get(collection, params=params, headers={"Accept": _NAMES_ONLY}) as r:
        if r.status == 404:
            return []
        assert r.status == 200, f"GET {collection} as a Table: {r.status} {await r.text()}"
        table = await r.json()
    columns = [c.get("format") for c in table.get("columnDefinitions") or []]
    at = columns.index("name") if "name" in columns else 0
    return [row["cells"][at] for row in table.get("rows") or []]


async def api_groups(http: aiohttp.ClientSession) -> list[str]:
    async with http.get("/apis") as r:
        assert r.status == 200, f"GET /apis: {r.status}"
        return [g["name"] for g in (await r.json())["groups"]]


async def _json_or_none(http: aiohttp.ClientSession, path: str) -> Any:
    async with http.get(path) as r:
        return await r.json() if r.status == 200 else None


async def _gone(http: aiohttp.ClientSession, path: str) -> bool:
    async with http.get(path) as r:
        return r.status == 404


async def _until(
    deadline: float,
    timeout: float,
    what: str,
    done: Callable[[], Awaitable[bool]],
    left: Callable[[], list[str]] | None = None,
) -> None:
    """Poll ``done()`` every :data:`POLL` seconds until it is true; past ``deadline`` fail
    naming ``what`` (and ``left()``, what is still there)."""
    loop = asyncio.get_running_loop()
    while not await done():
        if loop.time() > deadline:
            still = f": {', '.join(left())}" if left is not None else ""
            raise AssertionError(f"{what} still there after {timeout}s{still}")
        await asyncio.sleep(POLL)

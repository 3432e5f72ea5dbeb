"""The discovery documents, as kube-apiserver v1.28 serves them.

Plain JSON-ready dicts whose keys and ordering match the recordings (see
tests/kubesim/conformance/15a-15e and 13d): ``/api``, ``/api/v1``, ``/apis``,
``/apis/<group>``, ``/apis/<group>/<version>``, ``/version`` and aggregated discovery
(``apidiscovery.k8s.io/v2beta1``). Only what the sim serves is listed (its
:class:`~kubesim.registry.types.ResourceRegistry`): the built-in kinds (docs/kubesim.md has
the table), the create-only review resources, ``*/status``, ``pods/binding``,
``namespaces/finalize`` and ``*/scale`` (the apps workloads, ReplicationControllers and
custom resources that declare it), not ``*/log``, ``*/exec`` and the like.
"""

from __future__ import annotations

from typing import Any

from kubesim.registry.resource import ResourceType
from kubesim.registry.types import GROUP_ORDER, ResourceRegistry

__all__ = ["Discovery", "version_info"]


class Discovery:
    """The discovery documents of what ``registry`` serves (read at every call)."""

    def __init__(self, registry: ResourceRegistry) -> None:
        self.registry = registry

    def api_versions(self, server_address: str) -> dict[str, Any]:
        """``GET /api`` (APIVersions, 15a); *server_address* is ``host:port``."""
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
            ],
        }

    def api_resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """``GET /api/v1`` (group ``""``) or ``/apis/<group>/<version>`` (APIResourceList,
        15b/13d), or None when that group/version is not served. Entries are sorted by name;
        subresources are entries of their own with an empty singularName."""
        types = self.registry.served_in(group, version)
        if not types:
            return None
        entries: list[dict[str, Any]] = []
        for rt in types:
            entry: dict[str, Any] = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            entry["storageVersionHash"] = rt.storage_version_hash
            entries.append(entry)
            entries += [
                {
                    "name": f"{rt.plural}/{sub.name}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    **({"group": sub.group, "version": sub.version} if sub.group else {}),
                    "kind": sub.kind,
                    "verbs": list(sub.verbs),
                }
                for sub in rt.subresources
            ]
        entries.sort(key=lambda e: str(e["name"]))
        head: dict[str, Any] = {"kind": "APIResourceList"}
        if group:
            head["apiVersion"] = "v1"
        return head | {
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": entries,
        }

    @staticmethod
    def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}

    def api_group_list(self) -> dict[str, Any]:
        """``GET /apis`` (APIGroupList, 15c) for the groups served."""
        groups = [self._group_doc(g, vs) for g, vs in self.registry.groups() if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_group(self, group: str) -> dict[str, Any] | None:
        """``GET /apis/<group>`` (APIGroup, 13d), or None if the group is not served."""
        for g, versions in self.registry.groups():
            if g == group and g:
                return {"kind": "APIGroup", "apiVersion": "v1"} | self._group_doc(g, versions)
        return None

    def aggregated_discovery(self, core: bool) -> dict[str, Any]:
        """Aggregated discovery (``Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;
        as=APIGroupDiscoveryList``, 15e): of ``/api`` when *core*, else of ``/apis``. Built-in
        types report ``responseKind`` group/version as ``""``; custom ones their own."""
        items: list[dict[str, Any]] = []
        groups = [(g, vs) for g, vs in self.registry.groups() if (g == "") == core]
        if not core:  # the discovery manager breaks equal-priority ties by group name
            groups.sort(key=lambda gv: (gv[0] not in GROUP_ORDER, _group_rank(gv[0])))
        for group, versions in groups:
            meta: dict[str, Any] = {"name": group} if group else {}
            vdocs = [
                {
                    "version": v,
                    "resources": [_aggregated(rt) for rt in self.registry.served_in(group, v)],
                    "freshness": "Current",
                }
                for v in versions
            ]
            items.append({"metadata": meta | {"creationTimestamp": None}, "versions": vdocs})
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2beta1",
            "metadata": {},
            "items": items,
        }


def _group_rank(group: str) -> tuple[int, str]:
    return (GROUP_ORDER.index(group), "") if group in GROUP_ORDER else (0, group)


def _aggregated(rt: ResourceType) -> dict[str, Any]:
    gv = {"group": rt.group, "version": rt.version} if rt.custom else {"group": "", "version": ""}
    doc: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": gv | {"kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        doc["shortNames"] = list(rt.short_names)
    if rt.categories:
        doc["categories"] = list(rt.categories)
    if rt.subresources:
        doc["subresources"] = [
            {
                "subresource": s.name,
                "responseKind": ({"group": s.group, "version": s.version} if s.group else gv)
                | {"kind": s.kind},
                "verbs": list(s.verbs),
            }
            for s in rt.subresources
        ]
    return doc


def version_info() -> dict[str, str]:
    """``GET /version``, as recorded in 15d."""
    return {
        "major": "1",
        "minor": "28",
        "gitVersion": "v1.28.0",
        "gitCommit": "8bfc72d03e2130f1bee566d692596931b0ff57cf",
        "gitTreeState": "clean",
        "buildDate": "2026-11-29T18:59:42Z",
        "goVersion": "go1.27.3",
        "compiler": "gc",
        "platform": "linux/amd64",
    }

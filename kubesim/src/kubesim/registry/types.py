"""The resource-type registry: which types a KubeSim serves, keyed by group/version/plural.

Built-in types are registered at start (:data:`kubesim.apis.builtin.BUILTIN_RESOURCES`),
custom ones when their CRD is established and removed when it goes. :meth:`ResourceRegistry.groups`
is the order discovery and the aggregator list groups and versions in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kubesim.registry.resource import ResourceType

__all__ = ["GROUP_ORDER", "ResourceRegistry", "version_sort_key"]

#: Built-in API groups in v1.28's ``/apis`` order (group priority), from 15c.
GROUP_ORDER = (
    "apiregistration.k8s.io apps events.k8s.io authentication.k8s.io authorization.k8s.io "
    "autoscaling batch certificates.k8s.io networking.k8s.io policy rbac.authorization.k8s.io "
    "storage.k8s.io admissionregistration.k8s.io apiextensions.k8s.io scheduling.k8s.io "
    "coordination.k8s.io node.k8s.io discovery.k8s.io flowcontrol.apiserver.k8s.io"
).split()
_KUBE_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def version_sort_key(version: str) -> tuple[int, int, int, int, str]:
    """Kube-aware version order (``CompareKubeAwareVersionStrings``): GA before beta before
    alpha, higher numbers first, then non-Kubernetes-like versions alphabetically."""
    m = _KUBE_VERSION.fullmatch(version)
    if not m:
        return (1, 0, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (0, stage, -int(m.group(1)), -int(m.group(3) or 0), "")


class ResourceRegistry:
    """The set of served resource types, keyed by (group, version, plural). Not thread-safe;
    KubeSim mutates it from its event loop only."""

    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        for rt in types:
            self.add(rt)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/group/version/plural`` (core: group ``""``), or None."""
        return self._types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The type whose ``apiVersion``/``kind`` these are, or None."""
        return next(
            (
                rt
                for rt in self._types.values()
                if rt.api_version == api_version and rt.kind == kind
            ),
            None,
        )

    def add(self, rt: ResourceType) -> None:
        """Serve *rt* (replacing a type with the same group, version and plural)."""
        self._types[(rt.group, rt.version, rt.plural)] = rt

    def remove(self, group: str, version: str, plural: str) -> None:
        """Stop serving that type (no error if it was not served)."""
        self._types.pop((group, version, plural), None)

    def all(self) -> list[ResourceType]:
        """Every served type, in insertion order."""
        return list(self._types.values())

    def groups(self) -> list[tuple[str, list[str]]]:
        """``(group, versions)`` in ``/apis`` order: core ``""`` first, built-in groups by
        upstream priority, then CRD groups as the aggregator sorts equal-priority APIServices
        (by name ``<version>.<group>``, i.e. effectively alphabetically), not by creation
        time. Versions are in kube-aware order, the preferred one first."""
        versions: dict[str, set[str]] = {}
        for rt in self._types.values():
            versions.setdefault(rt.group, set()).add(rt.version)

        def key(group: str) -> tuple[int, int, str]:
            if group == "":
                return (0, 0, "")
            if group in GROUP_ORDER:
                return (1, GROUP_ORDER.index(group), "")
            return (2, 0, min(f"{v}.{group}" for v in versions[group]))

        return [(g, sorted(versions[g], key=version_sort_key)) for g in sorted(versions, key=key)]

    def served_in(self, group: str, version: str) -> list[ResourceType]:
        """The types of one group/version, sorted by plural (discovery order)."""
        found = (rt for rt in self._types.values() if rt.group == group and rt.version == version)
        return sorted(found, key=lambda rt: rt.plural)

    def resolve(self, resource: str) -> ResourceType:
        """The type named ``plural`` (the first served with that plural), ``VERSION/PLURAL``
        (core) or ``GROUP/VERSION/PLURAL``; KeyError when none is served."""
        parts = resource.strip("/").split("/")
        if len(parts) == 1:
            found = next((rt for rt in self._types.values() if rt.plural == parts[0]), None)
        elif len(parts) in (2, 3):
            found = self.lookup(*(["", *parts] if len(parts) == 2 else parts))
        else:
            found = None
        if found is None:
            raise KeyError(f"unknown resource {resource!r}")
        return found

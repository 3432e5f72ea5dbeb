"""The RBAC rules an operator's registrations need, and the writes they miss.

:func:`derive_rules` reads a :class:`~aioinformer.Manager`'s registrations (informers,
controllers, event recorders, leader election or sharding, and what
:meth:`~aioinformer.Manager.require_permission` declared) into the rules ``python -m
aioinformer rbac`` prints:

* every informer: ``get``, ``list``, ``watch`` on its resource;
* a controller's primary: ``update``, ``patch`` on it (finalizers) and ``get``, ``update``,
  ``patch`` on its ``status``;
* what a controller owns: ``create``, ``update``, ``patch``, ``delete``;
* an event recorder: ``create``, ``patch`` on ``events``;
* leader election: ``get``, ``create``, ``update`` on ``leases``; sharding also ``list``
  and ``delete`` (member Leases);
* whatever the operator declared.

A write through the manager's client to anything else (a ConfigMap no informer watches, a
resource only read) is not derivable from the registrations: :class:`UndeclaredWrites`, a
write hook of every manager, logs one WARNING per such (verb, resource, namespace), naming
the ``require_permission`` call that makes the generated RBAC grant it. Writes a test or a
first run makes thereby show what the manifests lack before a cluster answers 403.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aioinformer._client.client import WriteRequest
from aioinformer._core import logs
from aioinformer._core.objects import KubeObject

if TYPE_CHECKING:
    from aioinformer._runtime.manager import Manager

__all__ = ["DerivedRules", "Rules", "UndeclaredWrites", "derive_rules"]

log = logs.logger("aioinformer.rbac")

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete")

Rules = dict[tuple[str, str], set[str]]
"""(API group, resource or resource/subresource) -> verbs."""

_VERB = {"apply": "patch"}


def _rules() -> Rules:
    return defaultdict(set)  # a server-side apply is a PATCH to RBAC


@dataclass(slots=True)
class DerivedRules:
    """The rules of a manager's registrations: for every namespace, and per namespace."""

    cluster: Rules = field(default_factory=lambda: defaultdict(set))
    """Rules for every namespace (a ClusterRole)."""
    per_namespace: dict[str, Rules] = field(default_factory=lambda: defaultdict(_rules))
    """Rules for one namespace each (a Role per namespace)."""

    def add(self, namespace: str | None, group: str, resource: str, verbs: tuple[str, ...]) -> None:
        """Grant ``verbs`` on ``resource`` of ``group`` in ``namespace`` (None: every one)."""
        rules = self.cluster if namespace is None else self.per_namespace[namespace]
        rules[(group, resource)].update(verbs)

    def grants(self, namespace: str | None, group: str, resource: str, verb: str) -> bool:
        """Whether ``verb`` on ``resource`` of ``group`` in ``namespace`` is granted."""
        if verb in self.cluster.get((group, resource), ()):
            return True
        rules = self.per_namespace.get(namespace) if namespace is not None else None
        return rules is not None and verb in rules.get((group, resource), ())


def derive_rules(manager: Manager) -> DerivedRules:
    """The rules ``manager``'s registrations need (see the module docstring)."""
    rules = DerivedRules()
    for inf in manager.factory.informers:
        rules.add(inf.namespace, inf.group, inf.plural, READ)
    for ctl in manager.controllers:
        primary = ctl.primary
        rules.add(primary.namespace, primary.group, primary.plural, ("update", "patch"))
        status = f"{primary.plural}/status"
        rules.add(primary.namespace, primary.group, status, ("get", "update", "patch"))
        for owned in ctl.owns:
            rules.add(owned.namespace, owned.group, owned.plural, WRITE)
    if manager.event_recorders:
        rules.add(None, "", "events", ("create", "patch"))
    if manager.elector is not None:
        elected = ("get", "create", "update")
        rules.add(manager.elector.namespace, "coordination.k8s.io", "leases", elected)
    if manager.shards is not None:
        sharded = ("get", "list", "create", "update", "delete")
        rules.add(manager.shards.namespace, "coordination.k8s.io", "leases", sharded)
    for group, resource, needed, namespace in manager.required_permissions:
        rules.add(namespace, group, resource, needed)
    return rules


class UndeclaredWrites:
    """A write hook that warns, once per (verb, resource, namespace), about a write the
    rules of ``manager`` (:func:`derive_rules`, read at each new case) do not grant,
    naming the ``require_permission`` call to add. It never refuses a write."""

    def __init__(self, manager: Callable[[], Manager]) -> None:
        self._manager = manager
        self._checked: set[tuple[str, str, str, str | None]] = set()

    async def before(self, request: WriteRequest) -> object:
        res = request.resource
        resource = f"{res.plural}/{request.subresource}" if request.subresource else res.plural
        verb = _VERB.get(request.verb, request.verb)
        case = (verb, res.group, resource, request.namespace)
        if case in self._checked:
            return None
        self._checked.add(case)
        if derive_rules(self._manager()).grants(request.namespace, res.group, resource, verb):
            return None
        where = f" in namespace {request.namespace!r}" if request.namespace else ""
        scope = f", namespace={request.namespace!r}" if request.namespace else ""
        log.warning(
            "%s %s%s: the RBAC 'python -m aioinformer rbac' generates does not grant this "
            "write (no informer, primary or owned resource shows it): declare it in build "
            "with manager.require_permission(%r, %r, [%r]%s) (or without namespace= for "
            "every namespace)",
            verb,
            res.qualified if not request.subresource else f"{res.qualified}/{request.subresource}",
            where,
            res.group,
            resource,
            verb,
            scope,
        )
        return None

    def check(self, request: WriteRequest, token: object) -> None:
        return None

    async def after(self, request: WriteRequest, result: KubeObject | None, token: object) -> None:
        return None

    def failed(self, request: WriteRequest, error: BaseException, token: object) -> None:
        return None

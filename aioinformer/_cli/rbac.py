"""``python -m aioinformer rbac TARGET``: the RBAC rules an operator needs, from its code.

Builds the operator's Manager (as ``run`` does, with the same coordination flags, without
contacting a cluster) and prints, as YAML, a ServiceAccount, the ClusterRole (for
informers of all namespaces) and Roles (for informers of one namespace, and the Leases)
its informers, controllers, event recorders and leader election or sharding need, and the
bindings to the ServiceAccount. Derived from what the operator registers, so the manifests
cannot drift from the code:

* every informer: ``get``, ``list``, ``watch`` on its resource;
* a controller's primary: ``update``, ``patch`` on it (finalizers) and on its ``status``;
* what a controller owns: ``create``, ``update``, ``patch``, ``delete``;
* an event recorder: ``create``, ``patch`` on ``events``;
* leader election: ``get``, ``create``, ``update`` on ``leases``; sharding also ``list``
  and ``delete`` (member Leases);
* whatever the operator declared with :meth:`aioinformer.Manager.require_permission`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import defaultdict
from typing import Any

from aioinformer._cli.helpformat import PROG, add_command
from aioinformer._cli.run import _lease_prefix, add_manager_arguments, manager_from_args
from aioinformer._core.errors import ConfigError
from aioinformer._runtime.manager import Manager
from aioinformer._runtime.target import build_manager, load_target

__all__ = ["add_rbac_parser", "rbac_manifests", "run_rbac"]

_READ = ("get", "list", "watch")
_WRITE = ("create", "update", "patch", "delete")


_DESCRIPTION = """
Print, as YAML, the RBAC manifests an operator needs: a ServiceAccount, a ClusterRole
(for its informers of all namespaces) and Roles (for informers of one namespace, and for
the Leases), and their bindings to the ServiceAccount. TARGET is built as "run" builds it
(the same cluster and coordination options), without contacting a cluster, and the
rules are derived from what it registers, so the manifests cannot drift from the code:

  every informer             get, list, watch on its resource
  a controller's primary     update, patch on it (finalizers) and on its status
  what a controller owns     create, update, patch, delete
  an event recorder          create, patch on events
  leader election            get, create, update on leases (sharding: also list,
                             delete)
  Manager.require_permission what the operator declared

TARGET is package.module:build or path/to/file.py:build, a function that receives a
Manager and registers informers and controllers on it.
"""

_EXAMPLES = """
examples:
  python -m aioinformer rbac examples/podset.py:build --name podset-operator
  python -m aioinformer rbac mypkg.operator:build --leader-election op \\
      | kubectl apply -f -
"""


def add_rbac_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``rbac``."""
    p = add_command(
        sub,
        "rbac",
        help="print the RBAC manifests an operator (MODULE:CALLABLE) needs",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
    )
    p.add_argument("target", metavar="TARGET", help="package.module:build or file.py:build")
    add_manager_arguments(p)
    p.add_argument("--name", help="name of the roles and bindings (default: the target's)")
    p.add_argument("--service-account", metavar="NAME",
                   help="its ServiceAccount (default: --name)")  # fmt: skip
    p.add_argument("--service-account-namespace", default="default", metavar="NAMESPACE",
                   help="the ServiceAccount's namespace")  # fmt: skip


def run_rbac(args: argparse.Namespace) -> int:
    """Print the manifests: exit status 0, or 2 for a bad TARGET or option (one line)."""
    import yaml

    try:
        manager = asyncio.run(_build(args))
    except ConfigError as exc:
        print(f"{PROG} rbac: {exc}", file=sys.stderr)
        return 2
    name = args.name or _lease_prefix(args.target)
    docs = rbac_manifests(
        manager,
        name=name,
        service_account=args.service_account or name,
        service_account_namespace=args.service_account_namespace,
    )
    print(yaml.safe_dump_all(docs, sort_keys=False), end="")
    return 0


async def _build(args: argparse.Namespace) -> Manager:
    """The operator's Manager, built on an API client that is never connected (closed
    again, so that what the operator made of it is cleaned up too)."""
    from kubernetes_asyncio import client

    async with client.ApiClient(client.Configuration()) as api:
        manager = manager_from_args(api, args)
        await build_manager(load_target(args.target), manager)
    return manager


Rules = dict[tuple[str, str], set[str]]


def _add(rules: Rules, group: str, resource: str, verbs: tuple[str, ...] | list[str]) -> None:
    rules[(group, resource)].update(verbs)


def rbac_manifests(
    manager: Manager, *, name: str, service_account: str, service_account_namespace: str
) -> list[dict[str, Any]]:
    """The ServiceAccount, roles and bindings ``manager``'s registrations need."""
    cluster: Rules = defaultdict(set)
    per_ns: dict[str, Rules] = defaultdict(lambda: defaultdict(set))

    def scope(namespace: str | None) -> Rules:
        return cluster if namespace is None else per_ns[namespace]

    for inf in manager.factory.informers:
        _add(scope(inf.namespace), inf.group, inf.plural, _READ)
    for ctl in manager.controllers:
        primary = ctl.primary
        _add(scope(primary.namespace), primary.group, primary.plural, ("update", "patch"))
        status = f"{primary.plural}/status"
        _add(scope(primary.namespace), primary.group, status, ("get", "update", "patch"))
        for owned in ctl.owns:
            _add(scope(owned.namespace), owned.group, owned.plural, _WRITE)
    if manager.event_recorders:
        _add(cluster, "", "events", ("create", "patch"))
    if manager.elector is not None:
        _add(
            per_ns[manager.elector.namespace],
            "coordination.k8s.io",
            "leases",
            ("get", "create", "update"),
        )
    if manager.shards is not None:
        _add(
            per_ns[manager.shards.namespace],
            "coordination.k8s.io",
            "leases",
            ("get", "list", "create", "update", "delete"),
        )
    for group, resource, needed, namespace in manager.required_permissions:
        _add(scope(namespace), group, resource, needed)
    subject = {"kind": "ServiceAccount", "name": service_account,
               "namespace": service_account_namespace}  # fmt: skip
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": service_account, "namespace": service_account_namespace},
        }
    ]
    if cluster:
        docs.append(_role("ClusterRole", name, None, cluster))
        docs.append(_binding("ClusterRoleBinding", name, None, "ClusterRole", subject))
    for namespace in sorted(per_ns):
        docs.append(_role("Role", name, namespace, per_ns[namespace]))
        docs.append(_binding("RoleBinding", name, namespace, "Role", subject))
    return docs


def _role(kind: str, name: str, namespace: str | None, rules: Rules) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for (group, resource), verbs in sorted(rules.items()):
        grouped[(group, tuple(sorted(verbs)))].append(resource)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "rules": [
            {"apiGroups": [group], "resources": resources, "verbs": list(verbs)}
            for (group, verbs), resources in grouped.items()
        ],
    }


def _binding(
    kind: str, name: str, namespace: str | None, role_kind: str, subject: dict[str, str]
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [subject],
    }

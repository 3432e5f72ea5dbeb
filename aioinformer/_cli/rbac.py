"""``python -m aioinformer rbac TARGET``: the RBAC rules an operator needs, from its code.

Builds the operator's Manager (as ``run`` does, with the same coordination flags, without
contacting a cluster) and prints, as YAML, a ServiceAccount, the ClusterRole (for
informers of all namespaces) and Roles (for informers of one namespace, and the Leases)
its informers, controllers, event recorders and leader election or sharding need, and the
bindings to the ServiceAccount. Derived from what the operator registers
(:func:`aioinformer._runtime.rbac.derive_rules` lists the rules), so the manifests cannot
drift from the code. A write to anything else (a ConfigMap no informer watches) cannot be
derived: the running operator logs a WARNING naming the ``require_permission`` call for
each such write.
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
from aioinformer._runtime.rbac import Rules, derive_rules
from aioinformer._runtime.target import build_manager, load_target

__all__ = ["add_rbac_parser", "rbac_manifests", "run_rbac"]


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

With --shards (sharded caches, the default) the shard labelers list, watch and patch
the owned resources in the namespaces of their informers (granted above) and read the
controller owner of each child they label: the primary, or an owned kind. An owner
chain through another kind (a ReplicaSet between a Deployment and its pods) needs get
on it: declare it with Manager.require_permission.

Writes to anything else (a ConfigMap no informer watches) cannot be derived: declare them
with Manager.require_permission. The running operator logs a WARNING naming the call to
add for each write these rules do not grant (a test run shows them).

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


def rbac_manifests(
    manager: Manager, *, name: str, service_account: str, service_account_namespace: str
) -> list[dict[str, Any]]:
    """The ServiceAccount, roles and bindings ``manager``'s registrations need
    (:func:`~aioinformer._runtime.rbac.derive_rules`)."""
    derived = derive_rules(manager)
    cluster, per_ns = derived.cluster, derived.per_namespace
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

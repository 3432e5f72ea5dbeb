"""The review APIs: who am I, and may I? (``authentication.k8s.io`` and
``authorization.k8s.io``, v1).

A review is created, never stored: a POST answers 201 with the request's object and a
``status`` computed from KubeSim's identities (:class:`._server.User`), as
kube-apiserver's ``SelfSubjectReview``, ``SelfSubjectAccessReview``,
``LocalSubjectAccessReview``, ``SubjectAccessReview`` and ``SelfSubjectRulesReview``
registries do (``kubectl auth whoami``, ``kubectl auth can-i`` and ``can-i --list``):

* access reviews evaluate ``spec.resourceAttributes`` (verb, group, resource,
  subresource) against the user's rules; ``status.allowed`` and, when allowed, the RBAC
  reason; a non-resource URL is allowed to the admin only;
* rules reviews list the user's rules as ``resourceRules``, ``incomplete`` false;
* any authenticated user may create the ``Self*`` reviews (the ``system:basic-user``
  role every cluster binds), others need the ``create`` permission like any write.

Get, list and the other verbs are 405, as on a real server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesim.apis.authorization import rbac
from kubesim.errors import KubeSimApiError

__all__ = ["ADMIN_GROUPS", "REVIEW_KINDS", "is_review", "open_to_everyone", "review", "user_groups"]

AUTHN = "authentication.k8s.io"
AUTHZ = "authorization.k8s.io"
#: (group, plural) of the review resources.
REVIEW_KINDS = frozenset(
    {
        (AUTHN, "selfsubjectreviews"),
        (AUTHZ, "selfsubjectaccessreviews"),
        (AUTHZ, "localsubjectaccessreviews"),
        (AUTHZ, "subjectaccessreviews"),
        (AUTHZ, "selfsubjectrulesreviews"),
    }
)
_SELF = frozenset({"selfsubjectreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews"})
#: The groups of the admin identity (a cluster-admin of a real cluster).
ADMIN_GROUPS = ("system:masters", "system:authenticated")
_ADMIN_REASON = (
    'RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" '
    'to Group "system:masters"'
)

#: The rules of a user by name (None: no such user).
RulesOf = Callable[[str], "tuple[rbac.Rule, ...] | None"]


def is_review(group: str, plural: str) -> bool:
    """Whether ``group``/``plural`` is a review resource (create-only, never stored)."""
    return (group, plural) in REVIEW_KINDS


def open_to_everyone(group: str, plural: str, user: str) -> bool:
    """Whether ``user`` may create this review whatever its rules (the ``Self*`` reviews,
    for any authenticated user)."""
    return (group, plural) in REVIEW_KINDS and plural in _SELF and user != "system:anonymous"


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def user_groups(user: str, rules: Iterable[rbac.Rule]) -> list[str]:
    """The groups ``user`` is in: an admin's (every rule) or ``system:authenticated``."""
    if ("*", "*", "*") in tuple(rules):
        return list(ADMIN_GROUPS)
    return ["system:authenticated"]


def _access(rules: tuple[rbac.Rule, ...], spec: Mapping[str, Any]) -> dict[str, Any]:
    attrs = _d(spec.get("resourceAttributes"))
    if attrs:
        resource = rbac.request_resource(
            str(attrs.get("resource") or ""), str(attrs.get("subresource") or "") or None
        )
        allowed = rbac.allows(
            rules, str(attrs.get("verb") or ""), str(attrs.get("group") or ""), resource
        )
    else:
        allowed = ("*", "*", "*") in rules  # non-resource URLs: cluster-admin only
    if allowed:
        return {"allowed": True, "reason": _ADMIN_REASON if ("*", "*", "*") in rules else ""}
    return {"allowed": False}


def _rules_status(rules: tuple[rbac.Rule, ...]) -> dict[str, Any]:
    resource_rules = [
        {"verbs": [verb], "apiGroups": [group], "resources": [resource]}
        for verb, group, resource in rules
    ]
    non_resource = [{"verbs": ["*"], "nonResourceURLs": ["*"]}] if ("*", "*", "*") in rules else []
    return {"resourceRules": resource_rules, "nonResourceRules": non_resource, "incomplete": False}


def review(
    plural: str,
    api_version: str,
    kind: str,
    body: Mapping[str, Any],
    user: str,
    rules: tuple[rbac.Rule, ...],
    rules_of: RulesOf,
    namespace: str | None = None,
) -> dict[str, Any]:
    """The answer to a review POST by ``user`` (with ``rules``): the request's object with
    its status. ``rules_of`` resolves ``spec.user`` of a (Local)SubjectAccessReview."""
    spec = _d(body.get("spec"))
    meta = {k: v for k, v in _d(body.get("metadata")).items() if k in ("name", "labels")}
    out: dict[str, Any] = {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {**meta, "creationTimestamp": None},
    }
    if plural == "selfsubjectreviews":
        info = {"username": user, "groups": user_groups(user, rules)}
        return out | {"status": {"userInfo": info}}
    if plural == "selfsubjectaccessreviews":
        return out | {"spec": spec, "status": _access(rules, spec)}
    if plural == "selfsubjectrulesreviews":
        return out | {"spec": spec, "status": _rules_status(rules)}
    if plural == "localsubjectaccessreviews":
        attrs = _d(spec.get("resourceAttributes"))
        if attrs.get("namespace") not in (None, "", namespace):
            raise KubeSimApiError.bad_request(
                f"spec.resourceAttributes.namespace must match namespace: {namespace}"
            )
    who = str(spec.get("user") or "")
    subject = rules_of(who) if who else None
    return out | {"spec": spec, "status": _access(subject or (), spec)}

"""The review APIs: who am I, and may I? (``authentication.k8s.io`` and
``authorization.k8s.io``, v1).

A review is created, never stored: a POST answers 201 with the request's object and a
``status`` computed from KubeSim's identities (their RBAC rules), as
kube-apiserver's ``SelfSubjectReview``, ``SelfSubjectAccessReview``,
``LocalSubjectAccessReview``, ``SubjectAccessReview`` and ``SelfSubjectRulesReview``
registries do (``kubectl auth whoami``, ``kubectl auth can-i`` and ``can-i --list``):

* access reviews evaluate ``spec.resourceAttributes`` (verb, group, resource,
  subresource) against the user's rules; ``status.allowed`` and, when allowed, the RBAC
  reason; a non-resource URL is allowed to the admin only;
* rules reviews list the user's rules as ``resourceRules``, ``incomplete`` false;
* any authenticated user may create the ``Self*`` reviews (the ``system:basic-user``
  role every cluster binds), others need the ``create`` permission like any write.

Each review kind has a :class:`ReviewStrategy`; the HTTP layer answers a POST of a type
whose strategy is one with :meth:`ReviewStrategy.review`. Get, list and the other verbs
are 405, as on a real server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesim.apis.authorization import rbac
from kubesim.errors import KubeSimApiError
from kubesim.registry.resource import ResourceType, Strategy

__all__ = [
    "ADMIN_GROUPS",
    "LocalSubjectAccessReviewStrategy",
    "ReviewStrategy",
    "SelfSubjectAccessReviewStrategy",
    "SelfSubjectReviewStrategy",
    "SelfSubjectRulesReviewStrategy",
    "SubjectAccessReviewStrategy",
    "user_groups",
]

#: The groups of the admin identity (a cluster-admin of a real cluster).
ADMIN_GROUPS = ("system:masters", "system:authenticated")
_ADMIN_REASON = (
    'RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" '
    'to Group "system:masters"'
)

#: The rules of a user by name (None: no such user).
RulesOf = Callable[[str], "tuple[rbac.Rule, ...] | None"]


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


class ReviewStrategy(Strategy):
    """A review kind: created, never stored; a POST answers the request's object with the
    status :meth:`answer` computes."""

    #: Whether any authenticated user may create it whatever their rules (the ``Self*``
    #: reviews: the ``system:basic-user`` role every cluster binds).
    self_review: bool = False

    def open_to(self, user: str) -> bool:
        """Whether ``user`` may create this review whatever their rules."""
        return self.self_review and user != "system:anonymous"

    def review(
        self,
        rt: ResourceType,
        body: Mapping[str, Any],
        user: str,
        rules: tuple[rbac.Rule, ...],
        rules_of: RulesOf,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """The answer to a review POST (``body``, through ``rt``, in ``namespace``) by
        ``user`` with ``rules``: the request's object with its status. ``rules_of``
        resolves another user's rules (``spec.user`` of a SubjectAccessReview)."""
        meta = {k: v for k, v in _d(body.get("metadata")).items() if k in ("name", "labels")}
        out: dict[str, Any] = {
            "kind": rt.kind,
            "apiVersion": rt.api_version,
            "metadata": {**meta, "creationTimestamp": None},
        }
        return out | self.answer(_d(body.get("spec")), user, rules, rules_of, namespace)

    def answer(
        self,
        spec: dict[str, Any],
        user: str,
        rules: tuple[rbac.Rule, ...],
        rules_of: RulesOf,
        namespace: str | None,
    ) -> dict[str, Any]:
        """The ``spec`` and ``status`` of the answer to a review of ``spec``."""
        raise NotImplementedError


class SelfSubjectReviewStrategy(ReviewStrategy):
    """``kubectl auth whoami``: the user's name and groups."""

    self_review = True

    def answer(
        self,
        spec: dict[str, Any],
        user: str,
        rules: tuple[rbac.Rule, ...],
        rules_of: RulesOf,
        namespace: str | None,
    ) -> dict[str, Any]:
        return {"status": {"userInfo": {"username": user, "groups": user_groups(user, rules)}}}


class SelfSubjectAccessReviewStrategy(ReviewStrategy):
    """``kubectl auth can-i``: whether the user's rules allow the attributes."""

    self_review = True

    def answer(
        self,
        spec: dict[str, Any],
        user: str,
        rules: tuple[rbac.Rule, ...],
        rules_of: RulesOf,
        namespace: str | None,
    ) -> dict[str, Any]:
        return {"spec": spec, "status": _access(rules, spec)}


class SelfSubjectRulesReviewStrategy(ReviewStrategy):
    """``kubectl auth can-i --list``: the user's rules."""

    self_review = True

    def answer(
        self,
        spec: dict[str, Any],
        user: str,
        rules: tuple[rbac.Rule, ...],
        rules_of: RulesOf,
        namespace: str | None,
    ) -> dict[str, Any]:
        return {"spec": spec, "status": _rules_status(rules)}


class SubjectAccessReviewStrategy(ReviewStrategy):
    """Whether ``spec.user``'s rules allow the attributes."""

    def answer(
        self,
        spec: dict[str, Any],
        user: str,
        rules: tuple[rbac.Rule, ...],
        rules_of: RulesOf,
        namespace: str | None,
    ) -> dict[str, Any]:
        who = str(spec.get("user") or "")
        subject = rules_of(who) if who else None
        return {"spec": spec, "status": _access(subject or (), spec)}


class LocalSubjectAccessReviewStrategy(SubjectAccessReviewStrategy):
    """A SubjectAccessReview in one namespace: its attributes must name no other (400)."""

    def answer(
        self,
        spec: dict[str, Any],
        user: str,
        rules: tuple[rbac.Rule, ...],
        rules_of: RulesOf,
        namespace: str | None,
    ) -> dict[str, Any]:
        attrs = _d(spec.get("resourceAttributes"))
        if attrs.get("namespace") not in (None, "", namespace):
            raise KubeSimApiError.bad_request(
                f"spec.resourceAttributes.namespace must match namespace: {namespace}"
            )
        return super().answer(spec, user, rules, rules_of, namespace)

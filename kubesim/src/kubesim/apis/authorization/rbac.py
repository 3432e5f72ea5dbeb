"""RBAC rule matching as the apiserver's RBAC authorizer does it (``ResourceMatches``).

A request is authorized against a *resource* that includes its subresource:
``pods``, ``pods/status``, ``pods/binding``, ``deployments/scale``, ``namespaces/finalize``.
A rule's resource grants exactly that string, or every resource (``*``), or one
subresource of every resource (``*/scale``), or every subresource of one resource
(``pods/*``, which does not grant ``pods`` itself). So a rule for ``pods`` does not let
its holder write ``pods/status``: the two are separate grants, as on a real cluster.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Rule", "allows", "request_resource", "resource_matches"]

#: (verb, API group, resource) with ``"*"`` for any; the resource as described above.
Rule = tuple[str, str, str]


def request_resource(plural: str, subresource: str | None) -> str:
    """The resource a request is authorized as: ``plural`` or ``plural/subresource``."""
    return f"{plural}/{subresource}" if subresource else plural


def resource_matches(rule: str, resource: str) -> bool:
    """Whether a rule's resource grants ``resource`` (see the module docstring)."""
    if rule in ("*", resource):
        return True
    parent, _, sub = resource.partition("/")
    if not sub:
        return False
    return rule in (f"*/{sub}", f"{parent}/*")


def allows(rules: Iterable[Rule], verb: str, group: str, resource: str) -> bool:
    """Whether any rule grants ``verb`` on ``resource`` in ``group``."""
    return any(
        v in ("*", verb) and g in ("*", group) and resource_matches(r, resource)
        for v, g, r in rules
    )

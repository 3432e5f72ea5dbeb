"""Status conditions: ``status.conditions`` entries read the way apimachinery's
``meta.IsStatusConditionTrue`` reads them.

An object's conditions are a list of ``{"type": ..., "status": "True" | "False" |
"Unknown", ...}`` entries (pods, nodes, deployments and most custom resources follow that
convention). :func:`is_condition_true` answers whether the one of a type says ``"True"``:
a missing ``status``, a missing condition, ``"Unknown"`` and malformed entries all read as
not true.
"""

from __future__ import annotations

from aioinformer._core.objects import KubeObject

__all__ = ["is_condition_true"]


def is_condition_true(obj: KubeObject, condition_type: str) -> bool:
    """Whether ``obj``'s ``status.conditions`` has ``condition_type`` with status "True"
    (e.g. ``is_condition_true(pod, "Ready")``, ``is_condition_true(node, "Ready")``).

    Args:
        obj: the object whose ``status.conditions`` are read.
        condition_type: the condition's ``type``, e.g. ``"Ready"``.
    """
    conditions = obj.field("status.conditions")
    if not isinstance(conditions, list):
        return False
    return any(
        isinstance(c, dict) and c.get("type") == condition_type and c.get("status") == "True"
        for c in conditions
    )

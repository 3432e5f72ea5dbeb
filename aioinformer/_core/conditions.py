"""Status conditions, read and written with the semantics of apimachinery's ``meta``
helpers (``IsStatusConditionTrue``, ``FindStatusCondition``, ``SetStatusCondition``,
``RemoveStatusCondition``) and the API conventions' ``metav1.Condition``.

An object's conditions are a list of ``{"type": ..., "status": "True" | "False" |
"Unknown", "reason": ..., "message": ..., "lastTransitionTime": ...,
"observedGeneration": ...}`` entries under ``status.conditions`` (pods, nodes, deployments
and most custom resources follow that convention).

* :func:`is_condition_true` answers whether the one of a type says ``"True"``: a missing
  ``status``, a missing condition, ``"Unknown"`` and malformed entries all read as not true.
* :func:`set_condition` writes one into a list of conditions or a status dict:
  ``lastTransitionTime`` moves only when the condition is new or its ``status`` changes
  (a new reason or message is not a transition), ``observedGeneration`` records the
  generation the condition was computed from, and it returns whether anything changed,
  so a reconcile can skip a status write that would change nothing.
* :func:`find_condition` and :func:`remove_condition` read (in a list, a status dict or
  an object) and drop one by type.

What is set is checked as ``metav1.Condition``'s validation checks it (a server whose
schema is that type would refuse it): ``type`` a (optionally domain-prefixed) name of at
most 316 characters, ``status`` one of the three (or a bool), ``reason`` a non-empty
CamelCase word (``^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$``, at most 1024 characters),
``message`` at most 32768 characters, ``observedGeneration`` not negative. A violation is
a :class:`~aioinformer.ConfigError` (a ``ValueError``).
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import KubeObject

__all__ = [
    "Condition",
    "ConditionStatus",
    "find_condition",
    "is_condition_true",
    "remove_condition",
    "set_condition",
]

ConditionStatus: TypeAlias = Literal["True", "False", "Unknown"]
"""A condition's ``status``."""


class Condition(TypedDict):
    """One ``status.conditions`` entry, as ``metav1.Condition`` spells it."""

    type: str
    """What it is about, CamelCase (``"Ready"``, ``"Available"``, ``"example.com/Synced"``)."""
    status: ConditionStatus
    """``"True"``, ``"False"`` or ``"Unknown"``."""
    reason: str
    """Why, as a CamelCase word a program can test (``"PodsReady"``)."""
    message: str
    """Why, for people."""
    lastTransitionTime: str
    """When ``status`` last changed (RFC 3339, seconds, UTC)."""
    observedGeneration: NotRequired[int]
    """The object's ``metadata.generation`` the condition was computed from."""


_TYPE = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
)
_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_TYPE_LIMIT, _REASON_LIMIT, _MESSAGE_LIMIT = 316, 1024, 32768
_STATUSES = ("True", "False", "Unknown")


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


def _conditions(target: list[Any] | MutableMapping[str, Any], create: bool) -> list[Any] | None:
    """The list of conditions ``target`` is or holds (its ``"conditions"``, made when
    ``create`` and absent)."""
    if isinstance(target, list):
        return target
    if not isinstance(target, MutableMapping):
        raise ConfigError(f"conditions are a list or a status dict, not {type(target).__name__}")
    found = target.get("conditions")
    if found is None and create:
        found = target["conditions"] = []
    if found is not None and not isinstance(found, list):
        raise ConfigError(f"status.conditions is a list, not {type(found).__name__}")
    return found


def find_condition(
    conditions: KubeObject | list[Any] | MutableMapping[str, Any], condition_type: str
) -> dict[str, Any] | None:
    """The condition of ``condition_type``, or None (``meta.FindStatusCondition``): the
    entry itself in a list or status dict, a decoded copy of an object's.

    Args:
        conditions: a list of conditions, a status dict holding one as ``"conditions"``,
            or an object (its ``status.conditions``).
        condition_type: the condition's ``type``.
    """
    if isinstance(conditions, KubeObject):
        listed = conditions.field("status.conditions")
        found = listed if isinstance(listed, list) else []
    else:
        found = _conditions(conditions, create=False) or []
    for entry in found:
        if isinstance(entry, dict) and entry.get("type") == condition_type:
            return entry
    return None


def remove_condition(conditions: list[Any] | MutableMapping[str, Any], condition_type: str) -> bool:
    """Drop the condition of ``condition_type``; whether there was one
    (``meta.RemoveStatusCondition``).

    Args:
        conditions: a list of conditions, or a status dict holding one as ``"conditions"``.
        condition_type: the condition's ``type``.
    """
    found = _conditions(conditions, create=False)
    if found is None:
        return False
    kept = [e for e in found if not (isinstance(e, dict) and e.get("type") == condition_type)]
    removed = len(kept) != len(found)
    found[:] = kept
    return removed


def set_condition(
    conditions: list[Any] | MutableMapping[str, Any],
    condition_type: str,
    status: ConditionStatus | bool,
    *,
    reason: str,
    message: str = "",
    observed_generation: int | None = None,
    now: datetime | None = None,
) -> bool:
    """Set the condition of ``condition_type`` in place; whether anything changed
    (``meta.SetStatusCondition``): when nothing did, a status write can be skipped.

    A new condition is appended with ``lastTransitionTime`` ``now``. An existing one keeps
    its ``lastTransitionTime`` unless its ``status`` changes (then it is ``now``); its
    reason, message and observedGeneration are updated; the other entries, and the
    order, stay as they are. Checked as the module docstring says (ConfigError).

    Args:
        conditions: a list of conditions, or a status dict (its ``"conditions"`` list is
            made when absent), e.g. ``site.field("status", {})`` (a copy of the object's).
        condition_type: the condition's ``type``, CamelCase (``"Ready"``).
        status: ``"True"``, ``"False"`` or ``"Unknown"``; a bool means True or False.
        reason: why, a CamelCase word (``"PodsReady"``); required, as the API requires it.
        message: why, for people (may be empty).
        observed_generation: the object's ``metadata.generation`` the condition was
            computed from (None: the entry's is left as it is).
        now: the transition time (default: the current time); aware, or taken as UTC.
    """
    if isinstance(status, bool):
        status = "True" if status else "False"
    _check(condition_type, status, reason, message, observed_generation)
    found = _conditions(conditions, create=True)
    assert found is not None  # (create=True)
    entry = find_condition(found, condition_type)
    if entry is None:
        new: dict[str, Any] = {
            "type": condition_type,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": _rfc3339(now),
        }
        if observed_generation is not None:
            new["observedGeneration"] = observed_generation
        found.append(new)
        return True
    changed = False
    if entry.get("status") != status:
        entry["status"] = status
        entry["lastTransitionTime"] = _rfc3339(now)
        changed = True
    elif not entry.get("lastTransitionTime"):  # (malformed: the API requires one)
        entry["lastTransitionTime"] = _rfc3339(now)
        changed = True
    updates: dict[str, Any] = {"reason": reason, "message": message}
    if observed_generation is not None:
        updates["observedGeneration"] = observed_generation
    for name, value in updates.items():
        if entry.get(name) != value:
            entry[name] = value
            changed = True
    return changed


def _check(
    condition_type: str, status: str, reason: str, message: str, generation: int | None
) -> None:
    if not (
        isinstance(condition_type, str)
        and len(condition_type) <= _TYPE_LIMIT
        and _TYPE.fullmatch(condition_type)
    ):
        raise ConfigError(
            f"a condition's type is a name like 'Ready' or 'example.com/Synced' "
            f"(at most {_TYPE_LIMIT} characters), not {condition_type!r}"
        )
    if status not in _STATUSES:
        raise ConfigError(f"a condition's status is 'True', 'False' or 'Unknown', not {status!r}")
    if not (isinstance(reason, str) and len(reason) <= _REASON_LIMIT and _REASON.fullmatch(reason)):
        raise ConfigError(
            f"a condition's reason is a CamelCase word like 'PodsReady' (letters, digits, "
            f"'_', ',' and ':', starting with a letter), not {reason!r}"
        )
    if not isinstance(message, str) or len(message) > _MESSAGE_LIMIT:
        raise ConfigError(f"a condition's message is a str of at most {_MESSAGE_LIMIT} characters")
    if generation is not None and (isinstance(generation, bool) or generation < 0):
        raise ConfigError(f"observed_generation is a generation (>= 0), not {generation!r}")


def _rfc3339(now: datetime | None) -> str:
    """``now`` (default: the current time) as metav1.Time writes it: UTC, seconds."""
    if now is None:
        now = datetime.now(UTC)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

"""``metadata.managedFields``: who wrote which fields, in the apiserver's FieldsV1 shape.

KubeSim records one entry per (manager, operation, subresource), as the apiserver does for
non-apply writes, so stored objects have the realistic size and shape clients see (the
informer's transform that drops managedFields has something to drop). The field set is
derived from the request body; it is an approximation of server-side apply's tracking,
good enough for size and shape, not for conflict detection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from aioinformer.testing._kubesim.timefmt import now_rfc3339

__all__ = ["fields_v1", "update_managed_fields"]

_SKIP_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "generateName",
        "selfLink",
    }
)


def _tree(value: Any, owned: bool) -> dict[str, Any]:
    out: dict[str, Any] = {".": {}} if owned else {}
    t = type(value)
    if t is dict:
        for k, v in value.items():
            tv = type(v)
            out["f:" + k] = _tree(v, True) if tv is dict or tv is list else {}
    elif t is list:
        for item in value:
            if type(item) is dict:
                name = item.get("name")
                if type(name) is str:
                    out["k:" + orjson.dumps({"name": name}).decode()] = _tree(item, True)
    return out


def fields_v1(body: Mapping[str, Any], subresource: str | None) -> dict[str, Any]:
    """The FieldsV1 set a write of ``body`` touches (status only, for ``/status``)."""
    out: dict[str, Any] = {}
    for top, value in body.items():
        if top in ("kind", "apiVersion"):
            continue
        if (subresource == "status") != (top == "status"):
            continue
        if top == "metadata" and isinstance(value, dict):
            meta = {k: v for k, v in value.items() if k not in _SKIP_META}
            if meta:
                out["f:metadata"] = _tree(meta, False)
        elif isinstance(value, (Mapping, list)):
            out[f"f:{top}"] = _tree(value, False)
        else:
            out[f"f:{top}"] = {}
    return out


def update_managed_fields(
    obj: dict[str, Any],
    body: Mapping[str, Any],
    manager: str,
    api_version: str,
    subresource: str | None,
) -> None:
    """Record in ``obj`` that ``manager`` wrote ``body`` (replacing its previous entry for
    the same operation and subresource)."""
    fields = fields_v1(body, subresource)
    meta = obj.setdefault("metadata", {})
    entries = [
        e
        for e in meta.get("managedFields") or []
        if not (
            e.get("manager") == manager
            and e.get("operation") == "Update"
            and e.get("subresource") == subresource
        )
    ]
    if fields:
        entry: dict[str, Any] = {
            "manager": manager,
            "operation": "Update",
            "apiVersion": api_version,
            "time": now_rfc3339(),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields,
        }
        if subresource:
            entry["subresource"] = subresource
        entries.append(entry)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)

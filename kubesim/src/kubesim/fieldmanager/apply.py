"""Server-side apply's field-manager half: what an apply configuration owns and changes.

The verb itself (``PATCH`` with ``Content-Type: application/apply-patch+yaml``) is
:func:`kubesim.registry.apply.server_side_apply`; here are its rules, as kube-apiserver
v1.28 applies them (``tests/kubesim/conformance/22a``-``22d``):

* :func:`check_patch_options`: ``fieldManager`` is required (422), ``force`` only goes with
  apply (422 otherwise); :func:`decode_configuration` reads the configuration (YAML or
  JSON) or answers the recorded 400;
* :func:`prune_unapplied`: the fields the manager applied last time and no longer applies
  are removed, unless another manager owns them;
* :func:`take_fields`: changing a field another manager owns is a 409 ``Apply failed with
  N conflict(s)`` (:func:`conflict_error`) with one ``FieldManagerConflict`` cause per
  field, unless ``force`` moves the fields to the applier; applying the value a field
  already has shares it (no conflict). The manager ``kubectl`` may take over the fields of
  the ``kubectl.kubernetes.io/last-applied-configuration`` annotation
  (:func:`last_applied_fields`, the client-side apply upgrade), and keeps that annotation
  up to date (:func:`set_last_applied`) when the object has it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from kubesim.encoding.timefmt import now_rfc3339
from kubesim.errors import KubeSimApiError, status_body
from kubesim.fieldmanager.fieldpath import Path, iteration_order, path_string
from kubesim.fieldmanager.managed import (
    STRIPPED,
    Entry,
    TrackedType,
    outside_subresource,
)
from kubesim.fieldmanager.typed import (
    MISSING,
    compare,
    field_set,
    named_field_parents,
    remove_items,
)

__all__ = [
    "APPLY_PATCH",
    "LAST_APPLIED",
    "check_patch_options",
    "conflict_error",
    "decode_configuration",
    "is_apply",
    "last_applied_fields",
    "prune_unapplied",
    "query_true",
    "set_last_applied",
    "take_fields",
]

APPLY_PATCH = "application/apply-patch+yaml"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_NEVER_PRUNED = frozenset({("f:metadata",), ("f:apiVersion",), ("f:kind",)})


def is_apply(content_type: str) -> bool:
    """Whether a PATCH body of this Content-Type is an apply configuration."""
    return content_type.split(";", 1)[0].strip().lower() == APPLY_PATCH


def query_true(value: str | None) -> bool:
    """A boolean query parameter as Go's ``strconv.ParseBool`` reads true."""
    return value in ("1", "t", "T", "true", "TRUE", "True")


def _patch_options_invalid(field: str, reason: str, message: str) -> KubeSimApiError:
    full = f'PatchOptions.meta.k8s.io "" is invalid: {field}: {message}'
    details = {
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [{"reason": reason, "message": message, "field": field}],
    }
    return KubeSimApiError(422, status_body(422, full, "Invalid", details))


def check_patch_options(content_type: str, query: Mapping[str, str]) -> None:
    """The PatchOptions rules: apply needs ``fieldManager``; ``force`` is for apply only."""
    if is_apply(content_type):
        if not query.get("fieldManager"):
            raise _patch_options_invalid(
                "fieldManager", "FieldValueRequired", "Required value: is required for apply patch"
            )
        if len(query["fieldManager"]) > 128:
            raise _patch_options_invalid(
                "fieldManager", "FieldValueTooLong", "Too long: may not be longer than 128"
            )
    elif "force" in query:
        raise _patch_options_invalid(
            "force", "FieldValueForbidden", "Forbidden: may not be specified for non-apply patch"
        )


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """YAML as the apiserver reads it: timestamps stay strings."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def decode_configuration(raw: bytes, kind: str, api_version: str) -> dict[str, Any]:
    """The apply configuration in ``raw`` (YAML or JSON) for an endpoint of ``kind`` in
    ``api_version``, or the 400 the apiserver answers."""
    try:
        doc = yaml.load(raw, Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise KubeSimApiError.bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise KubeSimApiError.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): "
            "couldn't get version/kind; json parse error: Object 'Kind' is missing"
        )
    doc_kind, doc_version = doc.get("kind"), doc.get("apiVersion")
    if doc_kind != kind and doc_kind is not None:
        raise KubeSimApiError.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): "
            f"kind {doc_kind} does not match the expected kind {kind}"
        )
    if doc_version is not None and doc_version != api_version:
        raise KubeSimApiError.bad_request(
            f"the API version in the data ({doc_version}) does not match the expected API "
            f"version ({api_version})"
        )
    meta = doc.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise KubeSimApiError.bad_request("metadata must be an object")
    if isinstance(meta, dict) and meta.get("managedFields"):
        raise KubeSimApiError.bad_request("metadata.managedFields must be nil")
    return doc


def prune_unapplied(merged: Any, last: set[Path], entries: list[Entry], t: Any) -> dict[str, Any]:
    """Remove what the applier applied last time, no longer applies and nobody else owns."""
    if not last:
        return dict(merged)
    owned: set[Path] = set()
    for e in entries:
        owned |= e.fields
    gone = named_field_parents(last, t) - named_field_parents(owned, t) - _NEVER_PRUNED
    out = remove_items(merged, gone, t)
    return dict(out) if out is not MISSING else {}


def take_fields(
    rt: TrackedType,
    live: dict[str, Any],
    merged: dict[str, Any],
    entries: list[Entry],
    mine: Entry,
    sub: str,
    t: Any,
    force: bool,
) -> None:
    """Conflicts (409 unless forced) and the ownership changes the merged object makes."""
    c = compare(live, merged, t)
    changed = outside_subresource(c.added | c.modified, rt, sub) - STRIPPED
    removed = outside_subresource(c.removed, rt, sub)
    conflicts = {id(e): e.fields & changed for e in entries if e is not mine}
    conflicts = {k: v for k, v in conflicts.items() if v}
    if conflicts and not force:
        allowed = last_applied_fields(live, t) if mine.manager == "kubectl" else set()
        if any(v - allowed for v in conflicts.values()):
            by_id = {id(e): e for e in entries}
            raise conflict_error(
                {by_id[k]: v - allowed for k, v in conflicts.items() if v - allowed}
            )
    for e in entries:
        if e is not mine:
            e.fields -= changed
            e.fields -= removed
    if not c.is_same():
        mine.time = now_rfc3339()


def _manager_id(e: Entry) -> str:
    d: dict[str, str] = {"manager": e.manager, "operation": e.operation}
    if e.operation == "Update":
        d["apiVersion"] = e.api_version
    if e.subresource:
        d["subresource"] = e.subresource
    return json.dumps(d, separators=(",", ":"))


def _print_manager(e: Entry) -> str:
    out = json.dumps(e.manager)
    if e.subresource:
        out += f" with subresource {json.dumps(e.subresource)}"
    if e.operation == "Update":
        out += f" using {e.api_version}"
    return out


def conflict_error(conflicts: Mapping[Entry, set[Path]]) -> KubeSimApiError:
    ordered = sorted(conflicts, key=_manager_id)
    pairs = [(e, p) for e in ordered for p in iteration_order(conflicts[e])]
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_print_manager(e)}",
            "field": path_string(p),
        }
        for e, p in pairs
    ]
    if len(pairs) == 1:
        e, p = pairs[0]
        msg = f"Apply failed with 1 conflict: conflict with {_print_manager(e)}: {path_string(p)}"
    else:
        lines: list[str] = []
        for e in ordered:
            lines.append(f"conflicts with {_print_manager(e)}:")
            lines.extend(f"- {path_string(p)}" for p in iteration_order(conflicts[e]))
        msg = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
    return KubeSimApiError(409, status_body(409, msg, "Conflict", {"causes": causes}))


def _last_applied(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        doc = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def last_applied_fields(live: Mapping[str, Any], t: Any) -> set[Path]:
    """The fields of the client-side apply annotation: a ``kubectl`` apply may take them."""
    doc = _last_applied(live)
    return field_set(doc, t) if doc is not None else set()


def set_last_applied(merged: dict[str, Any], config: Mapping[str, Any]) -> None:
    """Keep the client-side apply annotation equal to what ``kubectl`` applied last."""
    doc = json.loads(json.dumps(config))
    annotations = (doc.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n"
    merged.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = text

"""Server-side apply: ``PATCH`` with ``Content-Type: application/apply-patch+yaml``.

:func:`server_side_apply` merges an apply configuration (YAML or JSON) into the object,
as kube-apiserver v1.28 does (``tests/kubesim/conformance/22a``-``22d``):

* ``fieldManager`` is required (422), ``force`` only goes with apply (422 otherwise, see
  :func:`check_patch_options`); a ``metadata.resourceVersion`` in the configuration is a
  precondition (409), a different ``metadata.name`` is a 400.
* A missing object is created from the configuration (201); otherwise the configuration is
  merged into it (:func:`._typed.merge`) and the fields the manager applied last time and no
  longer applies are removed, unless another manager owns them.
* Changing a field another manager owns is a 409 ``Apply failed with N conflict(s)`` with
  one ``FieldManagerConflict`` cause per field, unless ``force=true`` moves the fields to the
  applier. Applying the value a field already has shares it (no conflict). The manager
  ``kubectl`` may take over the fields of the ``kubectl.kubernetes.io/last-applied-
  configuration`` annotation (the client-side apply upgrade), and keeps that annotation
  up to date when the object has it.
* The applier's entry (operation ``Apply``) lists what it applied; its ``time`` changes only
  when the object does. An apply that changes nothing keeps the resourceVersion.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

from kubesim.encoding.timefmt import now_rfc3339
from kubesim.errors import KubeSimApiError, status_body
from kubesim.fieldmanager.fieldpath import Path, iteration_order, path_string
from kubesim.fieldmanager.managed import (
    STRIPPED,
    Entry,
    decode_entries,
    encode_entries,
    entry_of,
    outside_subresource,
    without_managed_fields,
)
from kubesim.fieldmanager.schemas import type_for
from kubesim.fieldmanager.typed import (
    MISSING,
    compare,
    field_set,
    merge,
    named_field_parents,
    remove_items,
)

if TYPE_CHECKING:
    from kubesim.registry.resource import ResourceType
    from kubesim.registry.store import Api
    from kubesim.storage.mvcc import Stored

__all__ = ["APPLY_PATCH", "check_patch_options", "is_apply", "server_side_apply"]

APPLY_PATCH = "application/apply-patch+yaml"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_NEVER_PRUNED = frozenset({("f:metadata",), ("f:apiVersion",), ("f:kind",)})


def is_apply(content_type: str) -> bool:
    """Whether a PATCH body of this Content-Type is an apply configuration."""
    return content_type.split(";", 1)[0].strip().lower() == APPLY_PATCH


def _true(value: str | None) -> bool:
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


def decode_configuration(raw: bytes, rt: ResourceType) -> dict[str, Any]:
    """The apply configuration in ``raw`` (YAML or JSON), or the 400 the apiserver answers."""
    try:
        doc = yaml.load(raw, Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise KubeSimApiError.bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise KubeSimApiError.bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): "
            "couldn't get version/kind; json parse error: Object 'Kind' is missing"
        )
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if kind != rt.kind and kind is not None:
        raise KubeSimApiError.bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): "
            f"kind {kind} does not match the expected kind {rt.kind}"
        )
    if api_version is not None and api_version != rt.api_version:
        raise KubeSimApiError.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.api_version})"
        )
    meta = doc.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise KubeSimApiError.bad_request("metadata must be an object")
    if isinstance(meta, dict) and meta.get("managedFields"):
        raise KubeSimApiError.bad_request("metadata.managedFields must be nil")
    return doc


def server_side_apply(
    api: Api,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    raw: bytes,
    query: Mapping[str, str],
    *,
    subresource: str | None = None,
) -> tuple[Stored, bool]:
    """Apply the configuration in ``raw``; returns the object and whether it was created."""
    check_patch_options(APPLY_PATCH, query)
    manager = query["fieldManager"]
    force = _true(query.get("force"))
    config = decode_configuration(raw, rt)
    meta: dict[str, Any] = config.setdefault("metadata", {}) or {}
    config["metadata"] = meta
    if meta.get("name") not in (None, name):
        raise KubeSimApiError.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the "
            f"URL ({name})"
        )
    meta["name"] = name
    config.setdefault("apiVersion", rt.api_version)
    config.setdefault("kind", rt.kind)
    sub = subresource or ""
    t = type_for(rt, api.mvcc)
    cur = api.store(rt).get(api.key(rt, namespace, name))
    applied = outside_subresource(field_set(without_managed_fields(config), t), rt, sub)
    applied -= STRIPPED
    if cur is None:
        if sub:
            raise KubeSimApiError.not_found(rt.plural, rt.stored_group, name)
        entry = Entry(manager, "Apply", rt.api_version, "", now_rfc3339(), applied)
        stored = api.create(
            rt, namespace, config, manager=manager, managed_fields=encode_entries([entry])
        )
        return stored, True
    rv = meta.get("resourceVersion")
    if rv and str(rv) != str(cur.rv):
        raise KubeSimApiError.conflict(rt.plural, rt.stored_group, name)
    live = api.view(rt, cur)
    live.setdefault("apiVersion", rt.api_version)
    live.setdefault("kind", rt.kind)
    entries = decode_entries(live["metadata"])
    mine = entry_of(entries, Entry(manager, "Apply", rt.api_version, sub))
    last, mine.fields, mine.api_version = mine.fields, applied, rt.api_version
    live_fields = without_managed_fields(live)
    merged = merge(live_fields, without_managed_fields(config), t)
    merged = _prune(merged, last, entries, t)
    _take_fields(api, rt, live_fields, merged, entries, mine, sub, t, force)
    if manager == "kubectl" and LAST_APPLIED in ((live["metadata"].get("annotations")) or {}):
        _set_last_applied(merged, config)
    return (
        api._write(
            rt, cur, merged, subresource, manager, old=live, managed_fields=encode_entries(entries)
        ),
        False,
    )


def _prune(merged: Any, last: set[Path], entries: list[Entry], t: Any) -> dict[str, Any]:
    """Remove what the applier applied last time, no longer applies and nobody else owns."""
    if not last:
        return dict(merged)
    owned: set[Path] = set()
    for e in entries:
        owned |= e.fields
    gone = named_field_parents(last, t) - named_field_parents(owned, t) - _NEVER_PRUNED
    out = remove_items(merged, gone, t)
    return dict(out) if out is not MISSING else {}


def _take_fields(
    api: Api,
    rt: ResourceType,
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
        allowed = _last_applied_fields(live, t) if mine.manager == "kubectl" else set()
        if any(v - allowed for v in conflicts.values()):
            by_id = {id(e): e for e in entries}
            raise _conflict_error(
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


def _conflict_error(conflicts: Mapping[Entry, set[Path]]) -> KubeSimApiError:
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


def _last_applied_fields(live: Mapping[str, Any], t: Any) -> set[Path]:
    """The fields of the client-side apply annotation: a ``kubectl`` apply may take them."""
    doc = _last_applied(live)
    return field_set(doc, t) if doc is not None else set()


def _set_last_applied(merged: dict[str, Any], config: Mapping[str, Any]) -> None:
    """Keep the client-side apply annotation equal to what ``kubectl`` applied last."""
    doc = json.loads(json.dumps(config))
    annotations = (doc.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n"
    merged.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = text

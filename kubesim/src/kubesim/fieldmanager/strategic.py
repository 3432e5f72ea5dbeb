"""Strategic merge patch as kube-apiserver v1.28 applies it, on decoded JSON values.

A port of the apply half of ``k8s.io/apimachinery/pkg/util/strategicpatch``, driven by a table
of the built-in kinds' ``patchStrategy``/``patchMergeKey`` struct tags (including its
list-ordering rules). Pure Python (no I/O, no asyncio). Inputs are never mutated and the result
shares no mutable container with them; failures raise :class:`~kubesim.errors.PatchError`,
which carries the Status the real apiserver answers with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesim.encoding.gofmt import go_value, json_kind
from kubesim.errors import PatchError
from kubesim.fieldmanager.jsonpatch import copy_json

__all__ = ["STRATEGIC_MERGE_KINDS", "strategic_merge_patch"]

_Meta = tuple[str, str]  # (patch strategy, patch merge key); "" key = list of primitives


def _merge(key: str) -> _Meta:
    return ("merge", key)


def _prefixed(prefix: str, table: Mapping[str, _Meta]) -> dict[str, _Meta]:
    return {f"{prefix}.{k}": v for k, v in table.items()}


_CONTAINER: Final = {
    "ports": _merge("containerPort"),
    "env": _merge("name"),
    "volumeMounts": _merge("mountPath"),
    "volumeDevices": _merge("devicePath"),
}
_POD_SPEC: Final = {
    "volumes": _merge("name"),
    "imagePullSecrets": _merge("name"),
    "hostAliases": _merge("ip"),
    "topologySpreadConstraints": _merge("topologyKey"),
    "schedulingGates": _merge("name"),
    "resourceClaims": _merge("name"),
    **{c: _merge("name") for c in ("containers", "initContainers", "ephemeralContainers")},
    **{
        k: v
        for c in ("containers", "initContainers", "ephemeralContainers")
        for k, v in _prefixed(c, _CONTAINER).items()
    },
}  # tolerations, readinessGates, ...: no strategy (atomic, replaced)
_META: Final = _prefixed("metadata", {"ownerReferences": _merge("uid"), "finalizers": _merge("")})
_CONDITIONS: Final = {"status.conditions": _merge("type")}
_POD_TEMPLATE: Final = {**_META, **_prefixed("spec", _POD_SPEC)}  # relative to the template
_TEMPLATE: Final = _prefixed("spec.template", _POD_TEMPLATE)
_WORKLOAD: Final = {**_META, **_TEMPLATE, **_CONDITIONS}
_SCHEMAS: Final[dict[str, dict[str, _Meta]]] = {
    "Pod": {
        **_META,
        **_prefixed("spec", _POD_SPEC),
        **_CONDITIONS,
        "status.podIPs": _merge("ip"),
        "status.hostIPs": _merge("ip"),
        "status.resourceClaimStatuses": _merge("name"),
    },
    **dict.fromkeys(
        ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job"),
        _WORKLOAD,
    ),
    "CronJob": {**_META, **_prefixed("spec.jobTemplate", {**_META, **_TEMPLATE})},
    "PodTemplate": {**_META, **_prefixed("template", _POD_TEMPLATE)},
    "Node": {  # spec.taints has no patch strategy upstream: it is replaced
        **_META,
        **_CONDITIONS,
        "spec.podCIDRs": _merge(""),
        "status.addresses": _merge("type"),
    },
    "Service": {**_META, **_CONDITIONS, "spec.ports": _merge("port")},
    "Namespace": {**_META, **_CONDITIONS},
}
STRATEGIC_MERGE_KINDS: Final = frozenset(_SCHEMAS)
"""Kinds with list merge keys in the table (any other kind merges maps, replaces lists)."""

_ORDER: Final = "$setElementOrder/"
_DELETE_FROM: Final = "$deleteFromPrimitiveList/"


def _same(a: Any, b: Any) -> bool:
    """Go ``==`` on decoded JSON scalars (numbers are all float64; bools never numbers)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return bool(a == b)


def _find(items: list[Any], value: Any, key: str) -> int:
    """``index()`` of strategicpatch: position of the element with that key value, or -1."""
    for i, e in enumerate(items):
        if _same(e.get(key) if key and isinstance(e, dict) else (None if key else e), value):
            return i
    return -1


def _no_key(e: Any, key: str) -> PatchError:
    return PatchError(f"map: {go_value(e)} does not contain declared merge key: {key}", 500)


def _keyed(e: Any, key: str) -> Any:
    if not key:
        return e
    if not isinstance(e, dict) or key not in e:
        raise _no_key(e, key)
    return e[key]


def _order(merged: list[Any], patch_order: list[Any], server: list[Any], key: str) -> list[Any]:
    """``normalizeElementOrder``: patch items in patch order, interleaved with server-only
    items in server order (``mergeSortedSlice``)."""
    pos = [(_find(patch_order, _keyed(e, key), key), e) for e in merged]
    right = [e for i, e in sorted((p for p in pos if p[0] >= 0), key=lambda p: p[0])]
    left = [e for i, e in pos if i < 0]
    left.sort(key=lambda e: i if (i := _find(server, _keyed(e, key), key)) >= 0 else len(server))
    out: list[Any] = []
    while left or right:
        if left and right:
            li, ri = (_find(server, _keyed(x[0], key), key) for x in (left, right))
            take_left = li >= 0 and ri >= 0 and li < ri
        else:
            take_left = bool(left)
        out.append((left if take_left else right).pop(0))
    return out


def _dedupe(s: list[Any]) -> list[Any]:
    """``deduplicateScalars``, including how it reorders."""
    s, i, n = list(s), 0, len(s) - 1
    while i < n:
        j = i + 1
        while j <= n:
            if _same(s[i], s[j]):
                s[j] = s[n]
                s, n, j = s[:n], n - 1, j - 1
            j += 1
        i += 1
    return s


def _category(v: Any) -> str:
    return "map" if isinstance(v, dict) else "list" if isinstance(v, list | tuple) else ""


def _elem_kind(*lists: list[Any]) -> str:
    kinds = []
    for e in (e for lst in lists for e in lst):
        k = "map" if isinstance(e, dict) else "list" if isinstance(e, list) else json_kind(e)
        kinds.append("null" if e is None else k)
    if kinds and kinds[0] == "list":
        raise PatchError("lists of lists are not supported", 422)
    if len(set(kinds)) > 1:
        raise PatchError(f"list element types are not identical: {go_value(list(lists))}", 500)
    return kinds[0] if kinds else ""


class _SMP:
    """One strategic-merge application: ``schema`` maps dotted paths to list metadata."""

    def __init__(self, schema: Mapping[str, _Meta]) -> None:
        self.schema = schema

    def clean(self, v: Any, path: str) -> Any:
        """A patch value for a location absent from the target, directives applied."""
        if isinstance(v, dict):
            return self.merge_map({}, v, path)
        if isinstance(v, list | tuple):  # as upstream: taken as is, minus directives
            strategy, key = self.schema.get(path, ("", ""))
            if strategy == "merge" and key:
                v = [e for e in v if not (isinstance(e, dict) and "$patch" in e)]
            return [self.clean(e, path) for e in v]
        return v

    def merge_map(self, orig: dict[str, Any], patch: Mapping[str, Any], path: str) -> Any:
        """``mergeMap``: merge ``patch`` into ``orig`` (a private copy) and return it."""
        patch = dict(patch)
        if "$patch" in patch:
            directive = patch.pop("$patch")
            if directive == "replace":
                return self.merge_map({}, patch, path)
            if directive == "delete":
                return {}
            if directive != "merge":  # upstream rejects even "merge" here; we accept it
                raise PatchError(f"unknown patch type: {directive} in map: {go_value(patch)}", 500)
        if "$retainKeys" in patch:
            keep = patch.pop("$retainKeys")
            if not isinstance(keep, list) or any(
                v is not None and not k.startswith((_DELETE_FROM, _ORDER)) and k not in keep
                for k, v in patch.items()
            ):
                raise PatchError("invalid patch format of retainKeys", 400)
            for k in [k for k in orig if k not in keep]:
                del orig[k]
        for k in [k for k in patch if k.startswith(_ORDER)]:
            field = k[len(_ORDER) :]
            self.set_element_order(orig, patch, field, patch.pop(k), f"{path}.{field}".lstrip("."))
        for k, v in patch.items():
            is_delete = k.startswith(_DELETE_FROM)
            if is_delete:
                k = k[len(_DELETE_FROM) :]
                if v is not None and not isinstance(v, list | tuple):
                    raise PatchError("invalid patch format of primitive list", 400)
            sub = f"{path}.{k}".lstrip(".")
            if v is None:
                orig.pop(k, None)
            elif k not in orig or _category(orig[k]) != _category(v):
                if not is_delete:
                    orig[k] = self.clean(v, sub)
            elif isinstance(orig[k], dict):
                orig[k] = self.merge_map(orig[k], v, sub)
            elif isinstance(orig[k], list):
                orig[k] = self.merge_list(orig[k], list(v), sub, is_delete)
            else:
                orig[k] = v
        return orig

    def merge_list(
        self, orig: list[Any], patch: list[Any], path: str, is_delete: bool
    ) -> list[Any]:
        """``mergeSliceHandler`` + ``mergeSlice``."""
        strategy, key = self.schema.get(path, ("", ""))
        if is_delete:  # $deleteFromPrimitiveList/<field>
            return [e for e in orig if not any(_same(e, d) for d in patch)]
        if strategy != "merge":
            return [self.clean(e, path) for e in patch]
        if not orig and not patch:
            return orig
        if _elem_kind(orig, patch) != "map":
            return _order(_dedupe([*orig, *patch]), patch, orig, "")
        if not key:
            raise PatchError(f"cannot merge lists without merge key for {path}", 500)
        plain, replace = [], False
        for e in patch:
            directive = e.get("$patch")
            if "$patch" not in e:
                plain.append(e)
            elif directive == "delete":
                value = _keyed(e, key)
                orig = [o for o in orig if not (key in o and _same(o[key], value))]
            elif directive == "replace":
                replace = True
            elif directive == "merge":
                raise PatchError("merging lists cannot yet be specified in the patch", 500)
            else:
                raise PatchError(f"unknown patch type: {directive} in map: {go_value(e)}", 500)
        if replace:
            orig, plain = [self.merge_map({}, e, path) for e in plain], []
        merged = list(orig)
        for e in plain:
            i = _find(merged, _keyed(e, key), key)
            if i >= 0:
                merged[i] = self.merge_map(merged[i], e, path)
            else:
                merged.append(self.merge_map({}, e, path))
        return _order(merged, plain, orig, key)

    def set_element_order(
        self, orig: dict[str, Any], patch: dict[str, Any], field: str, order: Any, path: str
    ) -> None:
        """``mergePatchIntoOriginal``: merge list ``field`` then order it by ``order``."""
        strategy, key = self.schema.get(path, ("", ""))
        plist = patch.pop(field, [])
        if not isinstance(order, list) or not isinstance(plist, list):
            raise PatchError("invalid patch format of setElementOrder list", 400)
        # every non-delete patch item must appear in the order list, in that order
        at = 0
        for e in plist:
            if key and isinstance(e, dict) and e.get("$patch") == "delete":
                continue
            want = _keyed(e, key)
            found = next(
                (j for j in range(at, len(order)) if _same(want, _keyed(order[j], key))), -1
            )
            if found < 0:
                raise PatchError(
                    f"The order in patch list:\n{go_value(plist)}\n doesn't match "
                    f"$setElementOrder list:\n{go_value(order)}\n",
                    500,
                )
            at = found + 1
        current = orig.get(field)
        base = current if isinstance(current, list) else []
        if field not in orig and not plist:
            return
        merged = self.merge_list(base, plist, path, False) if plist else base
        orig[field] = _order(merged, order, base, key) if strategy == "merge" else merged


def strategic_merge_patch(target: Any, patch: Any, kind: str) -> Any:
    """Apply a Kubernetes strategic merge patch for an object of ``kind``.

    Maps merge and ``null`` deletes a key, as in a merge patch. Lists listed in the
    kind's table merge by their merge key (lists of primitives with strategy merge are
    a de-duplicated union); other lists are replaced. Honours the directives ``$patch``
    (``replace``/``delete`` in a map or list element; ``merge`` in a map is accepted as
    a no-op), ``$retainKeys``, ``$setElementOrder/<f>`` and
    ``$deleteFromPrimitiveList/<f>``; no directive key reaches the result. Resulting list
    order follows upstream: patch items in patch order, interleaved with server-only
    items in server order. A non-object patch raises ``PatchError`` (400).
    """
    if patch is None:
        return copy_json(target)
    if not isinstance(patch, dict):
        raise PatchError(
            f"json: cannot unmarshal {json_kind(patch)} into Go value of type "
            "map[string]interface {}",
            400,
        )
    original = copy_json(target) if isinstance(target, dict) else {}
    return _SMP(_SCHEMAS.get(kind, _META)).merge_map(original, patch, "")

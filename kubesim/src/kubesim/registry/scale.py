"""The ``scale`` subresource: an ``autoscaling/v1`` Scale view of a workload (23a-23c).

Served for Deployments, StatefulSets and ReplicaSets, and for custom resources whose CRD
version declares ``subresources.scale`` (its ``specReplicasPath``, ``statusReplicasPath``
and optional ``labelSelectorPath``):

* GET answers ``{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{name, namespace,
  uid, resourceVersion, creationTimestamp},"spec":{"replicas"},"status":{"replicas",
  "selector"}}`` with the parent's resourceVersion; a missing replica count reads 0; a
  built-in's selector is its ``spec.selector`` as a selector string (``app=x``), a custom
  resource's the string at ``labelSelectorPath``, omitted while that has no value.
* PUT (a Scale) and PATCH (merge or JSON patch of the Scale; strategic merge for built-in
  kinds only, else the recorded 415) write the replica count into the parent through its
  normal update path, as a ``scale`` subresource write: a stale resourceVersion is the
  parent's 409, a name that differs from the URL's is 400, a negative count is the recorded
  422 (``Scale.autoscaling`` for built-ins; for a custom resource its schema's minimum and
  ``should be a non-negative integer``), each change bumps the parent's generation, dry-run
  applies, and the answer is the new Scale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.errors import KubeSimApiError
from kubesim.fieldmanager.patching import apply_patch, patch_type
from kubesim.machinery.validation import Cause, invalid, invalid_message
from kubesim.registry.resource import ResourceType
from kubesim.registry.store import Api
from kubesim.storage.mvcc import Stored

__all__ = ["ScalePaths", "get_scale", "patch_scale", "update_scale"]


class ScalePaths:
    """Where a kind keeps its replica counts and selector (``.spec.replicas`` style)."""

    def __init__(self, spec: str, status: str, selector: str | None, schema: Mapping[str, Any]):
        self.spec, self.status, self.selector, self.schema = spec, status, selector, schema


_BUILTIN = ScalePaths(".spec.replicas", ".status.replicas", None, {})


def _path(path: str) -> list[str]:
    return [p for p in path.split(".") if p]


def _get(obj: Any, path: str) -> Any:
    for part in _path(path):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _set(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = _path(path)
    for part in parts[:-1]:
        nxt = obj.get(part)
        if not isinstance(nxt, dict):
            nxt = obj[part] = {}
        obj = nxt
    obj[parts[-1]] = value


def _paths(api: Api, rt: ResourceType) -> ScalePaths:
    if not rt.custom:
        return _BUILTIN
    crd_rt = api.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    crd = api.store(crd_rt).get(f"{rt.plural}.{rt.group}") if crd_rt is not None else None
    versions = (crd.decode().get("spec") or {}).get("versions") or [] if crd is not None else []
    version: dict[str, Any] = next((v for v in versions if v.get("name") == rt.version), {})
    scale = (version.get("subresources") or {}).get("scale") or {}
    schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    return ScalePaths(
        scale.get("specReplicasPath", ".spec.replicas"),
        scale.get("statusReplicasPath", ".status.replicas"),
        scale.get("labelSelectorPath"),
        schema,
    )


def _selector_string(selector: Any) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()``: requirements sorted by key."""
    if not isinstance(selector, dict):
        return ""
    reqs: list[tuple[str, str]] = []
    for k, v in (selector.get("matchLabels") or {}).items():
        reqs.append((k, f"{k}={v}"))
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator", "")
        values = ",".join(sorted(expr.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(op, key)
        reqs.append((key, text))
    return ",".join(text for _, text in sorted(reqs))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _scale(rt: ResourceType, parent: Mapping[str, Any], paths: ScalePaths) -> dict[str, Any]:
    meta = parent["metadata"]
    out_meta = {"name": meta["name"]}
    if meta.get("namespace"):
        out_meta["namespace"] = meta["namespace"]
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        if key in meta:
            out_meta[key] = meta[key]
    status: dict[str, Any] = {"replicas": _int(_get(parent, paths.status))}
    if rt.custom:
        selector = _get(parent, paths.selector) if paths.selector else None
        if isinstance(selector, str) and selector:
            status["selector"] = selector
    else:
        status["selector"] = _selector_string((parent.get("spec") or {}).get("selector"))
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": out_meta,
        "spec": {"replicas": _int(_get(parent, paths.spec))},
        "status": status,
    }


def _schema_minimum(schema: Mapping[str, Any], path: str) -> int | float | None:
    node: Any = schema
    for part in _path(path):
        node = (node.get("properties") or {}).get(part) if isinstance(node, dict) else None
    minimum = node.get("minimum") if isinstance(node, dict) else None
    return minimum if isinstance(minimum, int | float) else None


def _json_type(value: Any) -> str:
    """The JSON type Go's decoder names in an unmarshal error."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), "null")


def _undecodable(value: Any, field: str, go_type: str) -> KubeSimApiError:
    return KubeSimApiError.bad_request(
        'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
        f"{_json_type(value)} into Go struct field {field} of type {go_type}"
    )


def _check_replicas(rt: ResourceType, name: str, replicas: Any, paths: ScalePaths) -> int:
    if replicas is None:
        replicas = 0
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise _undecodable(replicas, "ScaleSpec.spec.replicas", "int32")
    if replicas >= 0:
        return replicas
    causes: list[Cause]
    if not rt.custom:
        causes = [invalid("spec.replicas", replicas, "must be greater than or equal to 0")]
        message = invalid_message("Scale", name, causes, "autoscaling")
        raise KubeSimApiError.invalid(
            "Scale", "autoscaling", name, message, [c.to_dict() for c in causes]
        )
    causes = []
    minimum = _schema_minimum(paths.schema, paths.spec)
    field = ".".join(_path(paths.spec))
    if minimum is not None and replicas < minimum:
        shown = int(minimum) if float(minimum).is_integer() else minimum
        detail = f"{field} in body should be greater than or equal to {shown}"
        causes.append(invalid(field, replicas, detail))
    causes.append(invalid(paths.spec, replicas, "should be a non-negative integer"))
    message = invalid_message(rt.kind, name, causes, rt.group)
    raise KubeSimApiError.invalid(rt.kind, rt.group, name, message, [c.to_dict() for c in causes])


def get_scale(api: Api, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
    """GET ``<parent>/scale``."""
    return _scale(rt, api.get(rt, namespace, name).decode(), _paths(api, rt))


def update_scale(
    api: Api,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    body: Mapping[str, Any],
    *,
    manager: str,
) -> dict[str, Any]:
    """PUT ``<parent>/scale`` with a Scale ``body`` (a uid in it is a precondition on the
    parent's, as for any update)."""
    meta = body.get("metadata")
    cur = api.check_uid(rt, namespace, name, meta if isinstance(meta, dict) else {})
    return _write(api, rt, cur, body, manager=manager)


def patch_scale(
    api: Api,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    content_type: str,
    patch: Any,
    *,
    manager: str,
) -> dict[str, Any]:
    """PATCH ``<parent>/scale``: the patch applies to the Scale, then as :func:`update_scale`."""
    ctype = patch_type(content_type, rt.custom)
    cur = api.get(rt, namespace, name)
    scale = _scale(rt, cur.decode(), _paths(api, rt))
    new = apply_patch(ctype, scale, patch, "Scale")
    if not isinstance(new, dict):
        raise KubeSimApiError.bad_request("the patch produced something other than a Scale")
    return _write(api, rt, cur, new, manager=manager)


def _write(
    api: Api, rt: ResourceType, cur: Stored, scale: Mapping[str, Any], *, manager: str
) -> dict[str, Any]:
    parent = cur.decode()
    name = parent["metadata"]["name"]
    raw_meta, spec = scale.get("metadata"), scale.get("spec")
    if raw_meta is not None and not isinstance(raw_meta, dict):
        raise _undecodable(raw_meta, "Scale.metadata", "v1.ObjectMeta")
    if spec is not None and not isinstance(spec, dict):
        raise _undecodable(spec, "Scale.spec", "v1.ScaleSpec")
    meta: dict[str, Any] = raw_meta or {}
    if meta.get("name") not in (None, name):
        raise KubeSimApiError.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({name})"
        )
    rv = meta.get("resourceVersion")
    if rv and str(rv) != str(cur.rv):
        raise KubeSimApiError.conflict(rt.plural, rt.group, name)
    paths = _paths(api, rt)
    replicas = _check_replicas(rt, name, (spec or {}).get("replicas"), paths)
    _set(parent, paths.spec, replicas)
    stored = api.write(rt, cur, parent, "scale", manager)
    return _scale(rt, stored.decode(), paths)

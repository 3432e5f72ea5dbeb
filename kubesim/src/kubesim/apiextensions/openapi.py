"""The OpenAPI published for custom resources, as apiextensions-apiserver's builder makes it.

For every served version of an established CRD kube-apiserver publishes (v1.28):

* in ``/openapi/v3/apis/<group>/<version>`` a document titled "Kubernetes CRD Swagger" with
  the REST paths of the resource (collection, object, ``/status`` and ``/scale`` when those
  subresources exist, the all-namespaces list for namespaced types) and, under
  ``components.schemas``, the version's ``openAPIV3Schema`` named
  ``<reversed group>.<version>.<Kind>`` with ``apiVersion``, ``kind`` and ``metadata``
  (a reference to ObjectMeta) added, embedded resources likewise, plus the ``<Kind>List``
  schema and the meta types they refer to;
* in ``/openapi/v2`` the same paths and two definitions, converted to what v2 can say:
  no ``allOf``/``anyOf``/``oneOf``/``not``, nullable and preserve-unknown-fields nodes lose
  their properties and items (and the flag), arrays without items lose their type.

The recorded documents of the example PodSet CRD (``openapi/v3-apis_example.aioinformer.dev_v1``
and its entries in ``openapi/v2``) are the templates: parameters, descriptions and shared
schemas come from them, names are rewritten for each CRD. Everything here is a pure
function of its arguments (no I/O).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CrdApi",
    "schema_name",
    "to_operation_id",
    "v2_additions",
    "v2_template_keys",
    "v3_document",
]

_T_GROUP = "example.aioinformer.dev"
_T_VERSION = "v1"
_T_KIND = "PodSet"
_T_PLURAL = "podsets"
_T_OPID = "ExampleAioinformerDevV1"
_T_TAG = "exampleAioinformerDev_v1"
_T_BASE = f"/apis/{_T_GROUP}/{_T_VERSION}"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_SCALE = "io.k8s.api.autoscaling.v1.Scale"
_SCALE_GVK = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
_METADATA_DESCRIPTION = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_EMBEDDED_API_VERSION = (
    "apiVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_EMBEDDED_KIND = (
    "kind is a string value representing the type of this object. Servers may infer this from "
    "the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)


def to_operation_id(s: str, capitalize_first: bool) -> str:
    """``ToValidOperationID``: letters and ``_`` kept (digits too after the first rune);
    any other rune is dropped and capitalises the next letter."""
    out: list[str] = []
    capitalize = capitalize_first
    for i, ch in enumerate(s):
        if ch.isalpha() or ch == "_" or (i and ch.isdigit()):
            out.append(ch.upper() if capitalize else ch)
            capitalize = False
        else:
            capitalize = True
    return "".join(out)


def schema_name(group: str, version: str, kind: str) -> str:
    """The definition name of a CR kind: the group's labels reversed, then version, kind
    (``dev.aioinformer.example.v1.PodSet``)."""
    return ".".join([*reversed(group.split(".")), version, kind])


@dataclass(frozen=True)
class CrdApi:
    """What the builder needs of one served CRD version."""

    group: str
    version: str
    kind: str
    list_kind: str
    plural: str
    namespaced: bool
    status: bool
    scale: bool
    schema: Mapping[str, Any]

    @classmethod
    def from_version(
        cls,
        group: str,
        kind: str,
        list_kind: str,
        plural: str,
        namespaced: bool,
        version: Mapping[str, Any],
    ) -> CrdApi:
        subs = version.get("subresources") or {}
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
        return cls(
            group=group,
            version=str(version.get("name", "")),
            kind=kind,
            list_kind=list_kind,
            plural=plural,
            namespaced=namespaced,
            status=subs.get("status") is not None,
            scale=subs.get("scale") is not None,
            schema=schema,
        )

    @property
    def base(self) -> str:
        return f"/apis/{self.group}/{self.version}"

    @property
    def opid(self) -> str:
        group = self.group.removesuffix(".k8s.io")
        return to_operation_id(group, True) + to_operation_id(self.version, True)

    @property
    def tag(self) -> str:
        group = self.group.removesuffix(".k8s.io")
        return to_operation_id(group, False) + "_" + to_operation_id(self.version, False)


# -- paths ----------------------------------------------------------------------------------


def _template_paths(template_paths: Mapping[str, Any]) -> dict[str, Any]:
    """The example CRD's four path items, keyed collection / object / status / all."""
    ns = f"{_T_BASE}/namespaces/{{namespace}}/{_T_PLURAL}"
    keys = {
        "collection": ns,
        "object": f"{ns}/{{name}}",
        "status": f"{ns}/{{name}}/status",
        "all": f"{_T_BASE}/{_T_PLURAL}",
    }
    return {k: template_paths[p] for k, p in keys.items()}


def v2_template_keys() -> list[str]:
    """The paths of the example CRD in the recorded ``/openapi/v2`` (and its definitions
    are ``schema_name(...)`` of PodSet and PodSetList)."""
    ns = f"{_T_BASE}/namespaces/{{namespace}}/{_T_PLURAL}"
    return [ns, f"{ns}/{{name}}", f"{ns}/{{name}}/status", f"{_T_BASE}/{_T_PLURAL}"]


def _rewrite_ref(ref: str, api: CrdApi, scale: bool, v3: bool) -> str:
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    t_obj = prefix + schema_name(_T_GROUP, _T_VERSION, _T_KIND)
    if ref == t_obj + "List":
        return prefix + schema_name(api.group, api.version, api.list_kind)
    if ref == t_obj:
        return prefix + (_SCALE if scale else schema_name(api.group, api.version, api.kind))
    return ref


def _rewrite(node: Any, api: CrdApi, scale: bool, v3: bool) -> Any:
    """A copy of a template operation (or part of one) naming ``api`` instead of PodSet."""
    if isinstance(node, list):
        return [_rewrite(x, api, scale, v3) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "operationId":
            verb, _, rest = v.partition(_T_OPID)
            rest = rest.replace(_T_KIND, api.kind, 1)
            if not api.namespaced:
                rest = rest.replace("Namespaced", "", 1)
            if scale:
                rest = rest.removesuffix("Status") + "Scale"
            out[k] = verb + api.opid + rest
        elif k == "tags":
            out[k] = [api.tag]
        elif k == "$ref":
            out[k] = _rewrite_ref(v, api, scale, v3)
        elif k == "x-kubernetes-group-version-kind":
            gvk = {"group": api.group, "version": api.version, "kind": api.kind}
            out[k] = {kk: (_SCALE_GVK if scale else gvk)[kk] for kk in v}
        elif k == "description" and isinstance(v, str) and _T_KIND in v:
            text = v.replace(_T_KIND, api.kind)
            if scale:
                text = text.replace("status of", "scale of").replace(
                    f"name of the {api.kind}", "name of the Scale"
                )
            out[k] = text
        else:
            out[k] = _rewrite(v, api, scale, v3)
    return out


def _drop_namespace(item: Mapping[str, Any]) -> dict[str, Any]:
    """A path item without its namespace path parameter (cluster-scoped types)."""
    out = dict(item)
    params = [
        p
        for p in item.get("parameters", [])
        if p.get("name") != "namespace" and "/namespace-" not in str(p.get("$ref", ""))
    ]
    out["parameters"] = params
    return out


def _paths(api: CrdApi, template_paths: Mapping[str, Any], v3: bool) -> dict[str, Any]:
    tpl = _template_paths(template_paths)
    root = (
        f"{api.base}/namespaces/{{namespace}}/{api.plural}"
        if api.namespaced
        else (f"{api.base}/{api.plural}")
    )
    items: list[tuple[str, Any, bool]] = [
        (root, tpl["collection"], False),
        (f"{root}/{{name}}", tpl["object"], False),
    ]
    if api.status:
        items.append((f"{root}/{{name}}/status", tpl["status"], False))
    if api.scale:
        items.append((f"{root}/{{name}}/scale", tpl["status"], True))
    paths: dict[str, Any] = {}
    for path, item, scale in items:
        new = _rewrite(item, api, scale, v3)
        paths[path] = new if api.namespaced else _drop_namespace(new)
    if api.namespaced:
        paths[f"{api.base}/{api.plural}"] = _rewrite(tpl["all"], api, False, v3)
    return paths


# -- schemas --------------------------------------------------------------------------------


def _meta_ref(v3: bool, description: str) -> dict[str, Any]:
    if v3:
        return {
            "description": description,
            "allOf": [{"$ref": f"#/components/schemas/{_OBJECT_META}"}],
        }
    return {"description": description, "$ref": f"#/definitions/{_OBJECT_META}"}


def _type_meta(template_object: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    props = template_object.get("properties") or {}
    return dict(props["apiVersion"]), dict(props["kind"])


def _add_embedded(node: Any, v3: bool) -> None:
    """Give every ``x-kubernetes-embedded-resource`` node apiVersion, kind and metadata (v2:
    not where unknown fields are preserved, which v2 cannot combine with properties)."""
    if not isinstance(node, dict):
        return
    for sub in (node.get("properties") or {}).values():
        _add_embedded(sub, v3)
    for key in ("items", "additionalProperties"):
        _add_embedded(node.get(key), v3)
    if node.get("x-kubernetes-preserve-unknown-fields") and not v3:
        return
    if node.get("x-kubernetes-embedded-resource"):
        props = node.setdefault("properties", {})
        props["apiVersion"] = {"description": _EMBEDDED_API_VERSION, "type": "string"}
        props["kind"] = {"description": _EMBEDDED_KIND, "type": "string"}
        props["metadata"] = _meta_ref(v3, _METADATA_DESCRIPTION)
        required = node.setdefault("required", [])
        for key in ("kind", "apiVersion"):
            if key not in required:
                required.append(key)


def _to_v2(node: Any) -> None:
    """``ToStructuralOpenAPIV2``, in place."""
    if not isinstance(node, dict):
        return
    for key in ("allOf", "anyOf", "oneOf", "not"):
        node.pop(key, None)
    if node.pop("nullable", False):
        node.pop("type", None)
        node.pop("items", None)
        node.pop("properties", None)
    if node.pop("x-kubernetes-preserve-unknown-fields", False):
        node.pop("items", None)
        node.pop("properties", None)
    if node.get("type") == "array" and node.get("items") is None:
        node.pop("type", None)
    props = node.get("properties") or {}
    nullable = {k for k, v in props.items() if isinstance(v, dict) and v.get("nullable")}
    for sub in props.values():
        _to_v2(sub)
    for key in ("items", "additionalProperties"):
        _to_v2(node.get(key))
    if nullable and "required" in node:
        node["required"] = [r for r in node["required"] if r not in nullable]
        if not node["required"]:
            del node["required"]


def object_schema(api: CrdApi, template_object: Mapping[str, Any], v3: bool) -> dict[str, Any]:
    """The published schema of ``api``'s kind (see the module docstring)."""
    schema: dict[str, Any] = copy.deepcopy(dict(api.schema))
    _add_embedded(schema, v3)
    if not v3:
        _to_v2(schema)
    api_version, kind = _type_meta(template_object)
    if v3 or not api.schema.get("x-kubernetes-preserve-unknown-fields"):
        props = schema.setdefault("properties", {})
        props["apiVersion"] = api_version
        props["kind"] = kind
        props["metadata"] = _meta_ref(v3, _METADATA_DESCRIPTION)
    schema["x-kubernetes-group-version-kind"] = [
        {"group": api.group, "kind": api.kind, "version": api.version}
    ]
    return schema


def list_schema(api: CrdApi, template_list: Mapping[str, Any], v3: bool) -> dict[str, Any]:
    """The ``<Kind>List`` schema."""
    out = copy.deepcopy(dict(template_list))
    out["description"] = f"{api.list_kind} is a list of {api.kind}"
    items = out["properties"]["items"]
    items["description"] = items["description"].replace(_T_PLURAL, api.plural)
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    items["items"] = {"$ref": prefix + schema_name(api.group, api.version, api.kind)}
    out["x-kubernetes-group-version-kind"] = [
        {"group": api.group, "kind": api.list_kind, "version": api.version}
    ]
    return out


# -- documents --------------------------------------------------------------------------------


def v3_document(
    apis: Iterable[CrdApi],
    template: Mapping[str, Any],
    scale_components: Mapping[str, Any],
) -> dict[str, Any]:
    """The ``/openapi/v3/apis/<group>/<version>`` document of the CRD versions ``apis``
    (all of one group/version). ``template`` is the recorded example CRD document;
    ``scale_components`` holds the autoscaling/v1 Scale schemas (used when a version has
    a scale subresource)."""
    t_schemas = template["components"]["schemas"]
    t_obj = t_schemas[schema_name(_T_GROUP, _T_VERSION, _T_KIND)]
    t_list = t_schemas[schema_name(_T_GROUP, _T_VERSION, _T_KIND + "List")]
    shared = {
        k: v
        for k, v in t_schemas.items()
        if not k.startswith(schema_name(_T_GROUP, _T_VERSION, ""))
    }
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for api in apis:
        paths.update(_paths(api, template["paths"], v3=True))
        schemas[schema_name(api.group, api.version, api.kind)] = object_schema(api, t_obj, True)
        schemas[schema_name(api.group, api.version, api.list_kind)] = list_schema(api, t_list, True)
        if api.scale:
            schemas.update(scale_components)
    schemas.update(shared)
    return {
        "openapi": template["openapi"],
        "info": template["info"],
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def v2_additions(
    apis: Iterable[CrdApi], template_v2: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The paths and definitions ``apis`` add to ``/openapi/v2``; ``template_v2`` is the
    recorded v2 document (which holds the example CRD's entries)."""
    defs = template_v2["definitions"]
    t_obj = defs[schema_name(_T_GROUP, _T_VERSION, _T_KIND)]
    t_list = defs[schema_name(_T_GROUP, _T_VERSION, _T_KIND + "List")]
    # the recorded v2 object schema was emptied by the v2 conversion: take apiVersion and
    # kind from the list definition, which has the same two properties
    type_meta = {"properties": t_list["properties"]}
    del t_obj
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for api in apis:
        paths.update(_paths(api, template_v2["paths"], v3=False))
        definitions[schema_name(api.group, api.version, api.kind)] = object_schema(
            api, type_meta, False
        )
        definitions[schema_name(api.group, api.version, api.list_kind)] = list_schema(
            api, t_list, False
        )
    return paths, definitions

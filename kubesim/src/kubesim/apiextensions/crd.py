"""CustomResourceDefinitions: their strategy, and the types a CRD makes the server serve.

* defaults: the names' singular and listKind, conversion strategy None, keys in Go struct
  order, and on create the status the apiserver starts with (no conditions, empty accepted
  names, the stored versions);
* validation (``ValidateCustomResourceDefinition``, v1.28 messages: :func:`validate_crd`);
  on update ``spec.group`` and ``spec.scope`` are immutable;
* a created CRD is established a moment later (by the generic store, as it does for any
  kind whose strategy serves types): one :class:`~kubesim.registry.resource.ResourceType`
  per served version (:func:`resource_types_from_crd`), custom resources whose strategy is
  :mod:`kubesim.apiextensions.customresource`'s, and the NamesAccepted and Established
  conditions; once it is deleted they are no longer served and their objects are gone;
* the server keeps ``metadata.generation``; a completed DELETE answers the object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apiextensions.customresource import CUSTOM_RESOURCE_STRATEGY
from kubesim.apiextensions.structural import schema_causes
from kubesim.encoding.gofmt import go_quote
from kubesim.machinery.documents import order_keys, sub
from kubesim.machinery.validation import (
    Cause,
    GoRepr,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    not_supported,
    required,
)
from kubesim.registry.resource import (
    CRD_VERBS,
    SCALE,
    ResourceType,
    Strategy,
)

__all__ = ["CustomResourceDefinitionStrategy", "resource_types_from_crd", "validate_crd"]


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def resource_types_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """One :class:`~kubesim.registry.resource.ResourceType` per *served* version of an
    apiextensions.k8s.io/v1 CRD: custom, CRD verb order, ``has_status`` when that
    version's ``subresources.status`` is set, scope, names (singular defaults to lower-case
    kind, listKind to kind + "List"), and the storage version's hash; the custom resources'
    strategy. Empty for a CRD without group, names or versions."""
    spec = _d(crd.get("spec"))
    names = _d(spec.get("names"))
    group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
    if not (isinstance(group, str) and isinstance(kind, str) and isinstance(plural, str)):
        return []
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("name")]
    storage = next((str(v["name"]) for v in versions if v.get("storage")), "")
    return [
        ResourceType(
            group=group,
            version=str(v["name"]),
            plural=plural,
            singular=str(names.get("singular") or kind.lower()),
            kind=kind,
            namespaced=spec.get("scope", "Namespaced") != "Cluster",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            has_status=_d(v.get("subresources")).get("status") is not None,
            extra_subresources=(SCALE,) if _d(v.get("subresources")).get("scale") else (),
            custom=True,
            verbs=CRD_VERBS,
            storage_version=storage,
            list_kind_name=str(names.get("listKind") or f"{kind}List"),
            crd_version=v,
            strategy=CUSTOM_RESOURCE_STRATEGY,
        )
        for v in versions
        if v.get("served")
    ]


def validate_crd(crd: Mapping[str, Any]) -> list[Cause]:
    """The CRD-specific 422 causes (``ValidateCustomResourceDefinition``, v1.28 messages):
    ``metadata.name`` must be ``<spec.names.plural>.<spec.group>``; ``spec.group`` required,
    a DNS subdomain with a dot; ``spec.names.plural``/``kind`` required and DNS-1035-like;
    ``spec.scope`` Cluster or Namespaced; at least one version, unique DNS-1035 version names,
    exactly one storage version, a schema per version, every schema ``pattern`` one Go's
    regexp compiles (:mod:`kubesim.apiextensions.structural`). Generic ObjectMeta checks
    are the strategy's. Cause order approximates upstream's."""
    meta, spec = _d(crd.get("metadata")), _d(crd.get("spec"))
    names = _d(spec.get("names"))
    group, plural = str(spec.get("group") or ""), str(names.get("plural") or "")
    errs: list[Cause] = []
    name = str(meta.get("name") or "")
    if name and name != f"{plural}.{group}":
        errs.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        errs.append(required("spec.group"))
    elif msgs := is_dns1123_subdomain(group):
        errs.append(invalid("spec.group", group, ",".join(msgs)))
    elif "." not in group:
        errs.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
    versions = [_d(v) for v in spec.get("versions") or []]
    if not versions:
        errs.append(required("spec.versions", "must have at least one version"))
    top_schema, version_schemas = schema_causes(versions)
    seen: set[str] = set()
    for i, v in enumerate(versions):
        vname = str(v.get("name") or "")
        errs += [invalid(f"spec.versions[{i}].name", vname, m) for m in is_dns1035_label(vname)]
        errs += version_schemas.get(i, [])
        if not _d(v.get("schema")).get("openAPIV3Schema"):
            errs.append(
                required(f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required")
            )
        if vname in seen:
            errs.append(
                invalid(
                    "spec.versions", _versions_repr(versions), "must contain unique version names"
                )
            )
        seen.add(vname)
    if versions and sum(bool(v.get("storage")) for v in versions) != 1:
        detail = "must have exactly one version marked as storage version"
        errs.append(invalid("spec.versions", _versions_repr(versions), detail))
    for key in ("plural", "singular", "kind", "listKind"):
        value = str(names.get(key) or "")
        if key in ("plural", "kind") and not value:
            errs.append(required(f"spec.names.{key}"))
        elif value and (msgs := is_dns1035_label(value.lower() if "ind" in key else value)):
            prefix = "may have mixed case, but should otherwise match: " if "ind" in key else ""
            errs.append(invalid(f"spec.names.{key}", value, prefix + ",".join(msgs)))
    for key in ("shortNames", "categories"):
        for i, item in enumerate(names.get(key) or []):
            if msgs := is_dns1035_label(str(item)):
                errs.append(invalid(f"spec.names.{key}[{i}]", item, ",".join(msgs)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(
            invalid(
                "spec.names.listKind", names["listKind"], "kind and listKind may not be the same"
            )
        )
    return errs + top_schema


def _versions_repr(versions: list[dict[str, Any]]) -> GoRepr:
    """spec.versions is a Go struct slice; this prints only the names (approximation)."""
    names = ", ".join(go_quote(str(v.get("name") or "")) for v in versions)
    return GoRepr("[]apiextensions.CustomResourceDefinitionVersion{" + names + "}")


def _default_crd(obj: dict[str, Any], creating: bool) -> None:
    spec = sub(obj, "spec")
    names = sub(spec, "names")
    if names.get("kind"):
        names.setdefault("singular", str(names["kind"]).lower())
        names.setdefault("listKind", f"{names['kind']}List")
    order_keys(names, ("plural", "singular", "shortNames", "kind", "listKind", "categories"))
    spec.setdefault("conversion", {"strategy": "None"})
    versions = [v for v in _l(spec.get("versions")) if isinstance(v, dict)]
    for v in versions:
        order_keys(
            v, "name served storage deprecated deprecationWarning schema subresources".split()
        )
    order_keys(spec, ("group", "names", "scope", "versions", "conversion", "preserveUnknownFields"))
    if creating:
        stored = [v.get("name") for v in versions if v.get("storage")]
        obj["status"] = {
            "conditions": None,
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": stored,
        }


class CustomResourceDefinitionStrategy(Strategy):
    """CustomResourceDefinitions (see the module docstring)."""

    uses_generation = True
    returns_deleted_object = True
    serves_types = True

    def validate(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        return super().validate(rt, obj) + validate_crd(obj)

    def validate_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any]
    ) -> list[Cause]:
        ospec, nspec = _d(old.get("spec")), _d(new.get("spec"))
        top_schema, version_schemas = schema_causes([_d(v) for v in _l(nspec.get("versions"))])
        return (
            super().validate_update(rt, old, new)
            + [c for i in sorted(version_schemas) for c in version_schemas[i]]
            + top_schema
            + [
                invalid(f"spec.{k}", nspec.get(k) or "", "field is immutable")
                for k in ("group", "scope")
                if ospec.get(k) != nspec.get(k)
            ]
        )

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        _default_crd(obj, creating)
        super().default(rt, obj, creating=creating)

    def served_types(self, obj: Mapping[str, Any]) -> list[ResourceType]:
        return resource_types_from_crd(obj)

    def served_status(self, obj: Mapping[str, Any], now: str) -> dict[str, Any]:
        """NamesAccepted and Established, the accepted names, the stored versions."""
        spec = _d(obj.get("spec"))
        return {
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "lastTransitionTime": now,
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                },
                {
                    "type": "Established",
                    "status": "True",
                    "lastTransitionTime": now,
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                },
            ],
            "acceptedNames": spec.get("names", {}),
            "storedVersions": [v["name"] for v in spec.get("versions", []) if v.get("storage")],
        }

"""Structural types of objects for field tracking: which maps, lists and list keys exist.

Server-side apply and managedFields need to know, for every place in an object, whether
it is a scalar, a map (a struct with declared fields, or a map of values; either may be
atomic) or a list (atomic, a set of scalars, or a list-map whose items are identified by
key fields). :class:`MapType`, :class:`ListType`, :data:`SCALAR` and :data:`UNTYPED`
describe that.

Built-in kinds take their types from the apiserver's OpenAPI v2 document shipped in
``openapi/v2.json.gz`` (``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys``,
``x-kubernetes-map-type``, and for lists without a list type the strategic-merge
``x-kubernetes-patch-strategy: merge`` + ``x-kubernetes-patch-merge-key``, as the apiserver
derives them). It is read once, on the first use, and every definition is converted on
demand and cached. Custom resources take theirs from the CRD's ``openAPIV3Schema`` (with
ObjectMeta for ``metadata``); data under ``x-kubernetes-preserve-unknown-fields`` is
:data:`UNTYPED`: maps there are tracked key by key, lists are atomic.

The v2 document leaves out ``default``; the only defaulted list-map key of the built-in
kinds is ``protocol`` (``TCP``, as the v3 documents state), which :class:`ListType` carries.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

__all__ = [
    "SCALAR",
    "UNTYPED",
    "ListType",
    "MapType",
    "Scalar",
    "Type",
    "Untyped",
    "builtin_type",
    "crd_type",
]


class Scalar:
    """A leaf: string, number, boolean (also int-or-string, quantities, times)."""

    __slots__ = ()


class Untyped:
    """Schemaless data: maps are tracked key by key, lists are atomic (``atomic`` makes
    maps atomic too: the items of a list inside schemaless data)."""

    __slots__ = ("atomic",)

    def __init__(self, atomic: bool) -> None:
        self.atomic = atomic


SCALAR = Scalar()
UNTYPED = Untyped(False)
UNTYPED_ATOMIC = Untyped(True)


@dataclass(eq=False)
class MapType:
    """An object: ``fields`` are declared (struct) fields, ``elem`` the type of any other
    key (a map of values), ``atomic`` a map replaced and owned as a whole."""

    fields: dict[str, Type | _Ref] = field(default_factory=dict)
    elem: Type | _Ref | None = None
    atomic: bool = False
    _children: dict[str, tuple[Type, bool]] = field(default_factory=dict, repr=False)

    def child(self, key: str) -> tuple[Type, bool]:
        """The type of ``key`` and whether it is a declared field."""
        c = self._children.get(key)
        if c is not None:
            return c
        t = self.fields.get(key)
        if t is not None:
            c = (_resolve(t), True)
            self._children[key] = c
            return c
        return (_resolve(self.elem) if self.elem is not None else UNTYPED), False


@dataclass(eq=False)
class ListType:
    """A list: ``mode`` "atomic", "set" (scalars, by value) or "map" (items by ``keys``;
    ``defaults`` fill a key an item leaves out)."""

    elem: Type | _Ref
    mode: str = "atomic"
    keys: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def item(self) -> Type:
        return _resolve(self.elem)


Type = Scalar | Untyped | MapType | ListType


class _Ref:
    """A lazily converted OpenAPI definition (definitions refer to each other, cyclically)."""

    __slots__ = ("_type", "defs", "name")

    def __init__(self, defs: _Definitions, name: str) -> None:
        self.defs = defs
        self.name = name
        self._type: Type | None = None

    def get(self) -> Type:
        if self._type is None:
            self._type = self.defs.convert_definition(self.name)
        return self._type


def _resolve(t: Type | _Ref) -> Type:
    return t.get() if isinstance(t, _Ref) else t


_KEY_DEFAULTS = {"protocol": "TCP"}


class _Definitions:
    """Converts OpenAPI (v2 definitions or inline v3 schemas) to :data:`Type`."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.definitions = definitions
        self.refs: dict[str, _Ref] = {}
        self.converted: dict[str, Type] = {}

    def ref(self, name: str) -> _Ref:
        r = self.refs.get(name)
        if r is None:
            r = self.refs[name] = _Ref(self, name)
        return r

    def convert_definition(self, name: str) -> Type:
        t = self.converted.get(name)
        if t is None:
            t = self.converted[name] = _resolve(self.convert(self.definitions.get(name) or {}))
        return t

    def convert(self, s: Mapping[str, Any], builtin: bool = True) -> Type | _Ref:
        ref = s.get("$ref")
        if ref is None and isinstance(s.get("allOf"), list) and len(s["allOf"]) == 1:
            ref = s["allOf"][0].get("$ref")
        if isinstance(ref, str):
            return self.ref(ref.rsplit("/", 1)[-1])
        if s.get("x-kubernetes-int-or-string"):
            return SCALAR
        typ = s.get("type")
        if typ == "array":
            items = s.get("items")
            item = self.convert(items, builtin) if isinstance(items, dict) else UNTYPED_ATOMIC
            return self._list(s, item, builtin)
        if typ == "object" or "properties" in s or "additionalProperties" in s:
            props = s.get("properties") or {}
            extra = s.get("additionalProperties")
            elem: Type | _Ref | None = None
            if isinstance(extra, dict):
                elem = self.convert(extra, builtin)
            elif s.get("x-kubernetes-preserve-unknown-fields") or (not props and extra is None):
                elem = UNTYPED
            fields = {k: self.convert(v, builtin) for k, v in props.items() if isinstance(v, dict)}
            return MapType(fields, elem, s.get("x-kubernetes-map-type") == "atomic")
        if typ in ("string", "integer", "number", "boolean"):
            return SCALAR
        return UNTYPED

    def _list(self, s: Mapping[str, Any], elem: Type | _Ref, builtin: bool) -> ListType:
        list_type = s.get("x-kubernetes-list-type")
        if list_type == "map":
            keys = tuple(str(k) for k in s.get("x-kubernetes-list-map-keys") or ())
            return ListType(elem, "map", keys, self._key_defaults(elem, keys))
        if list_type == "set":
            return ListType(elem, "set")
        if list_type is None and builtin:
            strategies = str(s.get("x-kubernetes-patch-strategy", "")).split(",")
            if "merge" in strategies:
                key = s.get("x-kubernetes-patch-merge-key")
                if isinstance(key, str):
                    return ListType(elem, "map", (key,), self._key_defaults(elem, (key,)))
                return ListType(elem, "set")
        return ListType(elem, "atomic")

    @staticmethod
    def _key_defaults(elem: Type | _Ref, keys: tuple[str, ...]) -> dict[str, Any]:
        return {k: _KEY_DEFAULTS[k] for k in keys if k in _KEY_DEFAULTS}


@cache
def _v2() -> tuple[_Definitions, dict[tuple[str, str, str], str]]:
    raw = resources.files("kubesim").joinpath("openapi", "v2.json.gz").read_bytes()
    doc = json.loads(gzip.decompress(raw))
    definitions: dict[str, Any] = doc.get("definitions") or {}
    by_gvk: dict[tuple[str, str, str], str] = {}
    for name, d in definitions.items():
        if not name.startswith("io.k8s."):
            continue  # a custom resource the recorded server had installed
        for gvk in d.get("x-kubernetes-group-version-kind") or ():
            by_gvk.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk["kind"]), name)
    return _Definitions(definitions), by_gvk


_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def builtin_type(group: str, version: str, kind: str) -> Type:
    """The type of a built-in kind (:data:`UNTYPED` if the document does not have it)."""
    defs, by_gvk = _v2()
    name = by_gvk.get((group, version, kind))
    return defs.convert_definition(name) if name else UNTYPED


def crd_type(schema: Mapping[str, Any] | None) -> Type:
    """The type of a custom resource whose version has ``openAPIV3Schema`` ``schema``."""
    defs, _ = _v2()
    root = _resolve(defs.convert(dict(schema or {}), builtin=False))
    if not isinstance(root, MapType):
        root = MapType({}, UNTYPED)
    fields: dict[str, Type | _Ref] = dict(root.fields)
    fields["apiVersion"] = SCALAR
    fields["kind"] = SCALAR
    fields["metadata"] = defs.ref(_OBJECT_META)
    return MapType(fields, root.elem, root.atomic)

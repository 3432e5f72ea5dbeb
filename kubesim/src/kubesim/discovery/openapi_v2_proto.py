"""The protobuf form of ``/openapi/v2``: gnostic's ``openapi.v2.Document``, from the JSON.

kubectl asks for ``/openapi/v2`` only as
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` (``kubectl explain`` and
``apply`` need it), so KubeSim encodes the JSON document into that message, as
kube-openapi does. Field numbers are those of gnostic's ``OpenAPIv2.proto``; values that
proto3 leaves out when they are defaults are left out, except inside a ``oneof``. Vendor
extensions, ``default``, ``example`` and ``enum`` values are ``Any`` messages holding the
value's YAML text as gnostic writes it (:mod:`kubesim.encoding.goyaml`); an integer field takes a
JSON integer only. The encoder covers what a Kubernetes OpenAPI document uses (Swagger 2.0 with
api-key security); anything else is dropped. The wire helpers here are shared with
:mod:`kubesim.discovery.openapi_v3_proto`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from kubesim.encoding.goyaml import marshal
from kubesim.encoding.protowire import key as _key
from kubesim.encoding.protowire import length_delimited as _len
from kubesim.encoding.protowire import varint as _varint

__all__ = ["encode_document"]

_Enc = Callable[[Any], bytes]


def _str(field: int, value: Any, keep_default: bool = False) -> bytes:
    if not isinstance(value, str) or (not value and not keep_default):
        return b""
    return _len(field, value.encode())


def _bool(field: int, value: Any, keep_default: bool = False) -> bytes:
    if not isinstance(value, bool) or (not value and not keep_default):
        return b""
    return _key(field, 0) + _varint(int(value))


def _int(field: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or not value:
        return b""
    return _key(field, 0) + _varint(int(value))


def _double(field: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value:
        return b""
    return _key(field, 1) + struct.pack("<d", float(value))


def _strings(field: int, values: Any) -> bytes:
    if not isinstance(values, list):
        return b""
    return b"".join(_len(field, str(v).encode()) for v in values)


def _any(value: Any) -> bytes:
    """``Any{yaml}``: the value's YAML text, as gnostic writes it."""
    return _str(2, marshal(value), keep_default=True)


def _extensions(field: int, obj: Mapping[str, Any]) -> bytes:
    """``repeated NamedAny vendor_extension``: every ``x-`` key of ``obj``."""
    return b"".join(
        _len(field, _str(1, k) + _len(2, _any(v))) for k, v in obj.items() if k.startswith("x-")
    )


def _named(field: int, items: Any, encode: _Enc) -> bytes:
    """``repeated Named<T>``: one ``{name = 1, value = 2}`` per key of ``items``."""
    if not isinstance(items, Mapping):
        return b""
    return b"".join(_len(field, _str(1, k) + _len(2, encode(v))) for k, v in items.items())


# -- schemas and parameters ---------------------------------------------------------------


def _schema(s: Any) -> bytes:
    if not isinstance(s, Mapping):
        return b""
    out = [
        _str(1, s.get("$ref")),
        _str(2, s.get("format")),
        _str(3, s.get("title")),
        _str(4, s.get("description")),
    ]
    if "default" in s:
        out.append(_len(5, _any(s["default"])))
    out += [
        _double(6, s.get("multipleOf")),
        _double(7, s.get("maximum")),
        _bool(8, s.get("exclusiveMaximum")),
        _double(9, s.get("minimum")),
        _bool(10, s.get("exclusiveMinimum")),
        _int(11, s.get("maxLength")),
        _int(12, s.get("minLength")),
        _str(13, s.get("pattern")),
        _int(14, s.get("maxItems")),
        _int(15, s.get("minItems")),
        _bool(16, s.get("uniqueItems")),
        _int(17, s.get("maxProperties")),
        _int(18, s.get("minProperties")),
        _strings(19, s.get("required")),
    ]
    out += [_len(20, _any(v)) for v in s.get("enum") or []]
    extra = s.get("additionalProperties")
    if isinstance(extra, bool):
        out.append(_len(21, _bool(2, extra, keep_default=True)))
    elif isinstance(extra, Mapping):
        out.append(_len(21, _len(1, _schema(extra))))
    typ = s.get("type")
    if isinstance(typ, str):
        out.append(_len(22, _strings(1, [typ])))
    elif isinstance(typ, list):
        out.append(_len(22, _strings(1, typ)))
    items = s.get("items")
    if isinstance(items, Mapping):
        out.append(_len(23, _len(1, _schema(items))))
    elif isinstance(items, list):
        out.append(_len(23, b"".join(_len(1, _schema(i)) for i in items)))
    out += [_len(24, _schema(a)) for a in s.get("allOf") or []]
    if isinstance(s.get("properties"), Mapping):
        out.append(_len(25, _named(1, s["properties"], _schema)))
    out += [_str(26, s.get("discriminator")), _bool(27, s.get("readOnly"))]
    if "example" in s:
        out.append(_len(30, _any(s["example"])))
    out.append(_extensions(31, s))
    return b"".join(out)


def _primitives(p: Any) -> bytes:
    if not isinstance(p, Mapping):
        return b""
    out = [_str(1, p.get("type")), _str(2, p.get("format"))]
    if isinstance(p.get("items"), Mapping):
        out.append(_len(3, _primitives(p["items"])))
    out.append(_str(4, p.get("collectionFormat")))
    if "default" in p:
        out.append(_len(5, _any(p["default"])))
    out += [_bool(15, p.get("uniqueItems"))]
    out += [_len(16, _any(v)) for v in p.get("enum") or []]
    out.append(_extensions(18, p))
    return b"".join(out)


def _non_body(p: Mapping[str, Any]) -> bytes:
    """A query, path, header or formData parameter (the four share their layout, except
    that query and formData have ``allow_empty_value`` at 5 and so the rest shifted by 1)."""
    where = p.get("in")
    shifted = where in ("query", "formData")
    s = 1 if shifted else 0
    out = [
        _bool(1, p.get("required")),
        _str(2, where),
        _str(3, p.get("description")),
        _str(4, p.get("name")),
    ]
    if shifted:
        out.append(_bool(5, p.get("allowEmptyValue")))
    out += [_str(5 + s, p.get("type")), _str(6 + s, p.get("format"))]
    if isinstance(p.get("items"), Mapping):
        out.append(_len(7 + s, _primitives(p["items"])))
    out.append(_str(8 + s, p.get("collectionFormat")))
    if "default" in p:
        out.append(_len(9 + s, _any(p["default"])))
    out += [
        _double(10 + s, p.get("maximum")),
        _bool(11 + s, p.get("exclusiveMaximum")),
        _double(12 + s, p.get("minimum")),
        _bool(13 + s, p.get("exclusiveMinimum")),
        _int(14 + s, p.get("maxLength")),
        _int(15 + s, p.get("minLength")),
        _str(16 + s, p.get("pattern")),
        _int(17 + s, p.get("maxItems")),
        _int(18 + s, p.get("minItems")),
        _bool(19 + s, p.get("uniqueItems")),
    ]
    out += [_len(20 + s, _any(v)) for v in p.get("enum") or []]
    out += [_double(21 + s, p.get("multipleOf")), _extensions(22 + s, p)]
    slot = {"header": 1, "formData": 2, "query": 3, "path": 4}.get(str(where), 3)
    return _len(slot, b"".join(out))


def _parameter(p: Any) -> bytes:
    """``Parameter``: a body parameter or a non-body one."""
    if not isinstance(p, Mapping):
        return b""
    if p.get("in") == "body":
        body = b"".join(
            [
                _str(1, p.get("description")),
                _str(2, p.get("name")),
                _str(3, p.get("in")),
                _bool(4, p.get("required")),
                _len(5, _schema(p.get("schema"))) if "schema" in p else b"",
                _extensions(6, p),
            ]
        )
        return _len(1, body)
    return _len(2, _non_body(p))


def _parameters_item(p: Any) -> bytes:
    if isinstance(p, Mapping) and "$ref" in p:
        return _len(2, _str(1, p["$ref"]) + _str(2, p.get("description")))
    return _len(1, _parameter(p))


# -- operations and paths -------------------------------------------------------------------


def _response(r: Any) -> bytes:
    if not isinstance(r, Mapping):
        return b""
    if "$ref" in r:
        return _len(2, _str(1, r["$ref"]))
    body = _str(1, r.get("description"))
    if isinstance(r.get("schema"), Mapping):
        body += _len(2, _len(1, _schema(r["schema"])))
    body += _extensions(5, r)
    return _len(1, body)


def _operation(op: Any) -> bytes:
    if not isinstance(op, Mapping):
        return b""
    out = [
        _strings(1, op.get("tags")),
        _str(2, op.get("summary")),
        _str(3, op.get("description")),
        _str(5, op.get("operationId")),
        _strings(6, op.get("produces")),
        _strings(7, op.get("consumes")),
    ]
    out += [_len(8, _parameters_item(p)) for p in op.get("parameters") or []]
    responses = op.get("responses")
    if isinstance(responses, Mapping):
        codes = {k: v for k, v in responses.items() if not k.startswith("x-")}
        out.append(_len(9, _named(1, codes, _response) + _extensions(2, responses)))
    out += [_strings(10, op.get("schemes")), _bool(11, op.get("deprecated"))]
    out.append(_extensions(13, op))
    return b"".join(out)


_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(item: Any) -> bytes:
    if not isinstance(item, Mapping):
        return b""
    out = [_str(1, item.get("$ref"))]
    out += [_len(n, _operation(item[m])) for m, n in _METHODS.items() if m in item]
    out += [_len(9, _parameters_item(p)) for p in item.get("parameters") or []]
    out.append(_extensions(10, item))
    return b"".join(out)


def _security_definition(d: Any) -> bytes:
    """``SecurityDefinitionsItem``: only ``apiKey`` (what kube-apiserver declares)."""
    if not isinstance(d, Mapping) or d.get("type") != "apiKey":
        return b""
    body = b"".join(
        [
            _str(1, d.get("type")),
            _str(2, d.get("name")),
            _str(3, d.get("in")),
            _str(4, d.get("description")),
            _extensions(5, d),
        ]
    )
    return _len(2, body)


def encode_document(doc: Mapping[str, Any]) -> bytes:
    """``openapi.v2.Document`` of a Swagger 2.0 JSON document."""
    info = doc.get("info") or {}
    paths = doc.get("paths") or {}
    out = [
        _str(1, doc.get("swagger")),
        _len(2, _str(1, info.get("title")) + _str(2, info.get("version")) + _extensions(7, info)),
        _str(3, doc.get("host")),
        _str(4, doc.get("basePath")),
        _strings(5, doc.get("schemes")),
        _strings(6, doc.get("consumes")),
        _strings(7, doc.get("produces")),
        _len(
            8,
            _extensions(1, paths)
            + _named(2, {k: v for k, v in paths.items() if k.startswith("/")}, _path_item),
        ),
    ]
    if "definitions" in doc:
        out.append(_len(9, _named(1, doc["definitions"], _schema)))
    if "parameters" in doc:
        out.append(_len(10, _named(1, doc["parameters"], _parameter)))
    for req in doc.get("security") or []:
        out.append(_len(12, _named(1, req, lambda v: _strings(1, v))))
    if "securityDefinitions" in doc:
        out.append(_len(13, _named(1, doc["securityDefinitions"], _security_definition)))
    out.append(_extensions(16, doc))
    return b"".join(out)

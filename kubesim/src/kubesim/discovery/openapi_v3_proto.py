"""The protobuf form of ``/openapi/v3/<group-version>``: gnostic's ``openapi.v3.Document``.

kube-apiserver answers ``Accept: application/com.github.proto-openapi.spec.v3.v1.0+protobuf``
(or the deprecated ``...spec.v3@v1.0+protobuf``) with the JSON document parsed by gnostic's
``openapi_v3.ParseDocument`` and marshalled with proto3; this module does the same from the
JSON. Field numbers are those of gnostic's ``OpenAPIv3.proto``. As gnostic reads them:

* every map is a repeated ``Named*`` pair (``name = 1``, ``value = 2``) in document order,
  a ``SchemasOrReferences``-style message where the schema has one; ``paths`` keeps the
  keys starting with ``/``, ``responses`` the three-character codes (``default`` apart);
* a value that may be a ``$ref`` is a ``oneof`` (``SchemaOrReference``,
  ``ParameterOrReference``, ...): ``reference = 2`` when the object has ``$ref``, else the
  object at ``1``; ``additionalProperties`` is a schema (``1``) or a boolean (``2``),
  ``items`` an ``ItemsItem`` holding one schema, a schema's ``default`` a ``DefaultType``
  (number, boolean or string; empty for an object, array or null);
* vendor extensions, ``enum`` values, ``example`` and link parameters are ``Any`` messages
  holding the value's YAML text as gnostic writes it (:mod:`kubesim.encoding.goyaml`);
* proto3 leaves out empty strings, false, zero numbers and empty lists, but a message that
  is present is written even when empty, and a ``oneof`` value is written even when it is a
  default (``additionalProperties: false``, ``default: ""``).

Keys the OpenAPI 3.0 schema does not define, and values of the wrong JSON type, are
dropped (gnostic refuses such a document; KubeSim encodes the rest). A schema's ``type``
is one string (OpenAPI 3.0), ``items`` a single schema.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Mapping
from typing import Any

from kubesim.discovery.openapi_v2_proto import (
    _any,
    _bool,
    _double,
    _extensions,
    _int,
    _named,
    _str,
    _strings,
)
from kubesim.encoding.protowire import key as _key
from kubesim.encoding.protowire import length_delimited as _len

__all__ = ["encode_document"]

_Enc = Callable[[Any], bytes]
_Field = Callable[[int, Any], bytes]
_CODE = re.compile(r"[0-9X]{3}")


def _message(fields: dict[str, tuple[int, _Field]], ext: int | None) -> _Enc:
    """The encoder of one message: ``fields`` maps a JSON key to its field number and how
    it is written; ``ext`` is the number of the ``x-`` extensions (if the message has
    them). Fields are written in field-number order, as proto3 marshals them."""
    order: list[tuple[int, str | None, _Field | None]] = [
        (number, key, how) for key, (number, how) in fields.items()
    ]
    if ext is not None:
        order.append((ext, None, None))
    order.sort(key=lambda f: f[0])

    def encode(obj: Any) -> bytes:
        if not isinstance(obj, Mapping):
            return b""
        out = []
        for number, key, how in order:
            if key is None:
                out.append(_extensions(number, obj))
            elif key in obj:
                assert how is not None
                out.append(how(number, obj[key]))
        return b"".join(out)

    return encode


def _sub(encode: _Enc) -> _Field:
    """A message-valued field (written when the JSON value is an object)."""
    return lambda n, v: _len(n, encode(v)) if isinstance(v, Mapping) else b""


def _each(encode: _Enc) -> _Field:
    """A repeated message field, one per item of a JSON array."""
    return lambda n, v: b"".join(_len(n, encode(i)) for i in v) if isinstance(v, list) else b""


def _map(encode: _Enc) -> _Field:
    """A ``*s`` message whose ``additional_properties = 1`` are the object's pairs."""
    return lambda n, v: _len(n, _named(1, v, encode)) if isinstance(v, Mapping) else b""


def _or_reference(encode: _Enc) -> _Enc:
    """``*OrReference``: a ``Reference`` (``2``) for an object with ``$ref``, else ``1``."""

    def encode_oneof(obj: Any) -> bytes:
        if not isinstance(obj, Mapping):
            return b""
        if "$ref" in obj:
            return _len(2, _reference(obj))
        return _len(1, encode(obj))

    return encode_oneof


def _any_field(n: int, value: Any) -> bytes:
    return _len(n, _any(value))


def _anys(n: int, values: Any) -> bytes:
    return b"".join(_len(n, _any(v)) for v in values) if isinstance(values, list) else b""


def _names(encode: Callable[[int, Any], bytes]) -> _Field:
    """``repeated Named<scalar>`` pairs of an object (``Strings``, ``SecurityRequirement``)."""

    def field(n: int, v: Any) -> bytes:
        if not isinstance(v, Mapping):
            return b""
        return b"".join(_len(n, _str(1, k) + encode(2, x)) for k, x in v.items())

    return field


_reference = _message({"$ref": (1, _str), "summary": (2, _str), "description": (3, _str)}, ext=None)
_external_docs = _message({"description": (1, _str), "url": (2, _str)}, ext=3)


def _strings_message(n: int, v: Any) -> bytes:
    """``Strings``: ``additional_properties = 1`` of ``NamedString``."""
    return _len(n, _names(_str)(1, v)) if isinstance(v, Mapping) else b""


def _string_array(n: int, v: Any) -> bytes:
    """``StringArray {repeated string value = 1}``."""
    return _len(n, _strings(1, v)) if isinstance(v, list) else b""


# -- schemas ------------------------------------------------------------------------------


def _schema(obj: Any) -> bytes:
    return _SCHEMA(obj)


_schema_or_reference = _or_reference(_schema)


def _additional_properties(n: int, v: Any) -> bytes:
    if isinstance(v, bool):
        return _len(n, _bool(2, v, keep_default=True))
    if isinstance(v, Mapping):
        return _len(n, _len(1, _schema_or_reference(v)))
    return b""


def _items(n: int, v: Any) -> bytes:
    return _len(n, _len(1, _schema_or_reference(v))) if isinstance(v, Mapping) else b""


def _default(n: int, v: Any) -> bytes:
    """``DefaultType``: number 1 (a double), boolean 2, string 3, else nothing set."""
    if isinstance(v, bool):
        return _len(n, _bool(2, v, keep_default=True))
    if isinstance(v, str):
        return _len(n, _str(3, v, keep_default=True))
    if isinstance(v, int | float):
        return _len(n, _key(1, 1) + struct.pack("<d", float(v)))
    return _len(n, b"")


_discriminator = _message({"propertyName": (1, _str), "mapping": (2, _strings_message)}, ext=3)
_xml = _message(
    {
        "name": (1, _str),
        "namespace": (2, _str),
        "prefix": (3, _str),
        "attribute": (4, _bool),
        "wrapped": (5, _bool),
    },
    ext=6,
)
_SCHEMA = _message(
    {
        "nullable": (1, _bool),
        "discriminator": (2, _sub(_discriminator)),
        "readOnly": (3, _bool),
        "writeOnly": (4, _bool),
        "xml": (5, _sub(_xml)),
        "externalDocs": (6, _sub(_external_docs)),
        "example": (7, _any_field),
        "deprecated": (8, _bool),
        "title": (9, _str),
        "multipleOf": (10, _double),
        "maximum": (11, _double),
        "exclusiveMaximum": (12, _bool),
        "minimum": (13, _double),
        "exclusiveMinimum": (14, _bool),
        "maxLength": (15, _int),
        "minLength": (16, _int),
        "pattern": (17, _str),
        "maxItems": (18, _int),
        "minItems": (19, _int),
        "uniqueItems": (20, _bool),
        "maxProperties": (21, _int),
        "minProperties": (22, _int),
        "required": (23, _strings),
        "enum": (24, _anys),
        "type": (25, _str),
        "allOf": (26, _each(_schema_or_reference)),
        "oneOf": (27, _each(_schema_or_reference)),
        "anyOf": (28, _each(_schema_or_reference)),
        "not": (29, _sub(_schema)),
        "items": (30, _items),
        "properties": (31, _map(_schema_or_reference)),
        "additionalProperties": (32, _additional_properties),
        "default": (33, _default),
        "description": (34, _str),
        "format": (35, _str),
    },
    ext=36,
)

# -- media types, parameters, bodies, responses --------------------------------------------


def _header(obj: Any) -> bytes:
    return _HEADER(obj)


def _examples(n: int, v: Any) -> bytes:
    return _map(_or_reference(_example))(n, v)


_example = _message(
    {
        "summary": (1, _str),
        "description": (2, _str),
        "value": (3, _any_field),
        "externalValue": (4, _str),
    },
    ext=5,
)
_encoding = _message(
    {
        "contentType": (1, _str),
        "headers": (2, _map(_or_reference(_header))),
        "style": (3, _str),
        "explode": (4, _bool),
        "allowReserved": (5, _bool),
    },
    ext=6,
)
_media_type = _message(
    {
        "schema": (1, _sub(_schema_or_reference)),
        "example": (2, _any_field),
        "examples": (3, _examples),
        "encoding": (4, _map(_encoding)),
    },
    ext=5,
)
_content = _map(_media_type)
_HEADER = _message(
    {
        "description": (1, _str),
        "required": (2, _bool),
        "deprecated": (3, _bool),
        "allowEmptyValue": (4, _bool),
        "style": (5, _str),
        "explode": (6, _bool),
        "allowReserved": (7, _bool),
        "schema": (8, _sub(_schema_or_reference)),
        "example": (9, _any_field),
        "examples": (10, _examples),
        "content": (11, _content),
    },
    ext=12,
)
_parameter = _message(
    {
        "name": (1, _str),
        "in": (2, _str),
        "description": (3, _str),
        "required": (4, _bool),
        "deprecated": (5, _bool),
        "allowEmptyValue": (6, _bool),
        "style": (7, _str),
        "explode": (8, _bool),
        "allowReserved": (9, _bool),
        "schema": (10, _sub(_schema_or_reference)),
        "example": (11, _any_field),
        "examples": (12, _examples),
        "content": (13, _content),
    },
    ext=14,
)
_parameter_or_reference = _or_reference(_parameter)
_request_body = _message(
    {"description": (1, _str), "content": (2, _content), "required": (3, _bool)}, ext=4
)


def _server(obj: Any) -> bytes:
    return _SERVER(obj)


def _any_or_expression(n: int, v: Any) -> bytes:
    """``AnyOrExpression``: gnostic reads an object as an ``Expression`` (``2``, its pairs
    as ``NamedAny``); anything else matches neither."""
    if not isinstance(v, Mapping):
        return _len(n, b"")
    return _len(n, _len(2, _names(_any_field)(1, v)))


_link = _message(
    {
        "operationRef": (1, _str),
        "operationId": (2, _str),
        "parameters": (3, _any_or_expression),
        "requestBody": (4, _any_or_expression),
        "description": (5, _str),
        "server": (6, _sub(_server)),
    },
    ext=7,
)
_response = _message(
    {
        "description": (1, _str),
        "headers": (2, _map(_or_reference(_header))),
        "content": (3, _content),
        "links": (4, _map(_or_reference(_link))),
    },
    ext=5,
)
_response_or_reference = _or_reference(_response)


def _responses(obj: Any) -> bytes:
    """``Responses``: ``default`` (1), the status codes (2, document order), extensions."""
    if not isinstance(obj, Mapping):
        return b""
    out = b""
    if isinstance(obj.get("default"), Mapping):
        out += _len(1, _response_or_reference(obj["default"]))
    codes = {k: v for k, v in obj.items() if _CODE.fullmatch(k)}
    return out + _named(2, codes, _response_or_reference) + _extensions(3, obj)


# -- operations, paths, the document --------------------------------------------------------


def _path_item(obj: Any) -> bytes:
    return _PATH_ITEM(obj)


def _callback(obj: Any) -> bytes:
    """``Callback``: every key but the extensions is a path item."""
    if not isinstance(obj, Mapping):
        return b""
    paths = {k: v for k, v in obj.items() if not k.startswith("x-")}
    return _named(1, paths, _path_item) + _extensions(2, obj)


def _security(n: int, v: Any) -> bytes:
    """``repeated SecurityRequirement``: each a ``NamedStringArray`` per scheme."""
    if not isinstance(v, list):
        return b""
    return b"".join(_len(n, _names(_string_array)(1, r)) for r in v if isinstance(r, Mapping))


_server_variable = _message(
    {"enum": (1, _strings), "default": (2, _str), "description": (3, _str)}, ext=4
)
_SERVER = _message(
    {"url": (1, _str), "description": (2, _str), "variables": (3, _map(_server_variable))},
    ext=4,
)
_operation = _message(
    {
        "tags": (1, _strings),
        "summary": (2, _str),
        "description": (3, _str),
        "externalDocs": (4, _sub(_external_docs)),
        "operationId": (5, _str),
        "parameters": (6, _each(_parameter_or_reference)),
        "requestBody": (7, _sub(_or_reference(_request_body))),
        "responses": (8, _sub(_responses)),
        "callbacks": (9, _map(_or_reference(_callback))),
        "deprecated": (10, _bool),
        "security": (11, _security),
        "servers": (12, _each(_server)),
    },
    ext=13,
)
_PATH_ITEM = _message(
    {
        "$ref": (1, _str),
        "summary": (2, _str),
        "description": (3, _str),
        "get": (4, _sub(_operation)),
        "put": (5, _sub(_operation)),
        "post": (6, _sub(_operation)),
        "delete": (7, _sub(_operation)),
        "options": (8, _sub(_operation)),
        "head": (9, _sub(_operation)),
        "patch": (10, _sub(_operation)),
        "trace": (11, _sub(_operation)),
        "servers": (12, _each(_server)),
        "parameters": (13, _each(_parameter_or_reference)),
    },
    ext=14,
)


def _paths(obj: Any) -> bytes:
    """``Paths``: the keys starting with ``/`` (1), then the extensions (2)."""
    if not isinstance(obj, Mapping):
        return b""
    return _named(1, {k: v for k, v in obj.items() if k.startswith("/")}, _path_item) + (
        _extensions(2, obj)
    )


_oauth_flow = _message(
    {
        "authorizationUrl": (1, _str),
        "tokenUrl": (2, _str),
        "refreshUrl": (3, _str),
        "scopes": (4, _strings_message),
    },
    ext=5,
)
_oauth_flows = _message(
    {
        "implicit": (1, _sub(_oauth_flow)),
        "password": (2, _sub(_oauth_flow)),
        "clientCredentials": (3, _sub(_oauth_flow)),
        "authorizationCode": (4, _sub(_oauth_flow)),
    },
    ext=5,
)
_security_scheme = _message(
    {
        "type": (1, _str),
        "description": (2, _str),
        "name": (3, _str),
        "in": (4, _str),
        "scheme": (5, _str),
        "bearerFormat": (6, _str),
        "flows": (7, _sub(_oauth_flows)),
        "openIdConnectUrl": (8, _str),
    },
    ext=9,
)
_components = _message(
    {
        "schemas": (1, _map(_schema_or_reference)),
        "responses": (2, _map(_response_or_reference)),
        "parameters": (3, _map(_parameter_or_reference)),
        "examples": (4, _examples),
        "requestBodies": (5, _map(_or_reference(_request_body))),
        "headers": (6, _map(_or_reference(_header))),
        "securitySchemes": (7, _map(_or_reference(_security_scheme))),
        "links": (8, _map(_or_reference(_link))),
        "callbacks": (9, _map(_or_reference(_callback))),
    },
    ext=10,
)
_contact = _message({"name": (1, _str), "url": (2, _str), "email": (3, _str)}, ext=4)
_license = _message({"name": (1, _str), "url": (2, _str)}, ext=3)
_info = _message(
    {
        "title": (1, _str),
        "description": (2, _str),
        "termsOfService": (3, _str),
        "contact": (4, _sub(_contact)),
        "license": (5, _sub(_license)),
        "version": (6, _str),
        "summary": (8, _str),
    },
    ext=7,
)
_tag = _message(
    {"name": (1, _str), "description": (2, _str), "externalDocs": (3, _sub(_external_docs))},
    ext=4,
)
_document = _message(
    {
        "openapi": (1, _str),
        "info": (2, _sub(_info)),
        "servers": (3, _each(_server)),
        "paths": (4, _sub(_paths)),
        "components": (5, _sub(_components)),
        "security": (6, _security),
        "tags": (7, _each(_tag)),
        "externalDocs": (8, _sub(_external_docs)),
    },
    ext=9,
)


def encode_document(doc: Mapping[str, Any]) -> bytes:
    """``openapi.v3.Document`` of an OpenAPI 3.0 JSON document."""
    return _document(doc)

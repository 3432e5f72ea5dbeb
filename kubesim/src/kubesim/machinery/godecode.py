"""Decoding JSON into the Go types of the built-in kinds as ``encoding/json`` does, the types
derived from the recorded OpenAPI v2 definitions (:mod:`kubesim.machinery.recorded`).

:class:`GoDecoder` walks a document against a definition: a value of the wrong JSON type
raises :class:`~kubesim.errors.GoDecodeError` with Go's message (``json: cannot unmarshal
string into Go struct field DeploymentSpec.spec.replicas of type int32``: Go's struct name, the
full field path, the type as reflect prints it); the types with their own decoders answer as
they do (``metav1.Time``, ``resource.Quantity``, ``intstr.IntOrString``, base64 ``[]byte``).
What decoding changes is kept: fields the type does not have (case matters) are dropped and
recorded in ``strict`` (with duplicate fields), times are rewritten in UTC, nulls become what
Go makes of them.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from kubesim.encoding.gofmt import go_quote, json_kind
from kubesim.encoding.gotime import format_micro_time, format_time, parse_rfc3339
from kubesim.errors import GoDecodeError, GoTimeError
from kubesim.machinery.recorded import recorded_definitions

__all__ = [
    "META",
    "GoDecoder",
    "definition_for",
    "definitions",
    "go_dynamic_type",
    "go_print",
    "go_type_of_ref",
]

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_TIME = META + "Time"
_MICRO = META + "MicroTime"
#: A quantity's number and suffix. Written so that each character has one place to go (the
#: suffix starts with a letter or a sign): Python's backtracking took quadratic time on a
#: long run of digits followed by a character neither part takes.
_QUANTITY_RE = re.compile(r"([+-]?[0-9.]+)((?:[eEinumkKMGTP]+[-+]?|[-+])[0-9]*)?")
_QUANTITY_ERR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_SUFFIXES = {"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
#: types whose contents are any JSON (no type errors, no unknown fields inside)
_OPAQUE = {
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    META + "FieldsV1",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
}
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


# -- definitions ----------------------------------------------------------------------------


def definitions() -> Mapping[str, Any]:
    """The recorded OpenAPI v2 definitions, by name."""
    return recorded_definitions()


@cache
def _by_gvk() -> Mapping[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            out.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk["kind"]), name)
    return out


def definition_for(group: str, version: str, kind: str) -> str | None:
    """The OpenAPI definition name of a built-in kind (``io.k8s.api.apps.v1.Deployment``)."""
    return _by_gvk().get((group, version, kind))


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def go_type_of_ref(name: str) -> str:
    """The Go type of a definition as reflect prints it (``v1.PodSpec``)."""
    parts = name.split(".")
    return f"{parts[-2]}.{parts[-1]}"


def _go_type(schema: Mapping[str, Any]) -> str:
    """The Go type a schema is decoded into, as reflect prints it."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return go_type_of_ref(ref.rsplit("/", 1)[-1])
    kind = schema.get("type")
    fmt = schema.get("format")
    if kind == "array":
        return "[]" + _go_type(schema.get("items") or {})
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return "map[string]" + _go_type(schema["additionalProperties"])
    if kind == "string":
        return "[]uint8" if fmt == "byte" else "string"
    if kind == "integer":
        return str(fmt) if fmt in ("int32", "int64") else "int"
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    return "map[string]interface {}"


def go_dynamic_type(value: Any) -> str:
    """``%T`` of a decoded JSON value (unstructured: int64 and float64 numbers)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "[]interface {}" if isinstance(value, list) else "map[string]interface {}"


def go_print(value: Any) -> str:
    """``%v`` of a scalar or a short rendition of a container."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(go_print(v) for v in value) + "]"
    return str(value)


def _number_text(value: int | float) -> str:
    return repr(value)


# -- the Go decoder -------------------------------------------------------------------------


class GoDecoder:
    """Decodes documents against the definitions (see the module docstring); unknown and
    duplicate fields are collected in ``strict``. ``duplicates`` maps ``id()`` of a decoded
    mapping to the keys it had more than once."""

    def __init__(self, duplicates: Mapping[int, list[str]]) -> None:
        self.defs = definitions()
        self.duplicates = duplicates
        self.strict: list[str] = []

    def fail(self, value: Any, go_type: str, struct: str, fields: tuple[str, ...]) -> GoDecodeError:
        what = json_kind(value)
        if what == "number" and go_type in ("int", "int32", "int64", "float64"):
            what = f"number {_number_text(value)}"
        where = ".".join(fields)
        return GoDecodeError(
            f"json: cannot unmarshal {what} into Go struct field {struct}.{where} of type {go_type}"
        )

    def value(
        self, value: Any, schema: Mapping[str, Any], struct: str, fields: tuple[str, ...], path: str
    ) -> Any:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if value is None:
                return None
            if name in _OPAQUE:
                return value
            if name in (_TIME, _MICRO):
                return _time(value, micro=name == _MICRO)
            if name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
                return _int_or_string(value)
            if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
                return _quantity(value)
            target = self.defs.get(name)
            if target is None:
                return value
            return self.typed(value, target, go_type_of_ref(name), struct, fields, path)
        return self.typed(value, schema, _go_type(schema), struct, fields, path)

    def typed(
        self,
        value: Any,
        schema: Mapping[str, Any],
        go_type: str,
        struct: str,
        fields: tuple[str, ...],
        path: str,
    ) -> Any:
        if value is None:
            return None
        kind = schema.get("type")
        props = schema.get("properties")
        if isinstance(props, Mapping):
            if not isinstance(value, dict):
                raise self.fail(value, go_type, struct, fields)
            return self.struct(value, props, go_type.split(".")[-1], fields, path)
        if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
            if not isinstance(value, dict):
                raise self.fail(value, go_type, struct, fields)
            elem = schema["additionalProperties"]
            self.check_duplicates(value, path)
            return {
                k: _zero(elem) if v is None else self.value(v, elem, struct, fields, f"{path}.{k}")
                for k, v in value.items()
            }
        if kind == "array":
            if not isinstance(value, list):
                raise self.fail(value, go_type, struct, fields)
            items = schema.get("items") or {}
            return [
                _zero(items) if v is None else self.value(v, items, struct, fields, f"{path}[{i}]")
                for i, v in enumerate(value)
            ]
        if kind == "string":
            if not isinstance(value, str):
                raise self.fail(value, go_type, struct, fields)
            if schema.get("format") == "byte":
                _base64(value)
            return value
        if kind == "integer":
            low, high = _INT_RANGE.get(go_type, _INT_RANGE["int64"])
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise self.fail(value, go_type, struct, fields)
            return value
        if kind == "number":
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise self.fail(value, go_type, struct, fields)
            return value
        if kind == "boolean":
            if not isinstance(value, bool):
                raise self.fail(value, go_type, struct, fields)
            return value
        return value

    def struct(
        self,
        value: dict[str, Any],
        props: Mapping[str, Any],
        name: str,
        fields: tuple[str, ...],
        path: str,
    ) -> dict[str, Any]:
        self.check_duplicates(value, path)
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = props.get(key)
            where = f"{path}.{key}" if path else key
            if sub is None:
                self.strict.append(f"unknown field {go_quote(where)}")
                continue
            decoded = self.value(item, sub, name, (*fields, key), where)
            if decoded is not None:
                out[key] = decoded
        return out

    def check_duplicates(self, value: dict[str, Any], path: str) -> None:
        for key in self.duplicates.get(id(value), ()):
            where = f"{path}.{key}" if path else key
            self.strict.append(f"duplicate field {go_quote(where)}")


def _zero(schema: Mapping[str, Any]) -> Any:
    """What a null element of a map or list becomes (Go's zero value)."""
    kind = schema.get("type")
    if kind == "string" and schema.get("format") != "byte":
        return ""
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return None


def _time(value: Any, micro: bool) -> str:
    if not isinstance(value, str):
        raise GoDecodeError(
            f"json: cannot unmarshal {json_kind(value)} into Go value of type string"
        )
    try:
        if micro:
            return format_micro_time(_parse_micro(value))
        return format_time(parse_rfc3339(value))
    except GoTimeError as exc:
        raise GoDecodeError(str(exc)) from None


_MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_FRACTION = re.compile(r"(\.\d{6})(?=Z|[+-])")


def _parse_micro(value: str) -> Any:
    """``time.Parse(RFC3339Micro, value)``: exactly six fractional digits."""
    m = re.match(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(.*)$", value)
    if m is not None:
        rest = m.group(2)
        if not _FRACTION.match(rest):
            raise GoTimeError(
                f'parsing time "{value}" as "{_MICRO_LAYOUT}": cannot parse "{rest}" as ".000000"'
            )
    try:
        return parse_rfc3339(value)
    except GoTimeError as exc:
        raise GoTimeError(str(exc).replace("2006-01-02T15:04:05Z07:00", _MICRO_LAYOUT)) from None


def _int_or_string(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31:
        return value
    what = f"number {_number_text(value)}" if json_kind(value) == "number" else json_kind(value)
    raise GoDecodeError(f"json: cannot unmarshal {what} into Go value of type int32")


def _quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise GoDecodeError(_QUANTITY_ERR)
    text = value.strip() if isinstance(value, str) else repr(value)
    m = _QUANTITY_RE.fullmatch(text)
    if m is None or m.group(1).count(".") > 1 or m.group(1) in ("+", "-", ".", ""):
        raise GoDecodeError(_QUANTITY_ERR)
    suffix = m.group(2) or ""
    if suffix not in _SUFFIXES and not re.fullmatch(r"[eE][-+]?[0-9]+", suffix):
        raise GoDecodeError("unable to parse quantity's suffix")
    return value if isinstance(value, str) else text.removesuffix(".0")


def _base64(value: str) -> None:
    text = value.replace("\r", "").replace("\n", "")
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        bad = next((i for i, c in enumerate(text) if not (c.isalnum() or c in "+/=")), None)
        at = bad if bad is not None else max(0, len(text) - len(text) % 4)
        raise GoDecodeError(f"illegal base64 data at input byte {at}") from None

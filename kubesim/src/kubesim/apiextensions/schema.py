"""Custom resources against their CRD's structural schema: pruning, defaulting, validation.

What apiextensions-apiserver v1.28 does with a version's ``openAPIV3Schema``:

* :func:`prune` drops every field the schema does not specify (unless the node says
  ``x-kubernetes-preserve-unknown-fields``), never the root's ``apiVersion``, ``kind`` and
  ``metadata`` nor an embedded resource's, and returns the dropped paths
  (``spec.unknownField``, ``spec.items[0].x``) for fieldValidation's warning or error;
* :func:`apply_defaults` sets each absent field that has a ``default`` (a deep copy), also
  where the value is null and the field is not nullable;
* :func:`validate` returns the 422 causes in the apiserver's form: the field path, then
  kube-openapi's detail, e.g. ``spec.replicas: Invalid value: "string": spec.replicas in body
  must be of type integer: "string"`` (type, nullable, enum, minimum/maximum, multipleOf,
  minLength/maxLength, pattern (Go's regexp: :mod:`kubesim.machinery.goregexp`, linear
  time), format, minItems/maxItems, uniqueItems,
  minProperties/maxProperties, required, x-kubernetes-int-or-string, embedded resources).

All three take the object (a decoded JSON document) and the schema; none has I/O.
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import re
import uuid
from collections.abc import Mapping
from typing import Any

from kubesim.encoding.gotime import parse_rfc3339
from kubesim.errors import GoTimeError
from kubesim.machinery.goregexp import GoRegexpError, compile_go
from kubesim.machinery.validation import (
    Cause,
    go_value,
    invalid,
    not_supported,
    required,
)
from kubesim.registry.resource import ResourceType

__all__ = ["apply_defaults", "custom_causes", "prune", "schema_of", "validate"]

_ROOT_KEEP = ("apiVersion", "kind", "metadata")
Schema = Mapping[str, Any]


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def schema_of(rt: ResourceType) -> Schema | None:
    """The structural schema of a custom type's version (None for built-in types)."""
    schema = ((rt.crd_version or {}).get("schema") or {}).get("openAPIV3Schema")
    return schema if rt.custom and isinstance(schema, Mapping) else None


def custom_causes(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """Default ``obj`` (in place) by its CRD version's schema, then the 422 causes (empty
    if valid, and always for built-in types)."""
    schema = schema_of(rt)
    if schema is None:
        return []
    apply_defaults(obj, schema)
    return validate(obj, schema)


# -- pruning ---------------------------------------------------------------------------------


def prune(obj: dict[str, Any], schema: Schema) -> list[str]:
    """Drop (in place) what ``schema`` does not specify; returns the dropped paths in
    document order."""
    dropped: list[str] = []
    _prune_object(obj, schema, "", dropped, keep=_ROOT_KEEP)
    return dropped


def _prune_object(
    obj: dict[str, Any], s: Schema, path: str, dropped: list[str], keep: tuple[str, ...] = ()
) -> None:
    if s.get("x-kubernetes-embedded-resource"):
        keep = _ROOT_KEEP
    props = s.get("properties") or {}
    extra = s.get("additionalProperties")
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    for key in list(obj):
        value = obj[key]
        sub = props.get(key)
        if sub is None and isinstance(extra, Mapping):
            sub = extra
        if sub is None:
            if key in keep or preserve:
                continue
            del obj[key]
            dropped.append(_child(path, key))
            continue
        _prune_value(value, sub, _child(path, key), dropped)


def _prune_value(value: Any, s: Schema, path: str, dropped: list[str]) -> None:
    if isinstance(value, dict):
        if (
            s.get("x-kubernetes-preserve-unknown-fields")
            and not s.get("properties")
            and not (isinstance(s.get("additionalProperties"), Mapping))
        ):
            return
        _prune_object(value, s, path, dropped)
    elif isinstance(value, list) and isinstance(s.get("items"), Mapping):
        for i, item in enumerate(value):
            _prune_value(item, s["items"], f"{path}[{i}]", dropped)


# -- defaulting ------------------------------------------------------------------------------


def apply_defaults(obj: Any, schema: Schema) -> None:
    """Set the schema's ``default``s (in place) where fields are absent (or null and not
    nullable)."""
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if "default" in sub and (
                key not in obj or (obj[key] is None and not sub.get("nullable"))
            ):
                obj[key] = copy.deepcopy(sub["default"])
            if key in obj:
                apply_defaults(obj[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key, value in obj.items():
                if key in props:
                    continue
                if value is None and "default" in extra and not extra.get("nullable"):
                    obj[key] = copy.deepcopy(extra["default"])
                apply_defaults(obj[key], extra)
    elif isinstance(obj, list) and isinstance(schema.get("items"), Mapping):
        items = schema["items"]
        for i, item in enumerate(obj):
            if item is None and "default" in items and not items.get("nullable"):
                obj[i] = copy.deepcopy(items["default"])
            apply_defaults(obj[i], items)


# -- validation ------------------------------------------------------------------------------


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(want: str, value: Any) -> bool:
    got = _json_type(value)
    return got == want or (want == "number" and got == "integer")


def _num(v: Any) -> str:
    """``%v`` of a schema bound (kube-openapi holds them as float64)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _type_cause(path: str, want: str, value: Any) -> Cause:
    got = _json_type(value)
    return Cause(
        "FieldValueTypeInvalid",
        f'Invalid value: "{got}": {path} in body must be of type {want}: "{got}"',
        path,
    )


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return invalid(path, value, f"{path} {detail}")


_HOSTNAME = re.compile(
    r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*"
)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _format_ok(fmt: str, value: str) -> bool:
    """The formats apiextensions validates (others are ignored)."""
    try:
        if fmt == "date-time":
            parse_rfc3339(value)
        elif fmt == "date":
            return bool(_DATE.fullmatch(value)) and parse_rfc3339(value + "T00:00:00Z") is not None
        elif fmt == "uuid":
            uuid.UUID(value)
        elif fmt == "byte":
            base64.b64decode(value, validate=True)
        elif fmt == "ipv4":
            return ipaddress.ip_address(value).version == 4
        elif fmt == "ipv6":
            return ipaddress.ip_address(value).version == 6
        elif fmt == "cidr":
            ipaddress.ip_network(value, strict=False)
        elif fmt == "hostname":
            return len(value) <= 255 and bool(_HOSTNAME.fullmatch(value))
        elif fmt == "email":
            return bool(_EMAIL.fullmatch(value))
    except (GoTimeError, ValueError):
        return False
    return True


def validate(obj: Any, schema: Schema, path: str = "") -> list[Cause]:
    """The causes of ``obj`` against ``schema`` (empty when valid); the root's apiVersion,
    kind and metadata are not the schema's business."""
    errs: list[Cause] = []
    _validate(obj, schema, path, errs, root=not path)
    return errs


def _validate(value: Any, s: Schema, path: str, errs: list[Cause], root: bool = False) -> None:
    if value is None:
        if not s.get("nullable") and s.get("type"):
            errs.append(_type_cause(path, str(s["type"]), None))
        return
    if s.get("x-kubernetes-int-or-string"):
        if _json_type(value) not in ("integer", "string"):
            errs.append(_type_cause(path, "integer,string", value))
            return
    elif "type" in s and not _type_ok(str(s["type"]), value):
        errs.append(_type_cause(path, str(s["type"]), value))
        return
    enum = s.get("enum")
    if isinstance(enum, list) and value not in enum:
        shown = [e if isinstance(e, str) else go_value(e) for e in enum]
        errs.append(not_supported(path, value, shown))
    if isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(value, s, path, errs)
    elif isinstance(value, str):
        _validate_string(value, s, path, errs)
    elif isinstance(value, list):
        _validate_array(value, s, path, errs)
    elif isinstance(value, dict):
        _validate_object(value, s, path, errs, root)


def _validate_number(value: float, s: Schema, path: str, errs: list[Cause]) -> None:
    if "maximum" in s:
        bound = s["maximum"]
        if s.get("exclusiveMaximum") and value >= bound:
            errs.append(_invalid(path, value, f"in body should be less than {_num(bound)}"))
        elif value > bound:
            detail = f"in body should be less than or equal to {_num(bound)}"
            errs.append(_invalid(path, value, detail))
    if "minimum" in s:
        bound = s["minimum"]
        if s.get("exclusiveMinimum") and value <= bound:
            errs.append(_invalid(path, value, f"in body should be greater than {_num(bound)}"))
        elif value < bound:
            detail = f"in body should be greater than or equal to {_num(bound)}"
            errs.append(_invalid(path, value, detail))
    step = s.get("multipleOf")
    if isinstance(step, int | float) and step and (value / step) != int(value / step):
        errs.append(_invalid(path, value, f"in body should be a multiple of {_num(step)}"))


def _validate_string(value: str, s: Schema, path: str, errs: list[Cause]) -> None:
    if "maxLength" in s and len(value) > int(s["maxLength"]):
        detail = f"may not be longer than {int(s['maxLength'])}"
        errs.append(Cause("FieldValueTooLong", f"Too long: {detail}", path))
    if "minLength" in s and len(value) < int(s["minLength"]):
        detail = f"in body should be at least {int(s['minLength'])} chars long"
        errs.append(_invalid(path, value, detail))
    pattern = s.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            matched = compile_go(pattern).search(value) is not None
        except GoRegexpError as exc:  # kube-openapi's answer (a CRD's create refuses it)
            errs.append(
                _invalid(
                    path, value, f"in body should match '{pattern}, but pattern is invalid: {exc}'"
                )
            )
        else:
            if not matched:
                errs.append(_invalid(path, value, f"in body should match '{pattern}'"))
    fmt = s.get("format")
    if isinstance(fmt, str) and not _format_ok(fmt, value):
        errs.append(
            Cause(
                "FieldValueTypeInvalid",
                f"Invalid value: {go_value(value)}: {path} in body must be of type {fmt}: "
                f"{go_value(value)}",
                path,
            )
        )


def _validate_array(value: list[Any], s: Schema, path: str, errs: list[Cause]) -> None:
    if "maxItems" in s and len(value) > int(s["maxItems"]):
        msg = f"Too many: {len(value)}: must have at most {int(s['maxItems'])} items"
        errs.append(Cause("FieldValueTooMany", msg, path))
    if "minItems" in s and len(value) < int(s["minItems"]):
        detail = f"in body should have at least {int(s['minItems'])} items"
        errs.append(_invalid(path, value, detail))
    if s.get("uniqueItems"):
        seen: list[Any] = []
        for item in value:
            if item in seen:
                errs.append(_invalid(path, value, "in body shouldn't contain duplicates"))
                break
            seen.append(item)
    items = s.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _validate(item, items, f"{path}[{i}]", errs)


def _validate_object(
    value: dict[str, Any], s: Schema, path: str, errs: list[Cause], root: bool
) -> None:
    if "maxProperties" in s and len(value) > int(s["maxProperties"]):
        msg = f"Too many: {len(value)}: must have at most {int(s['maxProperties'])} items"
        errs.append(Cause("FieldValueTooMany", msg, path))
    if "minProperties" in s and len(value) < int(s["minProperties"]):
        detail = f"in body should have at least {int(s['minProperties'])} properties"
        errs.append(_invalid(path, value, detail))
    skip = _ROOT_KEEP if root else ()
    if s.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                errs.append(required(_child(path, key), "must not be empty"))
    for key in s.get("required") or []:
        if key not in value and key not in skip:
            errs.append(required(_child(path, key)))
    props = s.get("properties") or {}
    extra = s.get("additionalProperties")
    for key, item in value.items():
        if key in skip:
            continue
        sub = props.get(key)
        if sub is None and isinstance(extra, Mapping):
            sub = extra
        if sub is not None:
            _validate(item, sub, _child(path, key), errs)

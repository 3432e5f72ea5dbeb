"""Decoding a written object as kube-apiserver's decoders do, and ``fieldValidation``.

Built-in kinds are decoded into their Go types, here derived from the recorded OpenAPI v2
definitions: a value of the wrong JSON type is the recorded 400 (25a, 25d)
``Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal
string into Go struct field DeploymentSpec.spec.replicas of type int32`` (Go's struct name,
its full field path, its type: ``int32``, ``[]v1.Container``, ``map[string]string``,
``v1.PodSpec``); the types with their own decoders answer as they do (``metav1.Time``:
``parsing time "x" as "2006-01-02T15:04:05Z07:00": ...``, ``resource.Quantity``,
``intstr.IntOrString``, base64 ``[]byte``). What decoding changes is kept: fields the type
does not have (case matters) are dropped, times are rewritten in UTC as the apiserver writes
them, nulls become what Go makes of them. A body of another kind is the recorded
``Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to
(core.ConfigMap): unknown conversion``.

Custom resources are pruned by their CRD version's structural schema
(:mod:`kubesim.apiextensions.schema`) and defaulted; their metadata is decoded as ObjectMeta.

Unknown and duplicate fields then follow ``fieldValidation`` (25b): ``Strict`` is a 400
``... strict decoding error: unknown field "spec.replicaz", duplicate field "data"``,
``Warn`` (the default) one ``Warning: 299 - "unknown field \\"spec.replicaz\\""`` header per
finding, ``Ignore`` silence; any other value is the recorded 422 on Create/Update/
PatchOptions. Patches are decoded after they are applied, inside the generic store's
``patch`` (a type error there is a 422 ``patch: Invalid value`` as the patch handler
answers): :func:`writing` serves a write with a
:class:`~kubesim.registry.context.WriteContext` whose directive, warnings and decoder
(:func:`decode_patched`) reach it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from aiohttp import web

from kubesim.apiextensions.schema import apply_defaults, prune
from kubesim.encoding import deepjson
from kubesim.encoding.gofmt import go_quote
from kubesim.encoding.gotime import format_micro_time, format_time, parse_rfc3339
from kubesim.errors import GoDecodeError, GoTimeError, KubeSimApiError, status_body
from kubesim.machinery.recorded import recorded_definitions
from kubesim.registry.context import WriteContext
from kubesim.registry.context import writing as write_context
from kubesim.registry.resource import ResourceType
from kubesim.server.bodies import Body
from kubesim.server.limits import deep_recursion

__all__ = [
    "DIRECTIVES",
    "Decoded",
    "add_warnings",
    "decode_body",
    "decode_patched",
    "field_validation",
    "warning_header",
    "writing",
]

DIRECTIVES = ("", "Ignore", "Strict", "Warn")
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_TIME = _META + "Time"
_MICRO = _META + "MicroTime"
_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_QUANTITY_ERR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_SUFFIXES = {"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
#: types whose contents are any JSON (no type errors, no unknown fields inside)
_OPAQUE = {
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    _META + "FieldsV1",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
}
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


# -- the request's directive and warnings -------------------------------------------------


@contextmanager
def writing(directive: str, depth: int = 0) -> Iterator[WriteContext]:
    """Serve one HTTP write: patches decoded inside see ``directive`` and add their
    warnings to the context it yields; nesting up to ``depth`` may be walked recursively."""
    ctx = WriteContext(directive or "Warn", decode_patched=decode_patched)
    with deep_recursion(depth), write_context(ctx):
        yield ctx


def field_validation(query: Mapping[str, str], options: str) -> str:
    """The ``fieldValidation`` query parameter, or the recorded 422 on ``options``
    (CreateOptions, UpdateOptions, PatchOptions) for a value that is not one of
    "", Ignore, Strict, Warn (case matters)."""
    value = query.get("fieldValidation", "")
    if value in DIRECTIVES:
        return value or "Warn"
    supported = ", ".join(go_quote(d) for d in DIRECTIVES)
    detail = f"Unsupported value: {go_quote(value)}: supported values: {supported}"
    message = f'{options}.meta.k8s.io "" is invalid: fieldValidation: {detail}'
    details = {
        "group": "meta.k8s.io",
        "kind": options,
        "causes": [
            {"reason": "FieldValueNotSupported", "message": detail, "field": "fieldValidation"}
        ],
    }
    raise KubeSimApiError(422, status_body(422, message, "Invalid", details))


def warning_header(text: str) -> str:
    """A ``Warning`` header value: ``299 - "<text, quoted>"``."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add_warnings(resp: web.StreamResponse, warnings: list[str]) -> web.StreamResponse:
    """``resp`` with one ``Warning`` header per warning (repeats dropped), in order."""
    for text in dict.fromkeys(warnings):
        resp.headers.add("Warning", warning_header(text))
    return resp


# -- definitions ----------------------------------------------------------------------------


def _definitions() -> Mapping[str, Any]:
    return recorded_definitions()


@cache
def _by_gvk() -> Mapping[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in _definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            out.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk["kind"]), name)
    return out


def definition_for(group: str, version: str, kind: str) -> str | None:
    """The OpenAPI definition name of a built-in kind (``io.k8s.api.apps.v1.Deployment``)."""
    return _by_gvk().get((group, version, kind))


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _go_type_of_ref(name: str) -> str:
    parts = name.split(".")
    return f"{parts[-2]}.{parts[-1]}"


def _go_type(schema: Mapping[str, Any]) -> str:
    """The Go type a schema is decoded into, as reflect prints it."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _go_type_of_ref(ref.rsplit("/", 1)[-1])
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


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _go_dynamic_type(value: Any) -> str:
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


def _go_print(value: Any) -> str:
    """``%v`` of a scalar or a short rendition of a container."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(_go_print(v) for v in value) + "]"
    return str(value)


def _number_text(value: int | float) -> str:
    return repr(value)


# -- the Go decoder -------------------------------------------------------------------------


class _Decoder:
    """Decode one document against the definitions (see the module docstring)."""

    def __init__(self, duplicates: Mapping[int, list[str]]) -> None:
        self.defs = _definitions()
        self.duplicates = duplicates
        self.strict: list[str] = []

    def fail(self, value: Any, go_type: str, struct: str, fields: tuple[str, ...]) -> GoDecodeError:
        what = _json_kind(value)
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
            return self.typed(value, target, _go_type_of_ref(name), struct, fields, path)
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
            f"json: cannot unmarshal {_json_kind(value)} into Go value of type string"
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
    what = f"number {_number_text(value)}" if _json_kind(value) == "number" else _json_kind(value)
    raise GoDecodeError(f"json: cannot unmarshal {what} into Go value of type int32")


def _quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise GoDecodeError(_QUANTITY_ERR)
    text = value.strip() if isinstance(value, str) else repr(value)
    m = _QUANTITY_RE.match(text)
    if m is None or m.group(1).count(".") > 1 or m.group(1) in ("+", "-", ".", ""):
        raise GoDecodeError(_QUANTITY_ERR)
    suffix = m.group(2)
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


# -- decoding a body ------------------------------------------------------------------------


@dataclass
class Decoded:
    """A decoded object, the warnings to send with the answer, its nesting depth."""

    obj: dict[str, Any]
    warnings: list[str]
    depth: int = 0


def _internal_package(group: str) -> str:
    return "core" if not group else group.split(".", 1)[0]


def _handled_as(rt: ResourceType, doc: Mapping[str, Any]) -> str:
    kind = doc.get("kind") if isinstance(doc.get("kind"), str) and doc.get("kind") else rt.kind
    api_version = doc.get("apiVersion") if isinstance(doc.get("apiVersion"), str) else ""
    version = (api_version or rt.api_version).rsplit("/", 1)[-1]
    return f"{kind} in version {go_quote(version)} cannot be handled as a {rt.kind}"


def _check_kind(rt: ResourceType, doc: Mapping[str, Any]) -> None:
    kind = doc.get("kind")
    api_version = doc.get("apiVersion")
    if rt.custom or not isinstance(kind, str) or not kind or kind == rt.kind:
        return
    group, _, version = str(api_version or rt.api_version).rpartition("/")
    if definition_for(group, version, kind) is None:
        return
    raise KubeSimApiError.bad_request(
        f"{_handled_as(rt, doc)}: converting ({version}.{kind}) to "
        f"({_internal_package(rt.group)}.{rt.kind}): unknown conversion"
    )


def _strict_outcome(
    rt: ResourceType, doc: Mapping[str, Any], findings: list[str], directive: str, prefix: bool
) -> list[str]:
    """Apply ``directive`` to strict-decoding ``findings``: warnings to send, or 400."""
    if not findings or directive == "Ignore":
        return []
    if directive == "Strict":
        text = "strict decoding error: " + ", ".join(findings)
        raise KubeSimApiError.bad_request(f"{_handled_as(rt, doc)}: {text}" if prefix else text)
    return findings


def _decode(
    rt: ResourceType, doc: dict[str, Any], duplicates: Mapping[int, list[str]]
) -> tuple[dict[str, Any], list[str]]:
    """The decoded object and the strict findings (raises GoDecodeError)."""
    decoder = _Decoder(duplicates)
    if rt.custom:
        obj = dict(doc)
        findings = [f"duplicate field {go_quote(k)}" for k in duplicates.get(id(doc), ())]
        meta = obj.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise GoDecodeError(
                f".metadata accessor error: {_go_print(meta)} is of the type "
                f"{_go_dynamic_type(meta)}, expected map[string]interface {{}}"
            )
        if isinstance(meta, dict):
            meta_schema = _definitions()[_META + "ObjectMeta"]
            obj["metadata"] = decoder.typed(
                meta, meta_schema, "v1.ObjectMeta", rt.kind, ("metadata",), "metadata"
            )
            findings += decoder.strict
        schema = (rt.crd_version or {}).get("schema", {}).get("openAPIV3Schema")
        if isinstance(schema, Mapping):
            findings += [f"unknown field {go_quote(p)}" for p in prune(obj, schema)]
            apply_defaults(obj, schema)
        return obj, findings
    name = definition_for(rt.group, rt.version, rt.kind)
    if name is None:
        return doc, []
    root = decoder.typed(doc, _definitions()[name], _go_type_of_ref(name), rt.kind, (), "")
    return root, decoder.strict


def decode_body(rt: ResourceType, body: Body, directive: str) -> Decoded:
    """A create/update body for ``rt``: kind check, Go decoding (400 on a type error),
    then ``directive`` on unknown and duplicate fields (400 for Strict)."""
    doc = body.doc
    if not isinstance(doc, dict):
        raise KubeSimApiError.bad_request(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{_json_kind(doc)} into Go value of type struct"
        )
    _check_kind(rt, doc)
    with deep_recursion(body.depth):
        try:
            obj, findings = _decode(rt, doc, body.duplicates)
        except GoDecodeError as exc:
            raise KubeSimApiError.bad_request(f"{_handled_as(rt, doc)}: {exc}") from None
    findings = body.yaml_errors + findings
    warnings = _strict_outcome(rt, doc, findings, directive, prefix=True)
    return Decoded(obj, warnings, body.depth)


def decode_patched(rt: ResourceType, obj: dict[str, Any], ctx: WriteContext) -> dict[str, Any]:
    """A patched object decoded as the patch handler decodes it, by ``ctx``'s directive
    (its findings join ``ctx.warnings``)."""
    try:
        decoded, findings = _decode(rt, obj, {})
    except GoDecodeError as exc:
        text = deepjson.dumps(obj).decode()
        detail = f"Invalid value: {go_quote(text)}: {exc}"
        message = f' "" is invalid: patch: {detail}'
        cause = {"reason": "FieldValueInvalid", "message": detail, "field": "patch"}
        raise KubeSimApiError(
            422, status_body(422, message, "Invalid", {"causes": [cause]})
        ) from None
    ctx.warnings += _strict_outcome(rt, obj, findings, ctx.directive, prefix=False)
    return decoded

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

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubesim.apiextensions.schema import apply_defaults, prune
from kubesim.encoding import deepjson
from kubesim.encoding.gofmt import go_quote, json_kind
from kubesim.errors import GoDecodeError, KubeSimApiError, status_body
from kubesim.machinery.godecode import (
    META,
    GoDecoder,
    definition_for,
    definitions,
    go_dynamic_type,
    go_print,
    go_type_of_ref,
)
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
    decoder = GoDecoder(duplicates)
    if rt.custom:
        obj = dict(doc)
        findings = [f"duplicate field {go_quote(k)}" for k in duplicates.get(id(doc), ())]
        meta = obj.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise GoDecodeError(
                f".metadata accessor error: {go_print(meta)} is of the type "
                f"{go_dynamic_type(meta)}, expected map[string]interface {{}}"
            )
        if isinstance(meta, dict):
            meta_schema = definitions()[META + "ObjectMeta"]
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
    root = decoder.typed(doc, definitions()[name], go_type_of_ref(name), rt.kind, (), "")
    return root, decoder.strict


def decode_body(rt: ResourceType, body: Body, directive: str) -> Decoded:
    """A create/update body for ``rt``: kind check, Go decoding (400 on a type error),
    then ``directive`` on unknown and duplicate fields (400 for Strict)."""
    doc = body.doc
    if not isinstance(doc, dict):
        raise KubeSimApiError.bad_request(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{json_kind(doc)} into Go value of type struct"
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

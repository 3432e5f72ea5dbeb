"""What a request asks for: its route (type, namespace, name, subresource), verb, field
manager, body and DeleteOptions, read as kube-apiserver's handlers read them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesim.encoding import deepjson, json_decode
from kubesim.encoding.protobuf import PROTOBUF, protobuf_body
from kubesim.errors import DeepJsonError, KubeSimApiError, status_body
from kubesim.registry.deletion import DeleteOptions, read_delete_options
from kubesim.registry.resource import ResourceType
from kubesim.registry.types import ResourceRegistry
from kubesim.server import bodies
from kubesim.server.bodies import Body

__all__ = [
    "Route",
    "check_kind",
    "check_subresource",
    "delete_options",
    "json_body",
    "manager_of",
    "parse_resource_path",
    "request_body",
    "unsupported_media_type",
    "verb_of",
]


@dataclass
class Route:
    """A resource request's target: the type, the namespace, the name and the subresource
    (None: not in the path)."""

    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def verb_of(method: str, has_name: bool, watch: bool) -> str:
    """The verb a request is authorized and served as."""
    if method == "GET":
        return "get" if has_name else ("watch" if watch else "list")
    return {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if has_name else "deletecollection",
    }.get(method, method.lower())


def parse_resource_path(path: str, registry: ResourceRegistry) -> Route | None:
    """The resource a path names (None: not a resource path, e.g. discovery); 404 for a
    path under ``/api`` or ``/apis`` that names no served resource."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    lookup = registry.lookup
    if len(rest) >= 3 and rest[0] == "namespaces":
        rt = lookup(group, version, rest[2])
        if rt is not None and rt.namespaced:
            if len(rest) > 5:
                raise KubeSimApiError.page_not_found()
            return Route(
                rt,
                rest[1],
                rest[3] if len(rest) > 3 else None,
                rest[4] if len(rest) > 4 else None,
            )
    rt = lookup(group, version, rest[0])
    if rt is None or len(rest) > 3:
        raise KubeSimApiError.page_not_found()
    name = rest[1] if len(rest) > 1 else None
    if rt.namespaced and name is not None:
        raise KubeSimApiError.page_not_found()
    return Route(rt, None, name, rest[2] if len(rest) > 2 else None)


def check_kind(rt: ResourceType, body: Mapping[str, Any]) -> None:
    """400 when a body names another kind or apiVersion than the endpoint's."""
    kind, api_version = body.get("kind"), body.get("apiVersion")
    if kind and kind != rt.kind:
        raise KubeSimApiError.bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): "
            f"kind {kind} does not match the expected kind {rt.kind}"
        )
    if api_version and api_version != rt.api_version:
        raise KubeSimApiError.bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({rt.api_version})"
        )


def manager_of(request: web.Request) -> str:
    """The field manager of a write: ``fieldManager``, else the User-Agent's product."""
    fm = request.query.get("fieldManager")
    if fm:
        return fm
    ua = request.headers.get("User-Agent", "")
    return ua.split("/", 1)[0] or "unknown"


async def request_body(request: web.Request, rt: ResourceType) -> Body:
    """A create or update body: at most 3 MiB, JSON, YAML or (for the kinds
    :mod:`kubesim.encoding.protobuf` decodes) protobuf; 415 otherwise. Parsed."""
    raw = await bodies.read(request)
    ctype = request.headers.get("Content-Type", "application/json").split(";", 1)[0]
    ctype = ctype.strip().lower()
    if ctype == PROTOBUF:
        return Body(protobuf_body(raw), raw)
    if ctype not in ("application/json", "application/yaml", ""):
        raise unsupported_media_type()
    return bodies.parse(raw, ctype, rt.kind)


def unsupported_media_type() -> KubeSimApiError:
    """415 for a create or update body of a media type the server does not decode."""
    return KubeSimApiError(
        415,
        status_body(
            415,
            "the body of the request was in an unknown format - accepted media types "
            "include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            "UnsupportedMediaType",
        ),
    )


async def json_body(request: web.Request, allow_list: bool = False) -> Any:
    """A JSON (or YAML, or protobuf) body that is not a kind's object (a patch, a
    Binding, a Scale, a review): an object, or with ``allow_list`` a list too; else 400."""
    raw = await bodies.read(request)
    ctype = request.headers.get("Content-Type", "application/json").split(";", 1)[0].strip()
    if request.method != "PATCH" and ctype == PROTOBUF:
        return protobuf_body(raw)
    if request.method != "PATCH" and ctype not in ("application/json", ""):
        if ctype == "application/yaml":
            try:
                import yaml

                return yaml.safe_load(raw)
            except Exception as exc:
                raise KubeSimApiError.bad_request(f"yaml: {exc}") from None
        raise unsupported_media_type()
    try:
        try:
            data = deepjson.loads(raw)
        except orjson.JSONDecodeError:
            data = json_decode.loads(raw)  # invalid UTF-8 becomes U+FFFD, as Go decodes it
    except (ValueError, DeepJsonError) as exc:
        raise KubeSimApiError.bad_request(
            f"couldn't get version/kind; json parse error: {exc}"
        ) from None
    if isinstance(data, dict) or (allow_list and isinstance(data, list)):
        return data
    raise KubeSimApiError.bad_request(
        "couldn't get version/kind; json parse error: json: cannot unmarshal "
        f"{type(data).__name__} into Go value of type struct"
    )


async def delete_options(request: web.Request) -> DeleteOptions:
    """A DELETE's options, from its body or its query."""
    body = await bodies.read(request) if request.can_read_body else b""
    return read_delete_options(request.query, body, request.query.getall("dryRun", []))


def check_subresource(route: Route, verb: str) -> None:
    """404 for a subresource the type does not serve (for a custom resource the registry's
    ``<plural>.<group> "<name>" not found``), 405 for a verb it does not take."""
    rt = route.rt
    sub = next((s for s in rt.subresources if s.name == route.subresource), None)
    if sub is None:
        if rt.custom:
            raise KubeSimApiError.not_found(rt.plural, rt.group, route.name or "")
        raise KubeSimApiError.page_not_found()
    if verb not in sub.verbs:
        raise KubeSimApiError.method_not_allowed()

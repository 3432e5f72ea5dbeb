"""Answers as kube-apiserver v1.28 writes them: JSON (the document and a newline), YAML,
protobuf, a ``Status`` for an error, and a connection cut short."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import yaml
from aiohttp import web

from kubesim.encoding.protobuf import PROTOBUF
from kubesim.encoding.protoencode import encode_object
from kubesim.errors import KubeSimApiError
from kubesim.server.negotiation import JSON, Media

__all__ = ["abort", "error_response", "json_response", "response", "yaml_response"]


def json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A JSON body as the apiserver's encoder writes it: the document and a newline."""
    body = (data if isinstance(data, bytes) else orjson.dumps(data)) + b"\n"
    hdrs = {"Cache-Control": "no-cache, private"}
    if headers:
        hdrs.update(headers)
    return web.Response(body=body, status=status, content_type="application/json", headers=hdrs)


def response(doc: Any, status: int = 200, media: Media = JSON) -> web.Response:
    """``doc`` (a JSON document, or its bytes) as JSON, or as protobuf for a protobuf
    ``media``."""
    if not media.protobuf:
        return json_response(doc, status)
    obj = orjson.loads(doc) if isinstance(doc, bytes) else doc
    return web.Response(
        body=encode_object(obj),
        status=status,
        content_type=PROTOBUF,
        headers={"Cache-Control": "no-cache, private"},
    )


def error_response(err: KubeSimApiError, protobuf: bool = False) -> web.Response:
    if protobuf:
        resp = response(err.body, err.code, Media(encoding="protobuf"))
        resp.headers.update(err.headers)
    else:
        resp = json_response(err.body, err.code, err.headers)
    if err.headers.get("Connection") == "close":
        resp.force_close()  # as announced (413: the rest of the body is never read)
    return resp


def yaml_response(doc: Any, status: int) -> web.Response:

    text = yaml.safe_dump(doc, sort_keys=True, default_flow_style=False)
    return web.Response(  # bytes: no charset parameter, as kube-apiserver sends (25e, 16f)
        body=text.encode(),
        status=status,
        content_type="application/yaml",
        headers={"Cache-Control": "no-cache, private"},
    )


def abort(request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
    if request.transport is not None:
        request.transport.close()
    return resp

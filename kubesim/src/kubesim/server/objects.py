"""One stored object as an answer, in the negotiated media: the typed JSON view, a
``PartialObjectMetadata`` (``as=PartialObjectMetadata``), a one-row Table (``as=Table``),
YAML or protobuf."""

from __future__ import annotations

from collections.abc import Mapping

import orjson
from aiohttp import web

from kubesim.registry.objects import view_json
from kubesim.registry.resource import ResourceType
from kubesim.registry.store import Api
from kubesim.server.negotiation import Media
from kubesim.server.responses import json_response, response, yaml_response
from kubesim.server.tables import TableMaker, include_object
from kubesim.storage.mvcc import Stored

__all__ = ["object_bytes", "object_response"]


def object_bytes(rt: ResourceType, obj: Stored, media: Media) -> bytes:
    """``obj`` as JSON bytes: its metadata alone for a partial-metadata ``media``, else the
    typed view (fields in the Go struct's order)."""
    if media.partial:
        meta = orjson.loads(obj.raw)["metadata"]
        return orjson.dumps(
            {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
        )
    return view_json(rt, obj, typed=True)


def object_response(
    api: Api,
    rt: ResourceType,
    obj: Stored,
    media: Media,
    status: int = 200,
    query: Mapping[str, str] | None = None,
) -> web.Response:
    """The answer carrying ``obj`` with ``status``; ``query`` holds a Table request's
    ``includeObject``."""
    if media.table:
        maker = TableMaker(rt, media.table, include_object(query or {}))
        meta = {"resourceVersion": str(obj.rv)}
        return json_response(maker.table([api.view(rt, obj)], meta), status)
    data = object_bytes(rt, obj, media)
    if media.encoding == "yaml":
        return yaml_response(orjson.loads(data), status)
    return response(data, status, media)

"""A list request: its selectors and options checked as kube-apiserver v1.28 checks them,
the page it reads, and the answer streamed in chunks.

With the ShardedListAndWatch gate on, ``shardSelector`` keeps the objects in its hash ranges
(:mod:`kubesim.machinery.shards`) and JSON, YAML and protobuf lists echo it in
``metadata.shardInfo``; a Table or a PartialObjectMetadataList is filtered but carries no
shardInfo, nor does a custom resources' list (v1.36: those copy only resourceVersion,
continue and remainingItemCount, and UnstructuredList has no shardInfo). With the gate off
the parameter is ignored, as any unknown query parameter is.

A ``resourceVersion`` newer than the store's is waited for up to ``too_large_rv_wait``
seconds, then answered 504 "Too large resource version" (recorded). A JSON list streams in
chunks of about 1 MiB; a fault cut (:meth:`kubesim.server.faults.Faults.take_cut`) ends the
connection halfway through the body.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from kubesim.errors import KubeSimApiError, RvTooLarge, SelectorError
from kubesim.machinery.fields import FieldSelector
from kubesim.machinery.labels import LabelSelector
from kubesim.machinery.shards import ShardSelector
from kubesim.registry.listing import ListResult
from kubesim.registry.objects import parse_rv, view_json
from kubesim.registry.resource import ResourceType
from kubesim.registry.store import Api
from kubesim.server.faults import Faults
from kubesim.server.negotiation import Media
from kubesim.server.objects import object_bytes
from kubesim.server.responses import abort, json_response, response, yaml_response
from kubesim.server.tables import TableMaker, include_object

__all__ = ["list_response", "read_page", "selectors", "shard_selector"]

_LIST_CHUNK = 1 << 20


def selectors(
    rt: ResourceType, q: Mapping[str, str]
) -> tuple[LabelSelector | None, FieldSelector | None]:
    """The ``labelSelector`` and ``fieldSelector`` of query ``q`` (the field selector as
    ``rt``'s strategy accepts it); a malformed one is a 400."""
    try:
        lsel = LabelSelector.parse(q["labelSelector"]) if q.get("labelSelector") else None
        fsel = FieldSelector.parse(q["fieldSelector"]) if q.get("fieldSelector") else None
        if fsel is not None:
            fsel = rt.strategy.field_selector(rt, fsel)
    except SelectorError as exc:
        raise KubeSimApiError.bad_request(str(exc)) from None
    return lsel, fsel


def shard_selector(q: Mapping[str, str], enabled: bool) -> ShardSelector | None:
    """The ``shardSelector`` of query ``q`` when the ShardedListAndWatch gate is
    ``enabled`` (else, or when empty, None); one that does not parse is a 400 BadRequest
    "invalid shard selector: ..." (what the issue of this row and the KEP ask for: a
    client must not retry it; k8s.io/apiserver v0.36.0's store answers 500, see
    docs/kubesim.md)."""
    text = q.get("shardSelector", "")
    if not enabled or not text:
        return None
    try:
        return ShardSelector.parse(text)
    except SelectorError as exc:
        raise KubeSimApiError.bad_request(f"invalid shard selector: {exc}") from None


async def read_page(
    api: Api,
    rt: ResourceType,
    namespace: str | None,
    q: Mapping[str, str],
    *,
    too_large_rv_wait: float,
    sharding: bool = False,
) -> ListResult:
    """The page of ``rt`` in ``namespace`` that list query ``q`` asks for (``sharding``:
    the ShardedListAndWatch gate)."""
    rv = q.get("resourceVersion", "")
    match = q.get("resourceVersionMatch", "")
    if match and not rv:
        raise KubeSimApiError.invalid_list_options(
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        )
    if rv:
        parse_rv(rv)
    if match and match not in ("Exact", "NotOlderThan"):
        raise KubeSimApiError.invalid_list_options(
            "resourceVersionMatch",
            f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"',
        )
    lsel, fsel = selectors(rt, q)
    shards = shard_selector(q, sharding)
    try:
        limit = int(q.get("limit", "0") or 0)
    except ValueError:
        raise KubeSimApiError.bad_request(f"invalid limit: {q.get('limit')}") from None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + too_large_rv_wait
    while True:
        try:
            return api.list(
                rt,
                namespace,
                label_selector=lsel,
                field_selector=fsel,
                shard_selector=shards,
                resource_version=rv,
                match=match,
                limit=limit,
                continue_token=q.get("continue", ""),
            )
        except RvTooLarge as exc:
            if loop.time() >= deadline:
                raise KubeSimApiError.too_large_rv(exc.requested, api.mvcc.rv) from None
            await asyncio.sleep(0.05)


async def list_response(
    request: web.Request,
    api: Api,
    rt: ResourceType,
    page: ListResult,
    media: Media,
    faults: Faults,
) -> web.StreamResponse:
    """``page`` as the list document of ``rt`` in ``media`` (JSON streamed in chunks)."""
    meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
    if page.continue_token is not None:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    if page.shard_info is not None and not (media.partial or media.table or rt.custom):
        meta["shardInfo"] = {"selector": page.shard_info}
    if media.partial:
        head = b'{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":'
        head += orjson.dumps(meta) + b',"items":['
        tail = b"]}\n"
    elif media.table:
        maker = TableMaker(rt, media.table, include_object(request.query))
        return json_response(maker.table([api.view(rt, o) for o in page.items], meta))
    elif rt.custom:
        meta.setdefault("continue", "")
        head = b'{"apiVersion":"' + rt.api_version.encode() + b'","items":['
        tail = (
            b'],"kind":"'
            + rt.list_kind.encode()
            + b'","metadata":'
            + orjson.dumps(
                {
                    "continue": meta["continue"],
                    **{k: v for k, v in meta.items() if k != "continue"},
                },
                option=orjson.OPT_SORT_KEYS,
            )
            + b"}\n"
        )
    else:
        head = (
            b'{"kind":"'
            + rt.list_kind.encode()
            + b'","apiVersion":"'
            + rt.api_version.encode()
            + b'","metadata":'
            + orjson.dumps(meta)
            + b',"items":['
        )
        tail = b"]}\n"
    if media.encoding != "json":
        items = [object_bytes(rt, o, media) for o in page.items]
        doc = orjson.loads(head + b",".join(items) + tail)
        return yaml_response(doc, 200) if media.encoding == "yaml" else response(doc, 200, media)
    if media.partial:
        raws = [object_bytes(rt, o, media) for o in page.items]
    else:
        raws = [view_json(rt, o, typed=False) for o in page.items]
    resp = web.StreamResponse(
        status=200,
        headers={"Content-Type": "application/json", "Cache-Control": "no-cache, private"},
    )
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    cut = faults.take_cut(request.path)
    buf = bytearray(head)
    for i, raw in enumerate(raws):
        if i:
            buf += b","
        buf += raw
        if len(buf) >= _LIST_CHUNK:
            if cut:
                await resp.write(bytes(buf[: len(buf) // 2]))
                return abort(request, resp)
            await resp.write(bytes(buf))
            buf.clear()
    buf += tail
    if cut:
        await resp.write(bytes(buf[: max(1, len(buf) // 2)]))
        return abort(request, resp)
    await resp.write(bytes(buf))
    await resp.write_eof()
    return resp

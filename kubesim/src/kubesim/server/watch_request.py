"""What a watch request asks for: its options checked as kube-apiserver v1.28 checks them
(``sendInitialEvents`` needs the WatchList gate and ``resourceVersionMatch=NotOlderThan``;
``resourceVersionMatch`` needs ``sendInitialEvents``), turned into the
:class:`kubesim.server.watch.WatchSpec` the stream serves.

The mode: ``initial`` (the current objects as ADDED, then a bookmark; the WatchList gate with
no resourceVersion also means it), ``etcd`` (no resourceVersion: changes from now, no
bookmarks), ``rv0`` (the current objects, then changes) or ``from_rv`` (changes after that
resourceVersion, or 410 Expired). An ``initial`` watch from a resourceVersion the store has not
reached waits up to ``too_large_rv_wait`` seconds, then answers 504.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from kubesim.errors import KubeSimApiError
from kubesim.registry.objects import parse_rv
from kubesim.registry.resource import ResourceType
from kubesim.registry.store import Api
from kubesim.server.limits import watch_timeout
from kubesim.server.lists import selectors, shard_selector
from kubesim.server.negotiation import Media
from kubesim.server.tables import TableMaker, include_object
from kubesim.server.watch import WatchSpec
from kubesim.storage.mvcc import TypeStore

__all__ = ["watch_spec"]

_TRUE = ("true", "1", "True")


async def watch_spec(
    api: Api,
    rt: ResourceType,
    namespace: str | None,
    q: Mapping[str, str],
    media: Media,
    *,
    watch_list: bool,
    too_large_rv_wait: float,
    sharding: bool = False,
) -> tuple[WatchSpec, TypeStore]:
    """The watch of ``rt`` in ``namespace`` that query ``q`` asks for, and the store it
    reads (``sharding``: the ShardedListAndWatch gate, under which ``shardSelector``
    filters every event but bookmarks)."""
    rv = q.get("resourceVersion", "")
    match = q.get("resourceVersionMatch", "")
    send_initial = q.get("sendInitialEvents")
    start_rv = parse_rv(rv) if rv else 0
    if send_initial is not None and not watch_list:
        raise KubeSimApiError.invalid_list_options(
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList "
            "feature gate is enabled",
        )
    if match and send_initial is None:
        raise KubeSimApiError.invalid_list_options(
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents "
            "is provided",
        )
    initial = send_initial in _TRUE
    if send_initial is not None and initial and match != "NotOlderThan":
        raise KubeSimApiError.invalid_list_options(
            "resourceVersionMatch",
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        )
    lsel, fsel = selectors(rt, q)
    shards = shard_selector(q, sharding)
    timeout: float | None = None
    if q.get("timeoutSeconds"):
        timeout = watch_timeout(q["timeoutSeconds"])
    if initial or (watch_list and rv in ("", "0") and send_initial is None):
        mode = "initial"
    elif rv == "":
        mode = "etcd"
    elif rv == "0":
        mode = "rv0"
    else:
        mode = "from_rv"
    ts, _ = api.watch_start(rt)
    mvcc = api.mvcc
    if mode == "initial" and rv not in ("", "0"):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + too_large_rv_wait
        while mvcc.rv < start_rv:
            if loop.time() >= deadline:
                raise KubeSimApiError.too_large_rv(start_rv, mvcc.rv)
            await asyncio.sleep(0.05)
    spec = WatchSpec(
        rt=rt,
        namespace=namespace,
        label_selector=lsel if lsel is not None and not lsel.empty else None,
        field_selector=fsel if fsel is not None and not fsel.empty else None,
        shard_selector=shards,
        mode=mode,
        start_rv=start_rv if mode == "from_rv" else mvcc.rv if mode == "initial" else 0,
        bookmarks=q.get("allowWatchBookmarks") in _TRUE,
        timeout=timeout,
        metadata_only=media.partial,
        list_media_type=media.view == "partial-list",
        protobuf=media.protobuf,
        encode=(
            TableMaker(rt, media.table, include_object(q)).watch_encoder() if media.table else None
        ),
    )
    return spec, ts

"""One watch connection of KubeSim: how events, bookmarks and errors reach the client.

Wire behaviour (recorded from kube-apiserver v1.28, ``tests/kubesim/conformance`` 05d-10c, 16b):
HTTP 200 with ``Content-Type: application/json`` and chunked encoding, headers at once;
each event is one chunk of ``JSON + "\\n"`` (as protobuf, 28a: ``Content-Type:
application/vnd.kubernetes.protobuf;stream=watch``, each event a length-prefixed frame, the
initial events in one chunk); at ``timeoutSeconds`` the stream ends with the
terminating zero-length chunk and nothing else. A too-old resourceVersion is HTTP 200 plus
exactly one ERROR event (Status 410 Expired), then EOF. An object leaving the selector is
DELETED with its old content and the new RV; entering is ADDED. A shard selector (v1.36,
ShardedListAndWatch) filters the initial events and the changes alike; it hashes a uid or a
namespace, which never change, so it never turns an event into ADDED or DELETED; watch
events carry no shardInfo. Bookmarks carry only the
RV, are sent about 2 s before the deadline and every ``bookmark_interval`` seconds, only
when the RV moved past what the watcher has, and never on an etcd-served watch (RV unset
with the WatchList gate off). Deadlines, bookmarks and event delays are timed on the store's
clock (:attr:`kubesim.storage.mvcc.Mvcc.clock`), the one events are stamped with.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesim.encoding.protobuf import PROTOBUF_WATCH
from kubesim.encoding.protoencode import encode_object, watch_frame
from kubesim.machinery.fields import FieldSelector
from kubesim.machinery.labels import LabelSelector
from kubesim.machinery.shards import ShardSelector
from kubesim.registry.objects import view_json
from kubesim.registry.resource import ResourceType
from kubesim.server.faults import Faults
from kubesim.storage.mvcc import (
    ADDED,
    DELETED,
    MODIFIED,
    Event,
    Mvcc,
    Stored,
    TypeStore,
)

__all__ = ["WatchSpec", "serve_watch"]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_PARTIAL = b'{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":'


@dataclass
class WatchSpec:
    """A parsed, validated watch request."""

    rt: ResourceType
    namespace: str | None
    label_selector: LabelSelector | None
    field_selector: FieldSelector | None
    shard_selector: ShardSelector | None
    mode: str  # "etcd" (RV unset), "rv0", "initial" (sendInitialEvents), "from_rv"
    start_rv: int
    bookmarks: bool
    timeout: float | None
    metadata_only: bool = False
    list_media_type: bool = False  # as=PartialObjectMetadataList: closes at the first event
    protobuf: bool = False  # events as length-prefixed protobuf frames
    #: the event object's JSON from the stored object (a Table watch); None: the object
    encode: Callable[[dict[str, Any]], dict[str, Any]] | None = None


class _Stream:
    def __init__(
        self,
        request: web.Request,
        resp: web.StreamResponse,
        spec: WatchSpec,
        mvcc: Mvcc,
        faults: Faults,
        bookmark_interval: float,
    ) -> None:
        self.request = request
        self.resp = resp
        self.spec = spec
        self.mvcc = mvcc
        self.faults = faults
        self.bookmark_interval = bookmark_interval
        rt = spec.rt
        self.prefix = (
            b""
            if rt.custom
            else b'{"kind":"'
            + rt.kind.encode()
            + b'","apiVersion":"'
            + rt.api_version.encode()
            + b'",'
        )
        self.converts = rt.strategy.converts(rt)  # stored in another form, converted
        self.drop_generation = faults.drop_generation
        self.line_generation = faults.line_generation
        self.start_rv = spec.start_rv  # bookmarks only once the RV has moved past it
        self.last_rv = spec.start_rv
        self.path = request.path
        self.dropped = False

    # -- encoding ---------------------------------------------------------------------------

    def object_bytes(self, obj: Stored) -> bytes:
        if self.spec.encode is not None:
            rt = self.spec.rt
            return orjson.dumps(self.spec.encode(rt.strategy.to_view(rt, obj.decode())))
        if self.spec.metadata_only:
            meta = orjson.loads(obj.raw)["metadata"]
            return _PARTIAL + orjson.dumps(meta) + b"}"
        if self.converts:
            return view_json(self.spec.rt, obj, typed=True)
        if self.prefix:
            return self.prefix + obj.raw[1:]
        return obj.raw

    def event_line(self, type_: str, obj: Stored) -> bytes:
        if self.spec.protobuf:
            return watch_frame(type_, encode_object(orjson.loads(self.object_bytes(obj))))
        return b'{"type":"' + type_.encode() + b'","object":' + self.object_bytes(obj) + b"}\n"

    def bookmark_line(self, rv: int, initial_end: bool = False) -> bytes:
        rt = self.spec.rt
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if not rt.custom or self.spec.metadata_only:
            meta["creationTimestamp"] = None
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj: dict[str, Any]
        if self.spec.metadata_only:
            obj = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta,
            }
        elif rt.custom:
            obj = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": meta}
        else:
            obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
            obj |= rt.strategy.bookmark_fields()
        return event_bytes("BOOKMARK", obj, self.spec.protobuf)

    # -- filtering --------------------------------------------------------------------------

    def matches(self, obj: Stored) -> bool:
        spec = self.spec
        if spec.shard_selector is not None and not spec.shard_selector.matches(
            obj.uid, obj.namespace
        ):
            return False
        if spec.label_selector is not None and not spec.label_selector.matches(obj.labels):
            return False
        return spec.field_selector is None or spec.field_selector.matches(obj.fields)

    def classify(self, ev: Event) -> tuple[str, Stored] | None:
        """What this watcher sees of ``ev`` (None: nothing)."""
        spec = self.spec
        if spec.namespace and ev.obj.namespace != spec.namespace:
            return None
        if spec.shard_selector is not None and not spec.shard_selector.matches(
            ev.obj.uid, ev.obj.namespace
        ):
            return None  # uid and namespace never change: the previous state is outside too
        if spec.label_selector is None and spec.field_selector is None:
            return ev.type, ev.obj
        if ev.type == DELETED:
            return (DELETED, ev.obj) if self.matches(ev.obj) else None
        new_ok = self.matches(ev.obj)
        old_ok = ev.prev is not None and self.matches(ev.prev)
        if new_ok:
            return (MODIFIED if old_ok else ADDED), ev.obj
        if old_ok:
            return DELETED, ev.left_selector()
        return None

    # -- writing ----------------------------------------------------------------------------

    async def send(self, line: bytes) -> bool:
        """Write one chunk, honouring cut and list-media faults; False: the stream ended."""
        if self.spec.list_media_type:
            self._abort()
            return False
        if self.faults.take_cut(self.path):
            await self.resp.write(line[: max(1, len(line) // 2)])
            self._abort()
            return False
        await self.resp.write(line)
        return True

    def _abort(self) -> None:
        self.dropped = True
        transport = self.request.transport
        if transport is not None:
            transport.close()

    async def send_injected(self) -> bool:
        self.line_generation, lines = self.faults.lines_since(self.line_generation, self.path)
        for data in lines:
            await self.resp.write(data)
        return True

    # -- the loop ---------------------------------------------------------------------------

    async def run(self, ts: TypeStore, seq: int, initial: list[Stored] | None) -> None:
        spec = self.spec
        now = self.mvcc.clock()
        timeout = spec.timeout if spec.timeout is not None else random.uniform(1800, 3600)
        deadline = now + timeout
        bookmarks = spec.bookmarks and spec.mode != "etcd"
        next_periodic = now + self.bookmark_interval
        pre_deadline = deadline - 2.0 if spec.timeout is not None else float("inf")
        if initial is not None:
            self.start_rv = self.last_rv = self.mvcc.rv
            batch = bytearray()  # protobuf: the initial state's frames in one write
            for obj in initial:
                if (spec.namespace and obj.namespace != spec.namespace) or not self.matches(obj):
                    continue
                if spec.protobuf:
                    batch += self.event_line(ADDED, obj)
                elif not await self.send(self.event_line(ADDED, obj)):
                    return
            if batch and not await self.send(bytes(batch)):
                return
            if spec.mode == "initial" and spec.bookmarks:
                if not await self.send(self.bookmark_line(self.last_rv, initial_end=True)):
                    return
        while True:
            if self.faults.dropped_since(self.drop_generation, self.path):
                self._abort()
                return
            self.drop_generation = self.faults.drop_generation
            if self.faults.stall_remaining() > 0:
                await self._wait(ts, min(self.faults.stall_remaining(), 1.0))
                continue
            if not await self.send_injected():
                return
            events = ts.events_since(seq)
            if events is None:  # fell out of the watch cache: the server ends the watch
                return
            # a CRD deleted: its objects' DELETED events go out first, then the watch ends
            gone = self.mvcc.types.get(ts.name) is not ts
            pending: Event | None = None
            delay = self.faults.watch_delay
            for ev in events:
                if delay and ev.t + delay > self.mvcc.clock():
                    pending = ev
                    break
                seq += 1
                seen = self.classify(ev)
                if seen is None:
                    continue
                if not await self.send(self.event_line(*seen)):
                    return
                self.last_rv = ev.rv
            if gone:
                return
            now = self.mvcc.clock()
            if now >= deadline:
                return
            if bookmarks and (now >= pre_deadline or now >= next_periodic):
                bm_rv = self.mvcc.rv if pending is None else pending.rv - 1
                if bm_rv > self.start_rv and bm_rv >= self.last_rv:
                    if not await self.send(self.bookmark_line(bm_rv)):
                        return
                    self.last_rv = bm_rv
                if now >= pre_deadline:
                    pre_deadline = float("inf")
                next_periodic = now + self.bookmark_interval
            wake_at = min(deadline, next_periodic if bookmarks else deadline)
            if bookmarks:
                wake_at = min(wake_at, pre_deadline)
            if pending is not None:
                wake_at = min(wake_at, pending.t + delay)
            elif ts.next_seq > seq:  # committed while a write waited for the client: no wait
                continue
            await self._wait(ts, max(0.0, wake_at - now))

    async def _wait(self, ts: TypeStore, timeout: float) -> None:
        fut = ts.changed()
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            pass
        finally:
            if not fut.done():
                fut.cancel()


async def serve_watch(
    request: web.Request,
    spec: WatchSpec,
    ts: TypeStore,
    mvcc: Mvcc,
    faults: Faults,
    *,
    bookmark_interval: float = 60.0,
) -> web.StreamResponse:
    """Serve one watch request until its timeout, a fault, or the client going away. The
    faults requested once the response headers are sent (drops, stalls, injected lines)
    apply to it."""
    resp = web.StreamResponse(
        status=200,
        headers={
            "Content-Type": PROTOBUF_WATCH if spec.protobuf else "application/json",
            "Cache-Control": "no-cache, private",
        },
    )
    resp.enable_chunked_encoding()
    # the watch takes the faults in force now, before its headers go out: a client that has
    # the headers knows that a drop or an injected line from now on reaches this watch
    stream = _Stream(request, resp, spec, mvcc, faults, bookmark_interval)
    await resp.prepare(request)
    initial: list[Stored] | None = None
    if spec.mode == "from_rv":
        seq = ts.seq_after_rv(spec.start_rv)
        if seq is None:
            oldest = ts.floor_rv
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {spec.start_rv} ({oldest})",
                "reason": "Expired",
                "code": 410,
            }
            await resp.write(event_bytes("ERROR", status, spec.protobuf))
            await resp.write_eof()
            return resp
    else:
        seq = ts.next_seq
        keys = ts.keys
        objects = ts.objects
        lo, hi = ts.key_range(spec.namespace)
        initial = [objects[keys[i]] for i in range(lo, hi)]
        if spec.mode != "etcd":
            random.shuffle(initial)  # served from the cache: in no particular order
    try:
        await stream.run(ts, seq, initial)
    except (ConnectionResetError, ConnectionError):
        stream.dropped = True
    if not stream.dropped:
        try:
            await resp.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass
    return resp


def event_bytes(type_: str, obj: dict[str, Any], protobuf: bool) -> bytes:
    """One watch event of a JSON object: a JSON line, or a protobuf frame."""
    if protobuf:
        return watch_frame(type_, encode_object(obj))
    return orjson.dumps({"type": type_, "object": obj}) + b"\n"

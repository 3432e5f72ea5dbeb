"""A scripted hostile API server for the fuzzer: one resource's true history, and a script
of misbehaviours it serves, one per request, before it behaves.

:class:`Truth` is the resource as a well-behaved server would hold it: its objects, its
resourceVersion and the log of its events (so that a list at any RV, a page of it, and a
watch from any RV can be answered). :class:`ScriptedServer` answers the list and watch
requests of one informer: while its script lasts, each request takes the next
:class:`Step` (changes to the truth, then a :data:`Fault` that decides how the request is
answered); once the script is spent it answers as kube-apiserver does (paged lists,
watches from any RV with bookmarks, streaming lists, 410 below its history, and nothing
at all on a watch from an RV it has not reached: conformance 05d).

It records what it sent: :attr:`ScriptedServer.sent` holds ``(key, rv, uid)`` of every
object it sent as the resource's (a list item or watch event of the right kind, apiVersion,
scope and a valid name), so the fuzzer can check that a cache never holds anything else.
Objects that are not what the informer watches carry a uid starting with ``foreign``.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web

KIND, API_VERSION = "Pod", "v1"
LABELS = {"app": "web"}
END = "k8s.io/initial-events-end"

# -- the true history -------------------------------------------------------------------------


def make_pod(namespace: str, name: str, rv: int, uid: str, **spec: Any) -> dict[str, Any]:
    meta = {
        "name": name,
        "namespace": namespace,
        "uid": uid,
        "resourceVersion": str(rv),
        "labels": dict(LABELS),
    }
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "x"}], **spec}}


def key_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


@dataclass
class Truth:
    """The resource as a well-behaved server holds it (objects without kind/apiVersion):
    the state at ``base`` (``initial``) and the events after it (``log``)."""

    namespaces: tuple[str, ...]
    rv: int = 1000
    base: int = 1000
    initial: dict[str, dict[str, Any]] = field(default_factory=dict)
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    log: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    made: int = 0  # objects made so far (names and uids are never reused)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def start(self, n: int, rv: int) -> None:
        """Begin a history at ``rv`` with ``n`` objects (and no events)."""
        self.objects.clear()
        self.log.clear()
        self.rv = rv
        for _ in range(n):
            self.mutate("add", 0)
        self.log.clear()
        self.base = self.rv
        self.initial = dict(self.objects)
        self._wake()

    def mutate(self, op: str, pick: int) -> tuple[int, str]:
        """Apply one change (``op`` "add", "modify" or "delete" of the ``pick``-th object)
        and return its RV and key."""
        self.rv += 1
        keys = sorted(self.objects)
        if op == "add" or not keys:
            n = self.made = self.made + 1
            ns = self.namespaces[n % len(self.namespaces)]
            obj = make_pod(ns, f"p{n}", self.rv, f"uid-{n}")
            etype = "ADDED"
        else:
            old = self.objects[keys[pick % len(keys)]]
            obj = orjson.loads(orjson.dumps(old))
            obj["metadata"]["resourceVersion"] = str(self.rv)
            etype = "DELETED" if op == "delete" else "MODIFIED"
            if etype == "MODIFIED":
                obj["spec"]["generation"] = self.rv
        key = key_of(obj)
        if etype == "DELETED":
            del self.objects[key]
        else:
            self.objects[key] = obj
        self.log.append((self.rv, etype, obj))
        self._wake()
        return self.rv, key

    def _wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def state_at(self, rv: int) -> dict[str, dict[str, Any]] | None:
        """The objects at ``rv`` (None below the history)."""
        if rv < self.base:
            return None
        state = dict(self.initial)
        for at, etype, obj in self.log:
            if at > rv:
                break
            if etype == "DELETED":
                state.pop(key_of(obj), None)
            else:
                state[key_of(obj)] = obj
        return state

    def versions(self) -> dict[str, int]:
        """key -> resourceVersion of every object now."""
        return {k: int(o["metadata"]["resourceVersion"]) for k, o in self.objects.items()}


# -- the faults -------------------------------------------------------------------------------

Foreign = Literal[
    "kind",
    "api_version",
    "list_kind",
    "slash_name",
    "slash_namespace",
    "dot_name",
    "bad_utf8_body",
    "bad_utf8_name",
    "other_namespace",
    "other_labels",
    "huge",
]


@dataclass(frozen=True)
class Hang:
    """No response headers, ever."""


@dataclass(frozen=True)
class ErrorStatus:
    """An HTTP error: ``code`` with a Status, an HTML page or nothing as its body."""

    code: int
    body: Literal["status", "html", "empty"] = "status"
    retry_after: float | None = None


@dataclass(frozen=True)
class StatusIn2xx:
    """200 whose body is a Status (of ``code``)."""

    code: int


@dataclass(frozen=True)
class Html200:
    """200 with an HTML page (a login page, a proxy)."""


@dataclass(frozen=True)
class Cut:
    """The right answer, cut after ``at`` of its bytes (the connection closed)."""

    at: float


@dataclass(frozen=True)
class Trickle:
    """The right answer, ``piece`` bytes at a time."""

    piece: int


@dataclass(frozen=True)
class Gzip:
    """The right answer, gzip-compressed (``Content-Encoding: gzip``)."""


@dataclass(frozen=True)
class GzipBomb:
    """Gigabytes of spaces compressed to a few MB, after the start of a list."""


@dataclass(frozen=True)
class Endless:
    """A body that never ends: spaces, or valid objects for ever."""

    junk: Literal["spaces", "items"]


@dataclass(frozen=True)
class BadJson:
    """The right answer with garbage inserted after ``at`` of its bytes."""

    at: float


@dataclass(frozen=True)
class Alien:
    """The right answer plus one object that is not what the informer watches (a list
    item, or an ADDED event before the others), its key the same as a real object's when
    ``collide``."""

    what: Foreign
    collide: bool


@dataclass(frozen=True)
class Stale:
    """A list of the state ``back`` changes ago at its (older) RV; on a watch, a bookmark
    that far below the watch's position."""

    back: int


@dataclass(frozen=True)
class Ahead:
    """A list RV, or a watch bookmark, ``by`` beyond the server's RV."""

    by: int


@dataclass(frozen=True)
class Shuffled:
    """A watch's events in reverse order."""


@dataclass(frozen=True)
class ErrorEvent:
    """A watch's events, then an ERROR event of ``code`` (on a list: that HTTP status)."""

    code: int


@dataclass(frozen=True)
class EndEarly:
    """A watch (or streaming list) that ends after half its events, cleanly."""


@dataclass(frozen=True)
class IgnoreInitialEvents:
    """A streaming list answered as a server without WatchList does: every object as
    ADDED and never the end bookmark; the stream kept open, or closed at once."""

    close: bool


@dataclass(frozen=True)
class Reset:
    """The server's history starts again at a lower RV with ``n`` other objects (a
    restored etcd), then the request is answered as usual."""

    n: int


Fault = (
    Hang
    | ErrorStatus
    | StatusIn2xx
    | Html200
    | Cut
    | Trickle
    | Gzip
    | GzipBomb
    | Endless
    | BadJson
    | Alien
    | Stale
    | Ahead
    | Shuffled
    | ErrorEvent
    | EndEarly
    | IgnoreInitialEvents
    | Reset
    | None
)

# faults after which the informer must count a failure (on any request, probes included)
MUST_COUNT_ANY = (Hang, ErrorStatus, StatusIn2xx, Html200, Cut, GzipBomb, Endless, BadJson)


@dataclass(frozen=True)
class Step:
    """What the server does with one request: ``changes`` to the truth ((op, pick) pairs),
    then answer it with ``fault`` (None: as a good server would)."""

    fault: Fault
    changes: tuple[tuple[str, int], ...] = ()


@dataclass
class Served:
    """One request and the step it was answered with."""

    kind: str  # "list", "probe", "watch" or "stream"
    query: dict[str, str]
    at: float
    fault: Fault


# -- the server -------------------------------------------------------------------------------


class ScriptedServer:
    """Answers one informer's lists and watches (see the module docstring). ``scope`` is
    the informer's namespace (None: all), ``label_selector`` its selector (None or
    ``app=web``); ``bookmark_every`` seconds between bookmarks on a behaving watch."""

    def __init__(
        self,
        steps: list[Step],
        *,
        initial: int,
        scope: str | None,
        page_size: int,
        bookmark_every: float = 0.2,
        huge: int = 1 << 20,
    ) -> None:
        self.script = list(steps)
        self.scope = scope
        self.truth = Truth(namespaces=(scope,) if scope else ("a", "b"))
        self.truth.start(initial, 1000)
        self.page_size = page_size
        self.bookmark_every = bookmark_every
        self.huge = huge
        self.sent: set[tuple[str, int, str]] = set()
        self.served: list[Served] = []
        self.loop = asyncio.get_running_loop()
        self.aliens = 0

    @property
    def done(self) -> bool:
        """Whether the script is spent (the server behaves from now on)."""
        return not self.script

    # -- wire bytes --------------------------------------------------------------------------

    def _item(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        self.sent.add((key_of(obj), int(meta["resourceVersion"]), meta["uid"]))
        return obj

    def _event(self, etype: str, obj: dict[str, Any]) -> bytes:
        whole = {"kind": KIND, "apiVersion": API_VERSION, **self._item(obj)}
        return orjson.dumps({"type": etype, "object": whole}) + b"\n"

    def _bookmark(self, rv: int, end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if end:
            meta["annotations"] = {END: "true"}
        obj = {"kind": KIND, "apiVersion": API_VERSION, "metadata": meta}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    def _alien(self, what: Foreign, collide: bool) -> tuple[dict[str, Any], bytes | None]:
        """An object that is not the resource's (or a raw item with bad UTF-8 in it)."""
        self.aliens += 1
        n = self.aliens
        keys = sorted(self.truth.objects)
        ns = self.truth.namespaces[0]
        name = f"alien{n}"
        if collide and keys:
            ns, _, name = keys[n % len(keys)].rpartition("/")
        obj = make_pod(ns, name, self.truth.rv, f"foreign-{what}-{n}")
        obj["kind"], obj["apiVersion"] = KIND, API_VERSION
        meta = obj["metadata"]
        raw: bytes | None = None
        if what == "kind":
            obj["kind"] = "ConfigMap"
            obj["data"] = {"k": "v"}
            del obj["spec"]
        elif what == "api_version":
            obj["apiVersion"] = "example.com/v1"
        elif what == "slash_name":  # "ns/x" + "/" + "y": the key of "ns/x/y" or a real one
            if collide and keys:
                meta["namespace"], meta["name"] = "", f"{ns}/{name}"
            else:
                meta["name"] = f"x/{name}"
        elif what == "slash_namespace":
            meta["namespace"] = f"{ns}/{name}"
            meta["name"] = "x"
        elif what == "dot_name":
            meta["name"] = ".." if n % 2 else "."
        elif what == "other_namespace":
            meta["namespace"] = "elsewhere"
        elif what == "other_labels":
            meta["labels"] = {"app": "db"}
        elif what == "huge":
            meta["annotations"] = {"big": "x" * self.huge}
        elif what == "bad_utf8_body":
            obj["spec"]["note"] = "@@BAD@@"
            raw = orjson.dumps(obj).replace(b"@@BAD@@", b"\xff\xfe")
        elif what == "bad_utf8_name":
            meta["name"] = "@@BAD@@"
            raw = orjson.dumps(obj).replace(b"@@BAD@@", b"b\xffd")
        return obj, raw

    def _alien_relevant(
        self, what: Foreign, scope: str | None, selector: bool, watch: bool = False
    ) -> bool:
        """Whether an alien of this kind is foreign to this informer (an object of another
        namespace is one of its own when it watches all namespaces; a list kind is only a
        list's, and a huge object is refused only as a watch line over the line limit)."""
        if what == "list_kind":
            return not watch
        if what == "huge":
            return watch
        if what == "other_namespace":
            return scope is not None
        if what == "other_labels":
            return selector
        return True

    # -- requests ----------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        watch = query.get("watch") in ("1", "true")
        streaming = watch and query.get("sendInitialEvents") == "true"
        probe = not watch and query.get("limit") == "1" and not query.get("continue")
        kind = "stream" if streaming else "watch" if watch else "probe" if probe else "list"
        step = self.script.pop(0) if self.script else Step(None)
        for op, pick in step.changes:
            self.truth.mutate(op, pick)
        fault = step.fault
        selector = bool(query.get("labelSelector"))
        if isinstance(fault, Alien) and not self._alien_relevant(
            fault.what, self.scope, selector, watch
        ):
            fault = None  # (recorded as served: not a fault for this request)
        self.served.append(Served(kind, query, self.loop.time(), fault))
        if isinstance(fault, Reset):
            self.truth.start(fault.n, 10)
            fault = None
        if isinstance(fault, Hang):
            await asyncio.Event().wait()
        if isinstance(fault, ErrorStatus):
            return _error(fault)
        if isinstance(fault, StatusIn2xx):
            body = _status(fault.code, "Failure", "a Status in a 200")
            return web.Response(body=orjson.dumps(body), content_type="application/json")
        if isinstance(fault, Html200):
            return web.Response(body=b"<html>login</html>", content_type="text/html")
        if isinstance(fault, GzipBomb):
            return await _gzip_bomb(request)
        if isinstance(fault, Endless):
            return await self._endless(request, fault)
        if watch:
            return await self._watch(request, query, streaming, fault)
        return await self._list(request, query, fault)

    async def _list(
        self, request: web.Request, query: dict[str, str], fault: Fault
    ) -> web.StreamResponse:
        truth = self.truth
        token = query.get("continue")
        limit = int(query.get("limit") or 0)
        if isinstance(fault, ErrorEvent):
            return _error(ErrorStatus(fault.code))
        if token:
            at, offset = _untoken(token)
            state = truth.state_at(at)
            if state is None:
                return _error(ErrorStatus(410))
        else:
            at, offset = truth.rv, 0
            state = dict(truth.objects)
            if isinstance(fault, Stale):
                back = max(truth.base, truth.rv - fault.back)
                at, state = back, truth.state_at(back) or {}
        keys = sorted(state)
        page = keys[offset : offset + limit] if limit else keys[offset:]
        more = limit and offset + limit < len(keys)
        list_rv = at + fault.by if isinstance(fault, Ahead) else at
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if more:
            meta["continue"] = _token(at, offset + limit)
        kind = "PodList"
        raw_alien: bytes | None = None
        if isinstance(fault, Alien) and fault.what == "list_kind":
            kind = "ConfigMapList"  # the right objects, as another kind: none of them sent
            items: list[Any] = [_with_uid(state[k], f"foreign-list-{k}") for k in page]
        else:
            items = [self._item(state[k]) for k in page]
            if isinstance(fault, Alien):
                alien, raw_alien = self._alien(fault.what, fault.collide)
                items.insert(len(items) // 2, alien)
        body = orjson.dumps(
            {"kind": kind, "apiVersion": API_VERSION, "metadata": meta, "items": items}
        )
        if raw_alien is not None:  # (the alien's JSON replaced by its bad bytes)
            body = body.replace(orjson.dumps(alien), raw_alien)
        return await _send(request, body, fault)

    async def _watch(
        self, request: web.Request, query: dict[str, str], streaming: bool, fault: Fault
    ) -> web.StreamResponse:
        truth = self.truth
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        if isinstance(fault, Gzip):
            resp.enable_compression(web.ContentCoding.gzip)
        await resp.prepare(request)
        timeout = float(query.get("timeoutSeconds") or 60)
        deadline = self.loop.time() + timeout
        first: list[bytes] = []
        if streaming:
            position = truth.rv
            first = [self._event("ADDED", truth.objects[k]) for k in sorted(truth.objects)]
            if not isinstance(fault, IgnoreInitialEvents):
                first.append(self._bookmark(position, end=True))
        else:
            try:
                position = int(query.get("resourceVersion") or "")
            except ValueError:
                position = truth.rv
            if position < truth.base:
                gone = _status(410, "Expired", f"too old resource version: {position}")
                await resp.write(orjson.dumps({"type": "ERROR", "object": gone}) + b"\n")
                return resp
            first = [self._event(t, o) for rv, t, o in truth.log if rv > position]
            if first:
                position = truth.rv
        if isinstance(fault, Shuffled):
            first.reverse()
        if isinstance(fault, Alien):
            obj, raw = self._alien(fault.what, fault.collide)
            raw = raw if raw is not None else orjson.dumps(obj)
            first.insert(0, b'{"type":"ADDED","object":' + raw + b"}\n")
        if isinstance(fault, Stale):
            first.append(self._bookmark(max(1, position - fault.back)))
        if isinstance(fault, Ahead):
            first.append(self._bookmark(truth.rv + fault.by))
        if isinstance(fault, BadJson):
            first.insert(int(len(first) * fault.at), b'{"type":"ADDED","object":{"metad\n')
        if isinstance(fault, ErrorEvent):
            reason = {410: "Expired", 504: "Timeout"}.get(fault.code, "InternalError")
            status = _status(fault.code, reason, "an ERROR event")
            first.append(orjson.dumps({"type": "ERROR", "object": status}) + b"\n")
        if isinstance(fault, EndEarly):
            first = first[: len(first) // 2]
        data = b"".join(first)
        if isinstance(fault, Cut):
            cut = max(1, int(len(data) * fault.at)) if data else 0
            if data:
                await resp.write(data[:cut] if data[cut - 1 : cut] != b"\n" else data[: cut - 1])
            return _abort(request, resp)
        if isinstance(fault, Trickle):
            for i in range(0, len(data), fault.piece):
                await resp.write(data[i : i + fault.piece])
                await asyncio.sleep(0.001)
        elif data:
            await resp.write(data)
        if isinstance(fault, (ErrorEvent, EndEarly, Stale, Ahead, Shuffled)):
            return resp  # (ended: the client resumes)
        if isinstance(fault, IgnoreInitialEvents) and fault.close:
            return resp
        # the watch goes on: new events as they happen, a bookmark now and then (while the
        # script lasts, only until the next bookmark: the next step needs a request)
        if self.script:
            deadline = min(deadline, self.loop.time() + self.bookmark_every * 1.5)
        while (left := deadline - self.loop.time()) > 0:
            changed = truth.changed
            if truth.rv > position and truth.base <= position:
                news = [self._event(t, o) for rv, t, o in truth.log if rv > position]
                position = truth.rv
                await resp.write(b"".join(news))
                continue
            try:
                async with asyncio.timeout(min(left, self.bookmark_every)):
                    await changed.wait()
            except TimeoutError:
                if truth.base <= position <= truth.rv:
                    await resp.write(self._bookmark(truth.rv))
                    position = truth.rv
        return resp

    async def _endless(self, request: web.Request, fault: Endless) -> web.StreamResponse:
        try:
            return await self._endless_body(request, fault)
        except ConnectionResetError:  # (the client gave up: what it should do)
            return web.Response()

    async def _endless_body(self, request: web.Request, fault: Endless) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(b'{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[')
        n = 0
        while True:
            if fault.junk == "spaces":
                chunk = b" " * 65536
            else:
                chunk = b"".join(
                    orjson.dumps(make_pod("a", f"endless{n + i}", 5, f"foreign-endless-{n + i}"))
                    + b","
                    for i in range(100)
                )
                n += 100
            await resp.write(chunk)
            await asyncio.sleep(0)


def _with_uid(obj: dict[str, Any], uid: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "uid": uid}}


def _token(rv: int, offset: int) -> str:
    return base64.b64encode(f"{rv}:{offset}".encode()).decode()


def _untoken(token: str) -> tuple[int, int]:
    rv, _, offset = base64.b64decode(token).decode().partition(":")
    return int(rv), int(offset)


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
            409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests",
            500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}  # fmt: skip


def _error(fault: ErrorStatus) -> web.Response:
    headers = {}
    if fault.retry_after is not None:
        headers["Retry-After"] = f"{fault.retry_after:g}"
    if fault.body == "status":
        body = orjson.dumps(_status(fault.code, _REASONS.get(fault.code, ""), "scripted"))
        ctype = "application/json"
    elif fault.body == "html":
        body, ctype = b"<html><body>502 Bad Gateway</body></html>", "text/html"
    else:
        body, ctype = b"", "text/plain"
    return web.Response(body=body, status=fault.code, content_type=ctype, headers=headers)


async def _send(request: web.Request, body: bytes, fault: Fault) -> web.StreamResponse:
    """A list body, as ``fault`` says (cut, trickled, compressed, with garbage)."""
    headers = {"Content-Type": "application/json"}
    if isinstance(fault, BadJson):  # (after a comma: inside a string it would be valid)
        at = body.find(b",", int(len(body) * fault.at))
        at = at + 1 if at >= 0 else len(body) // 2
        body = body[:at] + b"}{]garbage" + body[at:]
    if isinstance(fault, Gzip):
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    resp = web.StreamResponse(headers=headers)
    await resp.prepare(request)
    if isinstance(fault, Cut):
        await resp.write(body[: max(1, int(len(body) * fault.at))])
        return _abort(request, resp)
    if isinstance(fault, Trickle):
        for i in range(0, len(body), fault.piece):
            await resp.write(body[i : i + fault.piece])
            await asyncio.sleep(0.001)
    else:
        await resp.write(body)
    await resp.write_eof()
    return resp


def _abort(request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
    if request.transport is not None:
        request.transport.close()
    return resp


_BOMB: list[bytes] = []


async def _gzip_bomb(request: web.Request) -> web.StreamResponse:
    """4 GiB of spaces in a list, compressed to about 4 MB."""
    if not _BOMB:
        comp = zlib.compressobj(9, zlib.DEFLATED, 31)
        _BOMB.append(comp.compress(b'{"kind":"PodList","items":[') + comp.flush(zlib.Z_FULL_FLUSH))
        _BOMB.append(comp.compress(b" " * (1 << 20)) + comp.flush(zlib.Z_FULL_FLUSH))
    head, block = _BOMB
    resp = web.StreamResponse(
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )
    await resp.prepare(request)
    await resp.write(head)
    for _ in range(4096):
        await resp.write(block)
        await asyncio.sleep(0)
    await resp.write_eof()
    return resp


Handler = Callable[[web.Request], Any]

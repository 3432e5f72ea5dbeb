"""Replaying recorded kube-apiserver exchanges against KubeSim over HTTP, and comparing the
answers with the recordings: the recorder's session (:func:`recorder`), single requests
(:func:`send`) and recorded exchanges sent again (:func:`send_exchange`, :class:`Replayer`),
with what differs between two servers masked (:func:`masked`)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from aioinformer.testing import KubeSim
from tests.support import transcript

#: The recorder's User-Agent: KubeSim then names the same field manager the recordings show.
RECORDER_UA = "aioinformer-recorder/0.2"
MERGE = {"Content-Type": "application/merge-patch+json"}
_VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")
RECPODSETS = "rec.aioinformer.dev/v1/recpodsets"
#: The recorded request headers sent again (the rest are the connection's or the recorder's).
_SENT_HEADERS = ("Content-Type", "Accept", "If-None-Match")
_ELIDED = re.compile(r"<'x' \* (\d+)(?:: elided)?>")


@asynccontextmanager
async def recorder(sim: KubeSim, token: str | None = None) -> AsyncIterator[aiohttp.ClientSession]:
    """A session that sends what the recorder sent (its User-Agent, JSON, the admin token)."""
    headers = {
        "Authorization": f"Bearer {token or sim.token}",
        "Accept": "application/json",
        "User-Agent": RECORDER_UA,
    }
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as session:
        yield session


async def send(
    http: aiohttp.ClientSession,
    method: str,
    path: str,
    body: Any = None,
    *,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, bytes]:
    """One request: (status, decoded JSON body or text, raw bytes)."""
    data = None if body is None else json.dumps(body).encode()
    hdrs = {"Content-Type": "application/json", **(headers or {})} if data is not None else headers
    async with http.request(method, path, data=data, params=query, headers=hdrs) as r:
        raw = await r.read()
    try:
        decoded: Any = json.loads(raw)
    except ValueError:
        decoded = raw.decode()
    return r.status, decoded, raw


def masked(doc: Any) -> Any:
    """``doc`` without what differs between two servers: uid, resourceVersion, timestamps
    (metadata, status conditions) and a Status' details.uid are replaced, in a list's items too by ``"*"``; managedFields are reduced to who
    wrote (manager, operation, subresource), in no order."""
    out = copy.deepcopy(doc)
    if not isinstance(out, dict):
        return out
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for k in _VOLATILE_META:
            if k in meta:
                meta[k] = "*"
        if "managedFields" in meta:  # who wrote, not which fields (field sets are SSA's)
            meta["managedFields"] = sorted(
                (e.get("manager"), e.get("operation"), e.get("subresource") or "")
                if isinstance(e, dict)
                else tuple(e)  # masked already
                for e in meta["managedFields"]
            )
    status = out.get("status")
    if isinstance(status, dict):
        for cond in status.get("conditions") or []:
            if isinstance(cond, dict) and "lastTransitionTime" in cond:
                cond["lastTransitionTime"] = "*"
    details = out.get("details")
    if isinstance(details, dict) and "uid" in details:
        details["uid"] = "*"
    if isinstance(out.get("items"), list):
        out["items"] = [masked(item) for item in out["items"]]
    return out


class Replayer:
    """Sends recorded requests again: the recorded method, path, query, Content-Type, Accept
    and body (a string body, such as YAML or an apply patch, byte for byte; a JSON body with
    elided strings written out), and learns which of the server's uids and resourceVersions
    stand for the recorded ones, so recorded ownerReferences, preconditions, resourceVersions
    (in a body or the ``resourceVersion`` query parameter) and uids (in a body or any query
    parameter) point at the server's."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http
        self.uids: dict[str, str] = {}
        self.rvs: dict[str, str] = {}
        self.tokens: dict[str, str] = {}
        self.etags: dict[str, str] = {}

    def ours(self, doc: Any) -> Any:
        """``doc`` with every recorded uid, and every resourceVersion seen in an answer,
        replaced by the server's."""
        if doc is None or isinstance(doc, str):
            return doc
        text = json.dumps(doc)
        for theirs, mine in self.uids.items():
            text = text.replace(theirs, mine)
        for theirs, mine in self.rvs.items():
            text = text.replace(f'"resourceVersion": "{theirs}"', f'"resourceVersion": "{mine}"')
        return json.loads(text)

    def query(self, query: dict[str, str]) -> dict[str, str]:
        """The recorded query with a known recorded resourceVersion or continue token, and
        every recorded uid (e.g. in a ``fieldSelector``), replaced by the server's."""
        out = dict(query)
        for name, value in out.items():
            for theirs, mine in self.uids.items():
                value = value.replace(theirs, mine)
            out[name] = value
        if out.get("resourceVersion") in self.rvs:
            out["resourceVersion"] = self.rvs[out["resourceVersion"]]
        if out.get("continue") in self.tokens:
            out["continue"] = self.tokens[out["continue"]]
        return out

    async def answer(
        self,
        exchange: dict[str, Any],
        *,
        headers: dict[str, str] | None = None,
        data: bytes | None = None,
    ) -> Answer:
        """Send ``exchange``'s request (``headers`` added to the recorded ones; ``data``
        instead of a body the recording could not keep byte for byte) and learn the uid
        and resourceVersion its answer stands for."""
        req = exchange["request"]
        body = req.get("body")
        if data is None and body is not None:
            data = body.encode() if isinstance(body, str) else orjson.dumps(expand(self.ours(body)))
        sent = {k: v for k, v in req.get("headers", []) if k in _SENT_HEADERS}
        if sent.get("If-None-Match") in self.etags:
            sent["If-None-Match"] = self.etags[sent["If-None-Match"]]
        if data is not None and "Content-Type" not in sent:
            sent["Content-Type"] = "application/json"
        answer = await request(
            self.http,
            req["method"],
            req["path"],
            self.query(req["query"]),
            data,
            {**sent, **(headers or {})},
        )
        self.learn(exchange["response"].get("body"), answer)
        recorded_etag = dict(exchange["response"].get("headers", [])).get("Etag")
        if recorded_etag and answer.headers.get("ETag"):
            self.etags.setdefault(recorded_etag, answer.headers["ETag"])
        return answer

    def learn(self, recorded: Any, answer: Answer) -> None:
        """Note the server's uid and (for a success) resourceVersion for the recorded ones,
        and the uids of a list's items (paired by namespace and name)."""
        if not (isinstance(answer.body, dict) and isinstance(recorded, dict)):
            return
        theirs, mine = recorded.get("metadata") or {}, answer.body.get("metadata") or {}
        if not (isinstance(theirs, dict) and isinstance(mine, dict)):
            return
        if theirs.get("uid") and mine.get("uid"):
            self.uids.setdefault(theirs["uid"], mine["uid"])
        if theirs.get("resourceVersion") and mine.get("resourceVersion") and answer.status < 300:
            self.rvs.setdefault(theirs["resourceVersion"], mine["resourceVersion"])
        if theirs.get("continue") and mine.get("continue"):
            self.tokens.setdefault(theirs["continue"], mine["continue"])
        if isinstance(recorded.get("items"), list) and isinstance(answer.body.get("items"), list):
            ours = {_key(item): item for item in answer.body["items"]}
            for item in recorded["items"]:
                uid, got = _meta(item).get("uid"), _meta(ours.get(_key(item))).get("uid")
                if uid and got:
                    self.uids.setdefault(uid, got)

    async def send(self, exchange: dict[str, Any]) -> tuple[int, Any, bytes]:
        """:meth:`answer` as (status, decoded body, raw bytes)."""
        answer = await self.answer(exchange)
        return answer.status, answer.body, answer.raw

    async def check(self, exchange: dict[str, Any]) -> Any:
        """Send ``exchange`` and assert the server answers its recorded status and body (as
        :func:`masked` compares them); returns the server's body."""
        status, got, _ = await self.send(exchange)
        want = exchange["response"]
        label = exchange.get("label", exchange["request"]["path"])
        assert status == want["status"], (label, got)
        assert masked(got) == masked(self.ours(want["body"])), label
        return got


def _meta(doc: Any) -> dict[str, Any]:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return meta if isinstance(meta, dict) else {}


def _key(doc: Any) -> tuple[Any, Any]:
    return _meta(doc).get("namespace"), _meta(doc).get("name")


def exchanges(name: str) -> list[dict[str, Any]]:
    """A transcript's main exchange and its ``more_exchanges``, in order."""
    rec = transcript(name)
    return [rec, *rec.get("more_exchanges", [])]


def exchange(name: str, label: str) -> dict[str, Any]:
    """The exchange of ``name`` whose label starts with ``label`` (the main one has none)."""
    for ex in exchanges(name):
        if ex.get("label", "").startswith(label):
            return ex
    raise AssertionError(f"no exchange {label!r} in {name}")


def expand(value: Any) -> Any:
    """The body as sent: elided strings (``<'x' * N>``, in an answer ``<'x' * N: elided>``)
    written out again."""
    if isinstance(value, str):
        m = _ELIDED.fullmatch(value)
        return "x" * int(m.group(1)) if m else value
    if isinstance(value, dict):
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


@dataclass
class Answer:
    status: int
    body: Any
    raw: bytes
    headers: Any

    @property
    def warnings(self) -> list[str]:
        return list(self.headers.getall("Warning", []))


async def request(
    http: aiohttp.ClientSession,
    method: str,
    path: str,
    query: dict[str, str],
    data: bytes | None,
    headers: dict[str, str],
) -> Answer:
    """One request with ``data`` sent as is, redirects not followed (as the recorder did):
    the answer decoded as JSON, or as text."""
    async with http.request(
        method, path, params=query, data=data, headers=headers, allow_redirects=False
    ) as r:
        raw = await r.read()
        try:
            body: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = raw.decode(errors="replace")
        return Answer(r.status, body, raw, r.headers)


async def send_exchange(
    http: aiohttp.ClientSession, ex: dict[str, Any], data: bytes | None = None
) -> Answer:
    """The recorded request (method, path, query, Content-Type, Accept, body) again;
    ``data`` replaces a body the recording could not keep byte for byte."""
    req = ex["request"]
    headers = {k: v for k, v in req["headers"] if k in ("Content-Type", "Accept")}
    if data is None and req.get("body") is not None:
        body = req["body"]
        data = body.encode() if isinstance(body, str) else orjson.dumps(expand(body))
    return await request(http, req["method"], req["path"], req["query"], data, headers)


def duplicated(ex: dict[str, Any]) -> bytes:
    """25b's duplicate-field bodies: the recording kept the parsed form (one "data"); the
    request had two, and its Content-Length says how long it was."""
    body = ex["request"]["body"]
    raw = orjson.dumps({k: v for k, v in body.items() if k != "data"})[:-1]
    raw += b',"data":{"k":"1"},"data":' + orjson.dumps(body["data"]) + b"}"
    assert str(len(raw)) == dict(ex["request"]["headers"])["Content-Length"]
    return raw


def nested(n: int) -> str:
    """JSON nested ``n`` levels deep: ``{"a":{"a":...1...}}``."""
    return '{"a":' * n + "1" + "}" * n


#: How 25d describes its deep bodies instead of keeping them.
_DESCRIBED_DEPTH = re.compile(
    r'<a JSON OBJECT nested (\d+) levels: [^>]*>|<\{"a":\{"a":\.\.\.1\.\.\.\}\} nested (\d+) levels>'
)
_DESCRIBED_STRING = re.compile(r'<the JSON text \{"a": \.\.\. (\d+) levels \.\.\. \} as a STRING>')


def described_depth(ex: dict[str, Any]) -> bytes:
    """25d's request bodies, which the recording describes (``<a JSON OBJECT nested 200
    levels: ...>``) instead of keeping, written out; their length is the recorded
    Content-Length."""
    body = ex["request"]["body"]
    if isinstance(body, str):
        text = _DESCRIBED_DEPTH.sub(lambda m: nested(int(m.group(1) or m.group(2))), body)
    else:
        text = orjson.dumps(_strings_written_out(body)).decode()
    raw = text.encode()
    assert str(len(raw)) == dict(ex["request"]["headers"])["Content-Length"], ex.get("label")
    return raw


def _strings_written_out(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _strings_written_out(v) for k, v in doc.items()}
    if isinstance(doc, str) and (m := _DESCRIBED_STRING.fullmatch(doc)):
        return nested(int(m.group(1)))
    return doc


def recorded_warnings(ex: dict[str, Any]) -> list[str]:
    return [v for k, v in ex["response"]["headers"] if k == "Warning"]


def recorded_podset_crd() -> dict[str, Any]:
    """The PodSet CRD the recording server had (conformance README): 13a's definition with a
    whole-object ``x-kubernetes-preserve-unknown-fields`` schema."""
    crd = copy.deepcopy(transcript("13a")["request"]["body"])
    for version in crd["spec"]["versions"]:
        version["schema"] = {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        }
    return crd


async def bad_input_namespace(sim: KubeSim) -> None:
    """The state the 25* cases ran in: namespace rec-bad-a and the RecPodSet CRD (23c)."""
    sim.create("namespaces", {"metadata": {"name": "rec-bad-a"}})
    sim.create("customresourcedefinitions", transcript("23c")["setup"][0]["request"]["body"])
    await sim.wait_served(RECPODSETS)

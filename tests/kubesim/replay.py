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
_ELIDED = re.compile(r"<'x' \* (\d+)>")


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
    """Sends recorded requests with the recorded method, path, query, Content-Type and body,
    and learns which of KubeSim's uids and resourceVersions stand for the recorded ones, so
    recorded ownerReferences, preconditions and resourceVersions point at KubeSim's."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http
        self.uids: dict[str, str] = {}
        self.rvs: dict[str, str] = {}

    def ours(self, doc: Any) -> Any:
        """``doc`` with every recorded uid, and every resourceVersion seen in an answer,
        replaced by KubeSim's."""
        text = json.dumps(doc)
        for theirs, mine in self.uids.items():
            text = text.replace(theirs, mine)
        for theirs, mine in self.rvs.items():
            text = text.replace(f'"resourceVersion": "{theirs}"', f'"resourceVersion": "{mine}"')
        return json.loads(text)

    async def send(self, exchange: dict[str, Any]) -> tuple[int, Any, bytes]:
        req, want = exchange["request"], exchange["response"]
        ctype = dict(req["headers"]).get("Content-Type")
        headers = {"Content-Type": ctype} if ctype else None
        body = None if req["body"] is None else self.ours(req["body"])
        status, got, raw = await send(
            self.http, req["method"], req["path"], body, query=req["query"], headers=headers
        )
        recorded = want.get("body")
        if isinstance(got, dict) and isinstance(recorded, dict):
            theirs = (recorded.get("metadata") or {}).get("uid")
            mine = (got.get("metadata") or {}).get("uid")
            if theirs and mine:
                self.uids.setdefault(theirs, mine)
            theirs = (recorded.get("metadata") or {}).get("resourceVersion")
            mine = (got.get("metadata") or {}).get("resourceVersion")
            if theirs and mine and status < 300:
                self.rvs.setdefault(theirs, mine)
        return status, got, raw

    async def check(self, exchange: dict[str, Any]) -> Any:
        """Send ``exchange`` and assert KubeSim answers its recorded status and body (as
        :func:`masked` compares them); returns KubeSim's body."""
        status, got, _ = await self.send(exchange)
        want = exchange["response"]
        label = exchange.get("label", exchange["request"]["path"])
        assert status == want["status"], (label, got)
        assert masked(got) == masked(self.ours(want["body"])), label
        return got


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
    """The request body as sent: elided strings (``<'x' * N>``) written out again."""
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
    async with http.request(
        req["method"], req["path"], params=req["query"], data=data, headers=headers
    ) as r:
        raw = await r.read()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = raw.decode(errors="replace")
        return Answer(r.status, body, raw, r.headers)


def recorded_warnings(ex: dict[str, Any]) -> list[str]:
    return [v for k, v in ex["response"]["headers"] if k == "Warning"]


async def bad_input_namespace(sim: KubeSim) -> None:
    """The state the 25* cases ran in: namespace rec-bad-a and the RecPodSet CRD (23c)."""
    sim.create("namespaces", {"metadata": {"name": "rec-bad-a"}})
    sim.create("customresourcedefinitions", transcript("23c")["setup"][0]["request"]["body"])
    await sim.wait_served(RECPODSETS)

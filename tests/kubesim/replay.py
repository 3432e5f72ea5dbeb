"""Helpers to replay recorded kube-apiserver exchanges against KubeSim and compare answers."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from aioinformer.testing import KubeSim

#: The recorder's User-Agent: KubeSim then names the same field manager the recordings show.
RECORDER_UA = "aioinformer-recorder/0.2"
MERGE = {"Content-Type": "application/merge-patch+json"}
_VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")


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


async def eventually(cond: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Poll ``cond`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


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

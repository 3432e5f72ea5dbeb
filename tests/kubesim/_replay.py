"""Replaying recorded kube-apiserver exchanges against KubeSim over HTTP."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from aioinformer.testing import KubeSim
from tests.support import transcript

RECPODSETS = "rec.aioinformer.dev/v1/recpodsets"
_ELIDED = re.compile(r"<'x' \* (\d+)>")


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


async def send(
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

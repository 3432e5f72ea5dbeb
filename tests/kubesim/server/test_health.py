"""KubeSim's health endpoints over HTTP, against 29a-health-endpoints."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim
from tests.support import transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_sim() -> AsyncIterator[KubeSim]:
    async with KubeSim() as s:
        yield s


def _recorded() -> list[dict[str, Any]]:
    rec = transcript("29a")
    return [rec, *rec["more_exchanges"]]


def _headers(sim: KubeSim, auth: str, request_headers: list[list[str]]) -> dict[str, str]:
    headers = {k: v for k, v in request_headers if k == "Accept"}
    if auth == "admin":
        headers["Authorization"] = f"Bearer {sim.token}"
    elif auth == "alice":
        headers["Authorization"] = f"Bearer {sim.add_user('alice')}"
    return headers


@pytest.mark.parametrize("exchange", _recorded(), ids=lambda e: e.get("label", "main"))
async def test_health_answers_as_recorded(module_sim: KubeSim, exchange: dict[str, Any]) -> None:
    """Every 29a exchange: status, Content-Type, the exact body bytes (``ok`` without a
    newline, the verbose check list, ``excluded: ok``, the plain-text 404) and whether
    ``X-Content-Type-Options: nosniff`` is sent, for admin, anonymous and a user
    without grants alike."""
    req, want = exchange["request"], exchange["response"]
    headers = _headers(module_sim, req["auth"], req["headers"])
    async with aiohttp.ClientSession(base_url=module_sim.url, headers=headers) as s:
        async with s.get(req["path"], params=req["query"]) as r:
            body = await r.read()
            assert r.status == want["status"]
            assert r.headers["Content-Type"] == want["content_type"]
            assert body.decode() == want["body"]
            assert len(body) == want["body_raw_len"]
            recorded_nosniff = any(k == "X-Content-Type-Options" for k, _ in want["headers"])
            assert ("X-Content-Type-Options" in r.headers) == recorded_nosniff


async def test_exclude_of_an_unknown_check_warns(module_sim: KubeSim) -> None:
    """An ``exclude`` naming no check still passes, with upstream's ``warn:`` line before
    the final ``check passed``; a check of another endpoint is unknown here (404)."""
    async with aiohttp.ClientSession(base_url=module_sim.url) as s:
        async with s.get("/livez", params={"verbose": "", "exclude": "nope"}) as r:
            text = await r.text()
        assert r.status == 200
        assert text.endswith(
            'warn: some health checks cannot be excluded: no matches for "nope"\n'
            "livez check passed\n"
        )
        async with s.get("/livez/informer-sync") as r:
            assert (r.status, await r.text()) == (404, "404 page not found\n")
        async with s.get("/readyz/poststarthook/rbac/bootstrap-roles") as r:
            assert (r.status, await r.text()) == (200, "ok")

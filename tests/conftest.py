"""Shared fixtures: a running KubeSim, an API client and an authenticated HTTP session to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from aioinformer.testing import KubeSim


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    async with KubeSim(bookmark_interval=60.0) as s:
        yield s


@pytest.fixture
async def http(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as session:
        yield session


@pytest.fixture
async def api(sim: KubeSim) -> AsyncIterator[Any]:
    """A kubernetes_asyncio ApiClient configured for ``sim`` (real HTTP, bearer token)."""
    async with sim.api_client() as client:
        yield client

"""Shared fixtures: a running KubeSim, an API client and an authenticated HTTP session to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from aioinformer.testing import KubeSim

SLOW_FIRST = (
    "tests/simulation/test_seeds.py",
    "tests/harness/",
    "tests/typing/",
    "tests/cli/test_soak.py",
    "tests/testing/test_faultmix.py",
    "tests/testing/test_pytest_plugin.py",
    "tests/faults/test_fuzz.py",
    "tests/test_doc_commands.py",
)
"""Files of the longest tests (5-20 s each, most waiting on a subprocess), longest first:
scheduled before the others, so that xdist's workers do not end the run with one of them
alone."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath

    def rank(item: pytest.Item) -> int:
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        return next((i for i, p in enumerate(SLOW_FIRST) if where.startswith(p)), len(SLOW_FIRST))

    items.sort(key=rank)  # (stable: the order within each file stays)


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

"""Shared fixtures: a running KubeSim, an authenticated HTTP session, transcripts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from aioinformer.testing import KubeSim

#: Recorded kube-apiserver v1.28 exchanges, copied into the repository (see its README).
CONFORMANCE = Path(__file__).resolve().parent / "conformance"


def transcript(name: str) -> dict[str, Any]:
    """Load one recorded kube-apiserver exchange from tests/conformance."""
    stem = name.removesuffix(".json")
    matches = sorted(CONFORMANCE.glob(f"{stem}*.json"))
    assert matches, f"no transcript {name!r} in {CONFORMANCE}"
    data: dict[str, Any] = json.loads(matches[0].read_text())
    return data


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    async with KubeSim(bookmark_interval=60.0) as s:
        yield s


@pytest.fixture
async def http(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as session:
        yield session

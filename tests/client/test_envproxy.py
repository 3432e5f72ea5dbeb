"""The environment's proxy is resolved once per client the library makes (as client-go
reads it once), not by aiohttp at every request: it is written where each request passes
it, with its credentials, NO_PROXY is honoured, a kubeconfig's proxy-url wins, and the
session stops its per-request lookups. A request through a pinned client reaches the
proxy the environment named."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient

from aioinformer import Client, StatusError
from aioinformer._client.config import load_api_client
from aioinformer._client.envproxy import pin_env_proxy
from aioinformer._client.rest import RestClient
from aioinformer.testing import KubeSim
from tests.support import fake_server

PROXY_VARIABLES = ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy")


def plain_client(sim: KubeSim) -> ApiClient:
    """A kubernetes_asyncio client of the sim as kubernetes_asyncio makes it (its session
    trusting the environment; ``sim.api_client()`` does not)."""
    return ApiClient(configuration=sim.client_configuration())


async def test_the_sims_own_client_looks_nothing_up(
    sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # (nothing listens there)
    async with sim.api_client() as api:
        assert api.rest_client.pool_manager.trust_env is False
        clone = RestClient(api).clone()
        try:
            assert clone.api_client.rest_client.pool_manager.trust_env is False
            made = await Client(api).get("v1", "Namespace", "default")
            assert made.name == "default"  # straight to the sim, not the environment's proxy
        finally:
            await clone.aclose()


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


async def test_the_environments_proxy_is_pinned_with_its_credentials(
    sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://someone:pw@127.0.0.1:3128")
    async with await load_api_client(str(sim.write_kubeconfig(tmp_path / "kc"))) as api:
        assert api.rest_client.pool_manager.trust_env is False
        assert api.rest_client.proxy == api.configuration.proxy
        assert api.configuration.proxy == "http://someone:pw@127.0.0.1:3128"


async def test_no_proxy_and_a_kubeconfig_proxy_are_honoured(
    sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    async with plain_client(sim) as api:
        pin_env_proxy(api)
        assert api.rest_client.pool_manager.trust_env is False
        assert not api.rest_client.proxy  # NO_PROXY names the server
    monkeypatch.delenv("NO_PROXY")
    async with plain_client(sim) as api:
        api.rest_client.proxy = "http://127.0.0.1:8888"  # (as a kubeconfig's proxy-url)
        pin_env_proxy(api)
        assert api.rest_client.proxy == "http://127.0.0.1:8888"


async def test_a_pinned_client_goes_through_the_proxy_the_environment_named(
    sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    async def refuse(request: web.Request) -> web.Response:
        seen.append(str(request.url))
        return web.json_response(
            {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403,
             "reason": "Forbidden", "message": "the proxy says no"}, status=403,
        )  # fmt: skip

    async with fake_server(refuse) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy)
        async with plain_client(sim) as api:
            pin_env_proxy(api)
            with pytest.raises(StatusError, match="the proxy says no"):
                await Client(api).get("v1", "ConfigMap", "x", "default")
    assert seen and seen[0].startswith(sim.url), seen

"""Secrets and transport over real HTTP(S) against KubeSim.

TLS verification stays on unless the kubeconfig turns it off; a kubeconfig without the
cluster's CA fails with a clear error (and is retried with backoff, not in a loop); tokens,
client keys and Authorization headers never appear in logs (every logger at DEBUG),
exception messages or reprs, whatever fails; KubeSim listens on loopback with auth on.
"""

from __future__ import annotations

import base64
import logging
import traceback
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, config

from aioinformer import AioinformerError, InformerFactory, Manager, TransportError
from aioinformer._client.listwatch import ListWatch
from aioinformer.testing import KubeSim, eventually
from tests.support import pod
from tests.support import watch_options as options

ALL_LOGGERS = ("", "aioinformer", "aiohttp", "asyncio", "kubernetes_asyncio")


async def configuration(doc: dict[str, Any], tmp_path: Path) -> Any:
    """A kubernetes_asyncio Configuration loaded from a kubeconfig document, as users do."""
    cfg = client.Configuration()
    await config.load_kube_config_from_dict(
        doc, client_configuration=cfg, temp_file_path=str(tmp_path)
    )
    return cfg


def cluster(doc: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = doc["clusters"][0]["cluster"]
    return entry


# -- KubeSim defaults --------------------------------------------------------------------------


async def test_kubesim_listens_on_loopback_with_auth_on_by_default() -> None:
    async with KubeSim() as sim:
        assert sim.host == "127.0.0.1" and sim.options.auth
        runner = sim._runner
        assert runner is not None
        assert [addr[0] for addr in runner.addresses] == ["127.0.0.1"]
        assert sim.url.startswith("http://127.0.0.1:")
        async with aiohttp.ClientSession(base_url=sim.url) as http:
            async with http.get("/api/v1/namespaces/default/pods") as resp:
                assert resp.status == 403  # anonymous: authenticated as nobody, allowed nothing
            bad = {"Authorization": "Bearer not-the-token"}
            async with http.get("/api/v1/namespaces/default/pods", headers=bad) as resp:
                assert resp.status == 401
            good = {"Authorization": f"Bearer {sim.token}"}
            async with http.get("/api/v1/namespaces/default/pods", headers=good) as resp:
                assert resp.status == 200
        assert len(sim.token) >= 32


# -- TLS ---------------------------------------------------------------------------------------


async def test_tls_is_verified_with_the_ca_from_the_kubeconfig(tmp_path: Path) -> None:
    async with KubeSim(tls=True) as sim:
        sim.create("pods", pod("a"), "default")
        cfg = await configuration(sim.kubeconfig(), tmp_path)
        assert cfg.verify_ssl is True and cfg.ssl_ca_cert
        async with client.ApiClient(configuration=cfg) as api:
            async with InformerFactory(api, watch_options=options()) as factory:
                pods = factory.informer("v1", "pods")
                await pods.wait_for_sync(timeout=15)
                assert [o.key for o in pods.snapshot().list()] == ["default/a"]


async def test_kubeconfig_without_the_ca_fails_with_a_clear_error(tmp_path: Path) -> None:
    async with KubeSim(tls=True) as sim:
        doc = sim.kubeconfig()
        del cluster(doc)["certificate-authority"]
        cfg = await configuration(doc, tmp_path)
        assert cfg.verify_ssl is True  # verification stays on: the kubeconfig did not say off
        async with client.ApiClient(configuration=cfg) as api:
            with pytest.raises(TransportError) as info:
                await ListWatch(api, "v1", "pods", namespace="default").list_page("", 10, None)
            msg = str(info.value)
            assert 'list pods in namespace "default": request failed' in msg
            assert "certificate verify failed" in msg
            assert "is the cluster's CA in the kubeconfig" in msg
            async with InformerFactory(api, watch_options=options()) as factory:
                pods = factory.informer("v1", "pods")
                await eventually(lambda: pods.statistics().stream_errors >= 4, "4 failures")
                served = sim.server.requests_served
                assert "certificate verify failed" in pods.statistics().last_error
                assert not pods.has_synced
            # the handshake fails before any request reaches the handler
            assert sim.server.requests_served == served == 0


async def test_insecure_skip_tls_verify_in_the_kubeconfig_turns_it_off(tmp_path: Path) -> None:
    async with KubeSim(tls=True) as sim:
        sim.create("pods", pod("a"), "default")
        doc = sim.kubeconfig()
        del cluster(doc)["certificate-authority"]
        cluster(doc)["insecure-skip-tls-verify"] = True
        cfg = await configuration(doc, tmp_path)
        assert cfg.verify_ssl is False
        async with client.ApiClient(configuration=cfg) as api:
            async with InformerFactory(api, watch_options=options()) as factory:
                pods = factory.informer("v1", "pods")
                await pods.wait_for_sync(timeout=15)
                assert [o.key for o in pods.snapshot().list()] == ["default/a"]


# -- no secret anywhere --------------------------------------------------------------------------


async def test_no_token_key_or_authorization_header_in_logs_errors_or_reprs(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """A full session (a manager with informers and a controller that writes through the
    client) over https with a token and a client certificate, while things fail: 500s on
    the list, a relist after the watch history expires, an informer with a wrong token
    (401), one with a token that has no permissions (403), and direct API calls that fail.
    Every log record (all loggers at DEBUG, tracebacks included), every error message and
    the repr of every object involved is searched for the secrets."""
    for name in ALL_LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    async with KubeSim(tls=True) as sim:
        assert sim.ca_file is not None
        key_pem = (sim.ca_file.parent / "tls.key").read_bytes()
        doc = sim.kubeconfig()
        user = doc["users"][0]["user"]
        user["client-certificate-data"] = base64.b64encode(sim.ca_file.read_bytes()).decode()
        user["client-key-data"] = base64.b64encode(key_pem).decode()
        wrong_token = "wrong-" + sim.token[::-1]
        nobody_token = sim.add_user("nobody")
        key_lines = [ln for ln in key_pem.decode().splitlines() if "-----" not in ln]
        secrets = [sim.token, wrong_token, nobody_token, user["client-key-data"], *key_lines]

        sim.create("configmaps", {"metadata": {"name": "c0"}, "data": {"v": "0"}}, "default")
        sim.fail_next(2, 500, verbs=["list"])
        cfg = await configuration(doc, tmp_path)
        bad_cfg = await configuration(sim.kubeconfig(user_token=wrong_token), tmp_path)
        nobody_cfg = await configuration(sim.kubeconfig(user_token=nobody_token), tmp_path)
        errors: list[BaseException] = []
        objects: list[Any] = [cfg, bad_cfg, nobody_cfg]

        async with (
            client.ApiClient(configuration=cfg) as api,
            client.ApiClient(configuration=bad_cfg) as bad_api,
            client.ApiClient(configuration=nobody_cfg) as nobody_api,
        ):
            core = client.CoreV1Api(api)

            async def reconcile(key: str) -> None:
                ns, name = key.split("/")
                patch = {"metadata": {"annotations": {"reconciled": "yes"}}}
                await core.patch_namespaced_config_map(name, ns, patch)

            manager = Manager(api, watch_options=options())
            cms = manager.informer("v1", "configmaps", namespace="default")
            manager.informer("v1", "pods")
            ctl = manager.controller("cm", reconcile, primary=cms, primary_kind="ConfigMap")
            objects += [api, manager, manager.factory, ctl, *manager.factory.informers]

            async with manager:  # entered once synced (after the two 500s)

                def annotated() -> bool:
                    snap = cms.snapshot()
                    return all(o.annotations.get("reconciled") for o in snap.list())

                await eventually(lambda: len(cms.snapshot()) == 1 and annotated(), "reconcile")
                # a relist: the watch history expires while the watch is stalled
                sim.stall_watches()
                sim.create("configmaps", {"metadata": {"name": "c1"}}, "default")
                sim.expire_watch_history()
                sim.unstall_watches()
                sim.drop_watches()
                await eventually(lambda: cms.statistics().relists >= 1, "the relist")
                await eventually(lambda: len(cms.snapshot()) == 2 and annotated(), "reconcile")
                # 401 and 403 informers, side by side
                async with (
                    InformerFactory(bad_api, watch_options=options()) as bad,
                    InformerFactory(nobody_api, watch_options=options()) as nobody,
                ):
                    b = bad.informer("v1", "secrets")
                    n = nobody.informer("v1", "secrets", namespace="default")
                    objects += [bad, nobody, b, n, b._watcher, n._watcher]
                    await eventually(lambda: b.statistics().errors_by_code.get(401, 0) >= 2, "401s")
                    await eventually(lambda: n.statistics().errors_by_code.get(403, 0) >= 2, "403s")
                    objects += [b.statistics(), n.statistics(), cms.statistics()]
                for lw_api in (bad_api, nobody_api):
                    try:
                        await ListWatch(lw_api, "v1", "secrets").list_page("", 1, None)
                    except AioinformerError as exc:
                        errors.append(exc)
                    try:
                        await client.CoreV1Api(lw_api).list_namespaced_secret("default")
                    except client.ApiException as exc:
                        errors.append(exc)
        assert len(errors) == 4 and sim.faults.injected["http_500"] == 2

    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    texts = [formatter.format(r) for r in caplog.records]
    texts += [f"{e!s} {e!r} {''.join(traceback.format_exception(e))}" for e in errors]
    texts += [repr(o) for o in objects] + [str(o) for o in objects]
    assert any("HTTP 401" in t for t in texts) and any("HTTP 403" in t for t in texts)
    # DEBUG capture really was on, for the client library too
    assert any(
        r.name.startswith("kubernetes_asyncio") and r.levelno == logging.DEBUG
        for r in caplog.records
    )
    for text in texts:
        for secret in secrets:
            assert secret not in text, f"a secret leaked into: {text[:300]}"
        assert "Authorization" not in text, f"a header leaked into: {text[:300]}"
        assert "Bearer" not in text, f"a header leaked into: {text[:300]}"

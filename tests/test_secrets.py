"""Secrets and transport over real HTTP(S) against KubeSim.

TLS verification stays on unless the kubeconfig turns it off; a kubeconfig without the
cluster's CA fails with a clear error (and is retried with backoff, not in a loop); tokens,
client keys and Authorization headers never appear in logs (every logger at DEBUG),
exception messages or reprs, whatever fails; KubeSim listens on loopback with auth on.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import traceback
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yarl
from aiohttp import web
from kubernetes_asyncio import client, config
from multidict import CIMultiDict, CIMultiDictProxy

from aioinformer import AioinformerError, Client, InformerFactory, Manager, TransportError
from aioinformer._client.discovery import Discovery
from aioinformer._client.listwatch import ListWatch
from aioinformer._client.rest import Request, RestClient
from aioinformer._coordination.lease import LeaseClient
from aioinformer._core import logs
from aioinformer._core.redact import REDACTED, Redactor, register
from aioinformer.testing import KubeSim, eventually
from tests.faults.hostile import TOKEN, hostile_server, status
from tests.faults.test_echoed_secrets import broken_http_server
from tests.leaks import leaks
from tests.support import pod
from tests.support import watch_options as options

ALL_LOGGERS = ("", "aioinformer", "aiohttp", "asyncio", "kubernetes_asyncio")

CASE = web.AppKey("case", str)


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
    the repr of every object involved is searched for the secrets, and so is everything
    reachable from the errors, the records and the statistics."""
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
    # nor anywhere reachable from the errors, the log records and the statistics
    assert leaks([*errors, *caplog.records, *objects[-3:]], secrets) == []


# -- rotated tokens, and what an error carries beyond its text ------------------------------------

ROTATED = "rotated-token-{n}-0123456789abcdefghijklmnop"
PROXY_PASSWORD = "proxy-password-0123456789abcdef"


def rotating_client(url: str) -> tuple[Any, list[str]]:
    """An ApiClient whose bearer token an exec plugin (its refresh hook) replaces at every
    request, as a token file re-read every call would: the tokens made so far."""
    made: list[str] = []

    def refresh(cfg: Any) -> None:
        made.append(ROTATED.format(n=len(made)))
        cfg.api_key["BearerToken"] = made[-1]

    cfg = client.Configuration()
    cfg.host = url
    cfg.api_key = {"BearerToken": "initial-token-0123456789abcdef"}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    cfg.refresh_api_key_hook = refresh
    return client.ApiClient(configuration=cfg), made


async def test_a_token_rotated_while_a_request_was_in_flight_is_not_echoed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first request goes out with token 0 and is answered (a 401 quoting the token it
    was sent, bare: no ``Bearer`` in front to give it away) only after a second request went
    out with token 1: by then the configuration holds token 1 only. Neither the error nor
    any log line may show token 0."""
    caplog.set_level(logging.DEBUG)
    second = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        said = request.headers.get("Authorization", "").split(" ", 1)[-1]
        if request.query.get("n") == "0":
            await second.wait()  # in flight while the token rotates
        else:
            second.set()
        message = f"the token {said} has expired"
        body = orjson.dumps(status(401, "Unauthorized", message))
        return web.Response(body=body, status=401, content_type="application/json")

    async with hostile_server(handler) as server:
        api, made = rotating_client(server.url)
        async with api:
            rest = RestClient(api)
            errors: list[BaseException] = []

            async def get(n: int) -> None:
                try:
                    await rest.request(
                        "GET", "/api/v1/pods", Request("list", "pods"), query=[("n", str(n))]
                    )
                except AioinformerError as exc:
                    errors.append(exc)

            first = asyncio.create_task(get(0))
            await eventually(lambda: len(made) == 1, "the first request to go out")
            await get(1)
            await first
    assert len(errors) == 2 and len(made) == 2
    assert "has expired" in str(errors[0]) and REDACTED in str(errors[0])
    assert leaks([*errors, *caplog.records], made) == []


def tokened_client(url: str, token: str = TOKEN, proxy: str | None = None) -> Any:
    cfg = client.Configuration()
    cfg.host = url
    cfg.api_key = {"BearerToken": token}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    if proxy:
        cfg.proxy = proxy
    return client.ApiClient(configuration=cfg)


async def each_path(api: Any, namespace: str) -> list[BaseException]:
    """Run every error-producing path of the library once against ``api``: the client
    layer, a list and a watch, the read/write client, a Lease, discovery. The errors."""
    rest = RestClient(api)
    lw = ListWatch(rest, "v1", "pods", namespace=namespace)
    cl = Client(rest)
    pod_body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace},
    }

    async def watch() -> None:
        async for _ in lw.watch("1", 30):
            pass

    calls: list[Awaitable[Any]] = [
        rest.request("GET", f"/api/v1/namespaces/{namespace}/pods", Request("list", "pods")),
        lw.list_page("", 10, None),
        watch(),
        cl.get("v1", "Pod", "p", namespace),
        cl.create(pod_body),
        LeaseClient(rest, namespace).get("lease"),
        Discovery(rest, wait=0).resolve("example.com/v1", "things"),
    ]
    errors: list[BaseException] = []
    for call in calls:
        try:
            await call
        except AioinformerError as exc:
            errors.append(exc)
    return errors


POD_RESOURCES = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [{"name": "pods", "namespaced": True, "kind": "Pod", "verbs": ["get", "list"]}],
}


async def echoing(request: web.Request) -> web.StreamResponse:
    """Every request but core discovery fails the way its namespace says, echoing the
    credential it was sent wherever it can."""
    if request.path == "/api/v1":
        return web.json_response(POD_RESOURCES)
    said = request.headers.get("Authorization", "")
    token = said.split(" ", 1)[-1]
    case = request.path.partition("/namespaces/")[2].split("/")[0] or request.app[CASE]
    if case == "status401":
        body = orjson.dumps(status(401, "Unauthorized", f"token {token} bad ({said})"))
        return web.Response(body=body, status=401, content_type="application/json")
    if case == "html502":
        page = f"<html><pre>Authorization: {said}\ntoken={token}</pre></html>"
        return web.Response(text=page, status=502, content_type="text/html")
    if case == "nonjson":
        if request.query.get("watch"):
            return web.Response(status=410, text=f"gone {token}", content_type="text/plain")
        return web.Response(body=b'{"items": [' + token.encode() + b" oops", status=200,
                            content_type="application/json")  # fmt: skip
    if case == "redirect":
        raise web.HTTPFound(location=f"ht!tp://{token}/")
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})  # "cut"
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    await resp.write(b'{"kind": "PodList", "items": [{"metadata": {"name": "' + token.encode())
    assert request.transport is not None
    request.transport.close()  # cut mid-body
    return resp


@pytest.mark.parametrize("case", ["status401", "html502", "nonjson", "redirect", "cut"])
async def test_no_error_carries_a_secret_anywhere_reachable(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Each path that makes errors (client layer, list, watch, read/write client, Lease,
    discovery, an informer's statistics and log lines) against a server that echoes the
    credential: nothing reachable from what they raise, count or log holds it, through
    ``__cause__`` / ``__context__``, ``args``, notes or attributes."""
    caplog.set_level(logging.DEBUG)
    app = web.Application()
    app[CASE] = case
    app.router.add_route("*", "/{tail:.*}", echoing)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        async with tokened_client(url) as api:
            errors = await each_path(api, case)
            async with InformerFactory(api, watch_options=options()) as factory:
                inf = factory.informer("v1", "pods", namespace=case)

                def failed_twice() -> bool:
                    s = inf._watcher.statistics()
                    return s.stream_errors + sum(s.errors_by_code.values()) >= 2

                await eventually(failed_twice, "two failures")
                stats = [inf.statistics(), inf._watcher.statistics()]
    finally:
        await runner.cleanup()
    assert len(errors) == (6 if case == "nonjson" else 7), errors  # (a 200 is no error)
    if case == "nonjson":  # the read/write client's: test_a_client_decode_error_...
        errors = [e for e in errors if "the answer is not JSON" not in str(e)]
    assert leaks([*errors, *stats, *caplog.records], [TOKEN]) == []


async def test_a_client_decode_error_carries_no_body() -> None:
    """A 2xx answer that is not JSON and echoes the token: the read/write client's
    DecodeError carries no piece of the body (the JSON error's ``doc`` holds all of it)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/api/v1":
            return web.json_response(POD_RESOURCES)
        body = b'{"metadata": ' + request.headers["Authorization"].encode()
        return web.Response(body=body, content_type="application/json")

    async with hostile_server(handler) as server, server.api_client() as api:
        with pytest.raises(AioinformerError) as info:
            await Client(api).get("v1", "Pod", "p", "default")
    assert leaks([info.value], [TOKEN]) == []


async def test_no_error_carries_the_request_aiohttp_sent_or_the_proxy_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A broken answer (aiohttp's error holds the request with its Authorization header)
    and a proxy that refuses connections (aiohttp's error holds the connection key with
    the proxy's credentials): the errors of every path carry neither."""
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []
    async with broken_http_server() as url, tokened_client(url) as api:
        errors += await each_path(api, "default")
    async with broken_http_server() as closed:
        pass  # (its port is free now: a proxy that refuses connections)
    proxy = closed.replace("http://", f"http://user:{PROXY_PASSWORD}@")
    async with tokened_client("http://127.0.0.1:9", proxy=proxy) as api:
        errors += await each_path(api, "default")
    assert len(errors) == 14, errors
    assert any("Bad status line" in str(e) or "HTTP 400" in str(e) for e in errors), errors
    assert leaks([*errors, *caplog.records], [TOKEN, PROXY_PASSWORD]) == []


def test_a_log_record_keeps_no_exception_that_carries_a_secret_beyond_its_text() -> None:
    """A reconcile's kubernetes_asyncio call failed with aiohttp's error (its request
    headers hold the token; its text does not): logged with ``exc_info``, the record keeps
    the cleaned traceback text and no exception object for a handler (an error tracker)
    to walk."""
    known = register(Redactor(None, extra=[TOKEN]))
    info = aiohttp.RequestInfo(
        yarl.URL("http://127.0.0.1:9/api"),
        "GET",
        CIMultiDictProxy(CIMultiDict({"Authorization": f"Bearer {TOKEN}"})),
    )
    try:
        try:
            raise aiohttp.ClientResponseError(info, (), status=500, message="boom")
        except aiohttp.ClientResponseError:
            raise RuntimeError("reconcile failed") from None
    except RuntimeError as exc:
        error = exc
    record = logging.LogRecord(
        "aioinformer.controller", logging.ERROR, __file__, 1, "failed", (),
        (type(error), error, error.__traceback__),
    )  # fmt: skip
    assert leaks([record], [TOKEN]) != []  # (what the record held)
    assert logs.RedactingFilter().filter(record)
    assert record.exc_info is None and record.exc_text is not None
    assert "RuntimeError: reconcile failed" in record.exc_text
    assert leaks([record], [TOKEN]) == []
    clean = RuntimeError("nothing secret")
    plain = logging.LogRecord("x", logging.ERROR, __file__, 1, "m", (), (RuntimeError, clean, None))
    logs.RedactingFilter().filter(plain)
    assert plain.exc_info is not None  # (nothing to hide: left as it was)
    assert known

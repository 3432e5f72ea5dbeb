"""Secrets from every source a kubeconfig gives them, echoed back or failing early.

A token printed by a kubeconfig exec plugin (whose output is malformed, whose error quotes
it, or which a server echoes in a 401 Status and a watch ERROR event), a basic-auth
password (echoed bare, as ``user:password`` and as its base64), a proxy URL's credentials
(echoed by a proxy refusing them), and a client key given as a path (a key that cannot be
loaded: the error names the path, never the contents). Nothing reachable from what the
library raises, counts or logs holds the secret or a piece of it (tests/leaks.py).
"""

from __future__ import annotations

import base64
import logging
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from aiohttp import web

from aioinformer import AioinformerError, ConfigError, InformerFactory
from aioinformer._client.config import clean_plugin_text, load_api_client
from aioinformer.testing import eventually
from tests.faults.hostile import event, hostile_server, list_body, status
from tests.leaks import leaks
from tests.support import watch_options as options
from tests.test_secrets import each_path

EXEC_TOKEN = "exec-plugin-token-0123456789abcdefghijklmnopqrstuv"
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZGVmYXVsdCJ9.c2lnbmF0dXJl"
PASSWORD = "basic-password-0123456789abcdef"
PROXY_PASSWORD = "proxy-secret-0123456789abcdef"


def kubeconfig(tmp_path: Path, server: str, user: dict[str, Any], **cluster: str) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def exec_user(tmp_path: Path, stdout: str, stderr: str = "", code: int = 0) -> dict[str, Any]:
    """A kubeconfig user whose exec plugin (a Python script) prints ``stdout`` and
    ``stderr`` and exits with ``code``."""
    script = tmp_path / "plugin.py"
    script.write_text(
        "import sys\n"
        f"sys.stdout.write({stdout!r})\n"
        f"sys.stderr.write({stderr!r})\n"
        f"sys.exit({code})\n"
    )
    spec = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": sys.executable,
        "args": [str(script)],
        "interactiveMode": "Never",
    }
    return {"exec": spec}


def credential(token: str) -> str:
    return orjson.dumps(
        {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "kind": "ExecCredential",
            "status": {"token": token},
        }
    ).decode()


@pytest.mark.parametrize(
    ("stdout", "stderr", "code"),
    [
        (credential(EXEC_TOKEN)[:-3], "", 0),  # cut short: not JSON
        ("", f"error: the cached token {EXEC_TOKEN} has expired\n", 1),
        ("", f"refresh failed for {JWT}: 401\n", 1),
    ],
    ids=["malformed-output", "token-in-stderr", "jwt-in-stderr"],
)
async def test_an_exec_plugin_failing_with_a_token_in_its_output(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, stdout: str, stderr: str, code: int
) -> None:
    """An exec plugin whose output is cut (the JSON error keeps the whole output as its
    document) or whose error message quotes a token: one ConfigError naming the plugin's
    failure, and neither it nor any log line holds the token."""
    caplog.set_level(logging.DEBUG)
    config = kubeconfig(tmp_path, "http://127.0.0.1:9", exec_user(tmp_path, stdout, stderr, code))
    with pytest.raises(ConfigError, match="exec") as info:
        await load_api_client(config)
    assert leaks([info.value, *caplog.records], [EXEC_TOKEN, JWT]) == []


async def echo_everything(request: web.Request) -> web.StreamResponse:
    """A server (or a proxy) that refuses every credential, echoing it in each form it can
    recover: the header, a bearer token, a basic ``user:password`` and its password."""
    proxied = request.headers.get("Proxy-Authorization", "")
    said = proxied or request.headers.get("Authorization", "")
    value = said.split(" ", 1)[-1]
    try:
        plain = base64.b64decode(value).decode()
    except ValueError:
        plain = ""
    password = plain.partition(":")[2]
    message = f"credentials {value} ({plain}, password {password}) refused"
    if proxied:
        page = f"<html><h1>407</h1><pre>{value}\n{plain}\n{password}</pre></html>"
        headers = {"Proxy-Authenticate": f'Basic realm="{password}"'}
        return web.Response(text=page, status=407, headers=headers, content_type="text/html")
    if request.path == "/api/v1":  # discovery answers, so every path reaches its request
        return web.json_response(
            {
                "kind": "APIResourceList",
                "groupVersion": "v1",
                "resources": [
                    {"name": "pods", "namespaced": True, "kind": "Pod", "verbs": ["get", "list"]}
                ],
            }
        )
    if request.query.get("watch"):
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(event("ERROR", status(500, "InternalError", message)))
        await resp.write_eof()
        return resp
    if request.query.get("limit") and "informer" in request.path:
        return web.json_response(orjson.loads(list_body([], 10)))
    body = orjson.dumps(status(401, "Unauthorized", message))
    return web.Response(body=body, status=401, content_type="application/json")


async def echoed(api: Any, secrets: list[str], caplog: pytest.LogCaptureFixture) -> None:
    """Every error path of the library against ``api`` and an informer's failures: none
    of what they raise, count or log holds ``secrets``."""
    errors = await each_path(api, "default")
    async with InformerFactory(api, watch_options=options()) as factory:
        inf = factory.informer("v1", "pods", namespace="informer")

        def failed_twice() -> bool:
            s = inf._watcher.statistics()
            return s.stream_errors + sum(s.errors_by_code.values()) >= 2

        await eventually(failed_twice, "two failures")
        stats = [inf.statistics(), inf._watcher.statistics()]
    assert len(errors) == 6, errors  # (the watch's ERROR event is the informer's to count)
    assert all(isinstance(e, AioinformerError) for e in errors)
    assert leaks([*errors, *stats, *caplog.records], secrets) == []


async def test_an_exec_plugin_token_echoed_by_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with hostile_server(echo_everything) as server:
        user = exec_user(tmp_path, credential(EXEC_TOKEN))
        async with await load_api_client(kubeconfig(tmp_path, server.url, user)) as api:
            await echoed(api, [EXEC_TOKEN], caplog)


async def test_a_basic_auth_password_echoed_in_every_form(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    plain = f"admin:{PASSWORD}"
    secrets = [PASSWORD, plain, base64.b64encode(plain.encode()).decode()]
    async with hostile_server(echo_everything) as server:
        user = {"username": "admin", "password": PASSWORD}
        async with await load_api_client(kubeconfig(tmp_path, server.url, user)) as api:
            await echoed(api, secrets, caplog)


@pytest.mark.parametrize("source", ["kubeconfig", "environment"])
async def test_proxy_credentials_echoed_by_the_proxy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """The credentials of the proxy URL (the kubeconfig's ``proxy-url``, or
    ``HTTP_PROXY`` from the environment, which aiohttp follows) sent as
    Proxy-Authorization, echoed by a proxy that refuses them (407): bare, decoded and as
    its password."""
    caplog.set_level(logging.DEBUG)
    plain = f"someone:{PROXY_PASSWORD}"
    secrets = [PROXY_PASSWORD, plain, base64.b64encode(plain.encode()).decode()]
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with hostile_server(echo_everything) as proxy:
        proxy_url = proxy.url.replace("http://", f"http://someone:{PROXY_PASSWORD}@")
        cluster = {"proxy-url": proxy_url} if source == "kubeconfig" else {}
        if source == "environment":
            monkeypatch.setenv("HTTP_PROXY", proxy_url)
        config = kubeconfig(tmp_path, "http://127.0.0.1:9", {"token": "t" * 40}, **cluster)
        async with await load_api_client(config) as api:
            errors = await each_path(api, "default")
    assert len(errors) == 7, errors
    assert any("407" in str(e) for e in errors), errors
    assert leaks([*errors, *caplog.records], secrets) == []


async def test_a_client_key_path_is_named_its_contents_never(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A kubeconfig's ``client-key`` path to a file that is no key (here a token, as a
    mistaken path gives): one ConfigError naming the path, without its contents."""
    caplog.set_level(logging.DEBUG)
    key = tmp_path / "client.key"
    key.write_text(f"-----BEGIN PRIVATE KEY-----\n{EXEC_TOKEN}\n-----END PRIVATE KEY-----\n")
    cert = tmp_path / "client.crt"
    cert.write_text(f"-----BEGIN CERTIFICATE-----\n{EXEC_TOKEN[::-1]}\n-----END CERTIFICATE-----\n")
    user = {"client-certificate": str(cert), "client-key": str(key)}
    config = kubeconfig(tmp_path, "https://127.0.0.1:9", user)
    with pytest.raises(ConfigError) as info:
        async with await load_api_client(config):
            pass
    assert str(key) in str(info.value) or str(cert) in str(info.value), info.value
    assert leaks([info.value, *caplog.records], [EXEC_TOKEN, EXEC_TOKEN[::-1]]) == []


def test_what_is_cut_from_a_plugin_error_and_what_stays() -> None:
    """Tokens by their shape (a JWT; 32+ token characters with a digit), while the words,
    paths and numbers that explain the failure stay."""
    path = "/home/someone/.local/bin/gke-gcloud-auth-plugin-0123456789abcdef"
    text = (
        f"exec: process returned 1. {path} failed: token {EXEC_TOKEN} and {JWT} rejected "
        "(HTTP 401, executable-not-found-in-path-at-all-of-them)"
    )
    assert clean_plugin_text(text) == (
        f"exec: process returned 1. {path} failed: token <redacted> and <redacted> rejected "
        "(HTTP 401, executable-not-found-in-path-at-all-of-them)"
    )

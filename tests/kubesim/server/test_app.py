"""KubeSim's HTTP surface: discovery over the wire, bad input, clean watch endings, the
command line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
import sys
from pathlib import Path
from typing import Any

import aiohttp

from aioinformer.testing import KubeSim
from tests.kubesim.registry.test_listing import pod
from tests.kubesim.server.test_watch import WatchReader, watch_params
from tests.support import transcript


async def get(
    http: aiohttp.ClientSession, path: str, **kw: Any
) -> tuple[int, Any, aiohttp.typedefs.LooseHeaders]:
    async with http.get(path, **kw) as r:
        return r.status, await r.json(content_type=None), r.headers


async def test_discovery_documents_over_http(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """15a /api, 15b /api/v1, 15c /apis, 15d /version, 15e aggregated /apis."""
    _, body, _ = await get(http, "/api")
    rec = transcript("15a-discovery-api")["response"]["body"]
    assert body["kind"] == rec["kind"] and body["versions"] == rec["versions"]
    assert body["serverAddressByClientCIDRs"] == [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{sim.port}"}
    ]
    _, body, _ = await get(http, "/api/v1")
    rec = transcript("15b-discovery-api-v1")["response"]["body"]
    ours = {r["name"]: r for r in body["resources"]}
    for want in rec["resources"]:
        assert ours[want["name"]] == want
    _, body, _ = await get(http, "/apis")
    rec = transcript("15c-discovery-apis")["response"]["body"]
    ours = {g["name"]: g for g in body["groups"]}
    for want in rec["groups"]:
        if want["name"] in ours:
            assert ours[want["name"]]["preferredVersion"] == want["preferredVersion"]
    assert {"apps", "coordination.k8s.io", "apiextensions.k8s.io"} <= set(ours)
    _, body, _ = await get(http, "/version")
    assert body == transcript("15d-version")["response"]["body"]
    rec15e = transcript("15e-aggregated-discovery-apis")
    accept = dict(rec15e["request"]["headers"])["Accept"]
    status, body, headers = await get(http, "/apis", headers={"Accept": accept})
    assert status == 200
    assert headers["Content-Type"] == rec15e["response"]["content_type"]
    assert body["kind"] == "APIGroupDiscoveryList"
    assert "apps" in [g["metadata"]["name"] for g in body["items"]]


async def test_anonymous_may_read_version_only(sim: KubeSim) -> None:
    async with aiohttp.ClientSession(base_url=sim.url) as s:
        async with s.get("/version") as r:
            assert r.status == 200
        async with s.get("/api") as r:
            assert r.status == 403
            assert (await r.json())["reason"] == "Forbidden"


async def test_bad_input_gets_the_servers_answer(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """Malformed JSON (400), unknown resources and paths (404), wrong content type (415),
    a body of the wrong kind (400): a Status every time, never a traceback or a hang."""
    base = "/api/v1/namespaces/default/pods"
    async with http.post(
        base, data=b"{not json", headers={"Content-Type": "application/json"}
    ) as r:
        body = await r.json()
        assert r.status == 400 and body["reason"] == "BadRequest"
        assert body["message"] == (
            "the object provided is unrecognized (must be of type Pod): couldn't get "
            "version/kind; json parse error: invalid character 'n' looking for beginning of "
            "object key string ({not json)"
        )
    async with http.post(base, data=b"[1, 2]", headers={"Content-Type": "application/json"}) as r:
        assert r.status == 400
    for path in (
        "/api/v1/namespaces/default/widgets",
        "/apis/nope.example/v1/things",
        "/api/v2/pods",
    ):
        async with http.get(path) as r:
            assert r.status == 404, path
            assert (await r.json())["kind"] == "Status"
    async with http.post(base, data=b"x", headers={"Content-Type": "text/plain"}) as r:
        assert r.status == 415
        assert (await r.json())["reason"] == "UnsupportedMediaType"
    async with http.post(
        base, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    ) as r:
        assert r.status == 400
    async with http.put(f"{base}/missing", json=pod("missing")) as r:
        assert r.status == 404
    async with http.get(f"{base}/x/exec") as r:
        assert r.status == 404
    async with http.get(base, params={"limit": "ten"}) as r:
        assert r.status == 400
    async with http.get(base, params={"watch": "1", "timeoutSeconds": "soon"}) as r:
        assert r.status == 400


async def test_custom_resource_bookmark_shape(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """README "BOOKMARK object": for a CR only apiVersion, kind and metadata.resourceVersion."""
    crd = transcript("13a-crd-create-established")["request"]["body"]
    sim.create("apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    await sim.wait_served("example.aioinformer.dev/v1/podsets")
    rv = str(sim.resource_version)
    async with http.get(
        "/apis/example.aioinformer.dev/v1/namespaces/default/podsets",
        params=watch_params(resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="3"),
    ) as r:
        sim.create("configmaps", {"metadata": {"name": "moves-rv"}}, "default")
        events = await WatchReader(r).events_until_eof()
    assert events == [
        {
            "type": "BOOKMARK",
            "object": {
                "apiVersion": "example.aioinformer.dev/v1",
                "kind": "PodSet",
                "metadata": {"resourceVersion": str(sim.resource_version)},
            },
        }
    ]


async def test_watch_timeout_is_a_clean_end(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """README "Watch timeout": the stream ends with the terminating zero-length chunk,
    which a client reads as a clean EOF (no payload error), and no final event."""
    async with http.get(
        "/api/v1/namespaces/default/pods",
        params=watch_params(resourceVersion="0", timeoutSeconds="1"),
    ) as r:
        data = await asyncio.wait_for(r.content.read(), 5)
        assert r.content.at_eof()
    assert data == b""


async def test_command_line_sim_serves_until_interrupted(tmp_path: Path) -> None:
    """python -m aioinformer sim --port 0 --kubeconfig-out PATH --nodes N."""
    kubeconfig = tmp_path / "sim.kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        "sim",
        "--port",
        "0",
        "--kubeconfig-out",
        str(kubeconfig),
        "--nodes",
        "2",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        url = ""
        while not url:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            assert line, "sim exited early"
            if "serving on" in line:
                url = line.split("serving on ", 1)[1].split()[0]
        assert url.startswith("https://127.0.0.1:")
        cfg = json.loads(kubeconfig.read_text())
        token = cfg["users"][0]["user"]["token"]
        cluster = cfg["clusters"][0]["cluster"]
        assert cluster["server"] == url
        ca = ssl.create_default_context(cafile=cluster["certificate-authority"])
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as s:
            async with s.get(f"{url}/api/v1/nodes", ssl=ca) as r:
                nodes = await r.json()
        assert [n["metadata"]["name"] for n in nodes["items"]] == ["node-0", "node-1"]
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_json_bodies_end_with_a_newline_as_recorded(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """The apiserver's encoder ends every JSON body with a newline (``body_ends_with_newline``
    and ``body_raw_len`` in 17a, 17b and 23a): error Status bodies, objects and lists alike,
    so a recorded error body is byte for byte what KubeSim sends."""
    sim.create("namespaces", {"metadata": {"name": "rec-dry-a"}})
    sim.create("namespaces", {"metadata": {"name": "rec-scale-a"}})
    cases = [
        next(w for w in transcript("17a")["writes"] if "cm-missing" in w["label"]),
        next(e for e in transcript("17b")["more_exchanges"] if "p3" in e["label"]),
        next(e for e in transcript("23a")["more_exchanges"] if "configmaps/x" in e["label"]),
    ]
    for case in cases:
        req, want = case["request"], case["response"]
        async with http.request(req["method"], req["path"]) as r:
            raw = await r.read()
        assert (r.status, raw) == (
            want["status"],
            json.dumps(want["body"], separators=(",", ":")).encode() + b"\n",
        )
        assert len(raw) == want["body_raw_len"] and want["body_ends_with_newline"]
    for path in ("/api/v1/namespaces/rec-dry-a", "/api/v1/namespaces", "/api/v1"):
        async with http.get(path) as r:
            assert (await r.read()).endswith(b"}\n"), path
    async with http.get("/version") as r:
        assert (await r.read()).endswith(b"}")  # json.MarshalIndent: no newline


async def test_command_line_sim_keeps_a_given_token(tmp_path: Path) -> None:
    """``sim --token-file`` (as ``--token``): the sim authenticates that token, writes it
    into the kubeconfig, refuses others and never prints it; a missing file is an error."""
    token_file = tmp_path / "token"
    token_file.write_text("fixed-token-for-restarts\n")
    kubeconfig = tmp_path / "sim.kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        "sim",
        "--port",
        "0",
        "--plain-http",
        "--token-file",
        str(token_file),
        "--kubeconfig-out",
        str(kubeconfig),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        url = ""
        while not url:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            assert line, "sim exited early"
            assert "fixed-token" not in line
            if "serving on" in line:
                url = line.split("serving on ", 1)[1].split()[0]
        cfg = json.loads(kubeconfig.read_text())
        assert cfg["users"][0]["user"]["token"] == "fixed-token-for-restarts"
        for token, status in (("fixed-token-for-restarts", 200), ("another", 401)):
            async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as s:
                async with s.get(f"{url}/api/v1/namespaces") as r:
                    assert r.status == status
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0
        assert b"fixed-token" not in out + err
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    missing = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        "sim",
        "--token-file",
        str(tmp_path / "nope"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(missing.communicate(), 30)
    assert missing.returncode == 2 and b"cannot read the token file" in err

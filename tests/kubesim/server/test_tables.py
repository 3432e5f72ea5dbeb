"""Tables over HTTP against the recordings (16d, 16e, 24a-24f): the recorded setups are
replayed, then every recorded Table request; columnDefinitions must equal the recorded ones,
cells too (ages are "<n>s", the objects being seconds old here), row objects as
includeObject asks; plus kubectl 1.28 / 1.33 ``get`` (-o wide, printer columns, --watch)."""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim
from tests.kubesim.kubectl import Kubectl, kubectl_binary
from tests.support import transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")

AGE = re.compile(r"^(\d+[smhdy])+$")  # HumanDuration: 0s, 3m17s, 5d2h
RECPODSETS = "rec.aioinformer.dev/v1/recpodsets"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim() -> AsyncIterator[KubeSim]:
    async with KubeSim(tls=True) as s:
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    assert sim.ca_file is not None
    conn = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=str(sim.ca_file)))
    headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers, connector=conn) as s:
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def recorded_state(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """The objects of 24a-24e, made by replaying the recorded setup requests (the Node
    in-process: KubeSim drops a Node's status on create, which the real server keeps)."""
    sim.create("customresourcedefinitions", transcript("23c")["setup"][0]["request"]["body"])
    await sim.wait_served(RECPODSETS)
    for step in transcript("24a")["setup"]:
        req = step["request"]
        if req["path"] == "/api/v1/nodes":
            sim.create("nodes", req["body"], keep_status=True)
            continue
        ctype = dict(req["headers"])["Content-Type"]
        async with http.request(
            req["method"],
            req["path"],
            data=orjson.dumps(req["body"]),
            headers={"Content-Type": ctype},
        ) as r:
            assert r.status == step["response"]["status"], (step["label"], await r.text())


def exchanges(name: str) -> list[dict[str, Any]]:
    rec = transcript(name)
    return [rec, *rec.get("more_exchanges", [])]


def same_cells(got: list[Any], want: list[Any], age_columns: set[int]) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if i in age_columns and isinstance(w, str) and AGE.match(w):
            assert isinstance(g, str) and re.fullmatch(r"\d+s", g), (i, g)  # seconds old here
        else:
            assert g == w and type(g) is type(w), (i, g, w)


async def check(http: aiohttp.ClientSession, exchange: dict[str, Any]) -> dict[str, Any]:
    req, want = exchange["request"], exchange["response"]
    accept = dict(req["headers"])["Accept"]
    async with http.get(req["path"], params=req["query"], headers={"Accept": accept}) as r:
        assert r.status == want["status"]
        assert r.headers["Content-Type"] == want["content_type"]
        got = orjson.loads(await r.read())
    body = want["body"]
    assert got["kind"] == "Table" and got["apiVersion"] == body["apiVersion"]
    assert list(got["metadata"]) == list(body["metadata"])
    assert got["columnDefinitions"] == body["columnDefinitions"]
    ages = {i for i, c in enumerate(body["columnDefinitions"]) if c["name"] == "Age"}
    assert [r["cells"][0] for r in got["rows"]] == [r["cells"][0] for r in body["rows"]]
    for g, w in zip(got["rows"], body["rows"], strict=True):
        same_cells(g["cells"], w["cells"], ages)
        assert list(g) == list(w)
        if w["object"] is None:
            assert g["object"] is None
        else:
            assert g["object"]["kind"] == w["object"]["kind"]
            assert g["object"]["apiVersion"] == w["object"]["apiVersion"]
            assert set(g["object"]) == set(w["object"])
            assert g["object"]["metadata"]["name"] == w["object"]["metadata"]["name"]
    return got


@pytest.mark.parametrize(
    "case",
    [
        "24a-table-pods",
        "24b-table-pods-includeobject-object",
        "24c-table-deployments",
        "24d-table-nodes",
    ],
)
async def test_builtin_tables_as_recorded(
    recorded_state: None, http: aiohttp.ClientSession, case: str
) -> None:
    for ex in exchanges(case):
        await check(http, ex)


async def test_custom_resource_printer_columns_as_recorded(
    recorded_state: None, http: aiohttp.ClientSession, sim: KubeSim
) -> None:
    """24e: typed cells, null for missing values, the date column as an age; a CRD without
    printer columns gets Name and Age."""
    for ex in exchanges("24e-table-cr-printercolumns"):
        if "/podsets" in ex["request"]["path"]:
            continue  # the recording server's own PodSet CRD: checked below
        await check(http, ex)
    original = next(ex for ex in exchanges("24e") if "/podsets" in ex["request"]["path"])
    crd = transcript("13a")["request"]["body"]
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    sim.create("customresourcedefinitions", crd)
    await sim.wait_served("example.aioinformer.dev/v1/podsets")
    sim.create("namespaces", {"metadata": {"name": "rec-ssa-a"}})
    sim.create(
        "example.aioinformer.dev/v1/podsets",
        {"metadata": {"name": "ssa-ps"}, "spec": {}},
        "rec-ssa-a",
    )
    await check(http, original)
    sim.delete("customresourcedefinitions", "podsets.example.aioinformer.dev")


async def test_single_object_table_and_16d_16e(
    recorded_state: None, http: aiohttp.ClientSession
) -> None:
    """The 16d/16e Table (another server, other pods) has the same columns; a GET is a
    one-row Table whose resourceVersion is the object's."""
    for name in ("16d-list-table", "16e-list-table-includeobject-metadata"):
        rec = transcript(name)
        accept = dict(rec["request"]["headers"])["Accept"]
        async with http.get(
            "/api/v1/namespaces/rec-table-a/pods",
            params=rec["request"]["query"],
            headers={"Accept": accept},
        ) as r:
            got = await r.json()
        assert got["columnDefinitions"] == rec["response"]["body"]["columnDefinitions"]
        assert {row["object"]["kind"] for row in got["rows"]} == {"PartialObjectMetadata"}
    async with http.get("/api/v1/namespaces/rec-table-a/pods/t-2") as r:
        rv = (await r.json())["metadata"]["resourceVersion"]
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    async with http.get("/api/v1/namespaces/rec-table-a/pods/t-2", headers={"Accept": accept}) as r:
        one = await r.json()
    assert one["metadata"] == {"resourceVersion": rv} and len(one["rows"]) == 1
    async with http.get(
        "/api/v1/namespaces/rec-table-a/pods",
        params={"includeObject": "All"},
        headers={"Accept": accept},
    ) as r:
        assert r.status == 400
        assert (await r.json())["message"] == 'unrecognized includeObject value: "All"'
    for bad in (
        "application/json;as=Table;v=v2;g=meta.k8s.io",
        "application/json;as=Table;g=example.com",
    ):
        async with http.get("/api/v1/namespaces/rec-table-a/pods", headers={"Accept": bad}) as r:
            assert r.status == 406


async def test_table_watch_as_recorded(recorded_state: None, http: aiohttp.ClientSession) -> None:
    """24f: one one-row Table per event, columnDefinitions on the first only, each Table's
    resourceVersion the object's."""
    rec = transcript("24f-watch-table")
    req = rec["request"]
    accept = dict(req["headers"])["Accept"]
    events = []
    async with http.get(req["path"], params=req["query"], headers={"Accept": accept}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == rec["response"]["content_type"]
        async for line in r.content:
            events.append(orjson.loads(line))
    want = [e["line"] for e in rec["response"]["events"]]
    assert [e["type"] for e in events] == [w["type"] for w in want]
    assert sorted(e["object"]["rows"][0]["cells"][0] for e in events) == sorted(
        w["object"]["rows"][0]["cells"][0] for w in want
    )
    assert events[0]["object"]["columnDefinitions"] == want[0]["object"]["columnDefinitions"]
    assert [e["object"]["columnDefinitions"] for e in events[1:]] == [None] * (len(events) - 1)
    for e in events:
        table = e["object"]
        assert table["kind"] == "Table" and len(table["rows"]) == 1
        row_object = table["rows"][0]["object"]
        assert row_object["kind"] == "PartialObjectMetadata"
        assert table["metadata"] == {"resourceVersion": row_object["metadata"]["resourceVersion"]}


@pytest.mark.parametrize("version", ["1.28", "1.33"])
async def test_kubectl_get_shows_the_real_columns(
    recorded_state: None, sim: KubeSim, tmp_path: Path, version: str
) -> None:
    kubectl = Kubectl(kubectl_binary(version), sim.write_kubeconfig(tmp_path / "kc"), tmp_path)
    out = (await kubectl.ok("get", "pods", "-n", "rec-table-a")).splitlines()
    assert out[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [line.split()[:4] for line in out[1:]] == [
        [f"t-{i}", "0/1", "Pending", "0"] for i in (1, 2, 3)
    ]
    wide = (await kubectl.ok("get", "pods", "-n", "rec-table-a", "-o", "wide")).splitlines()
    assert re.split(r"\s{2,}", wide[0]) == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED NODE",
        "READINESS GATES",
    ]
    assert wide[2].split()[5:] == ["<none>", "rec-node-1", "<none>", "<none>"]
    ps = (await kubectl.ok("get", "recpodsets", "-n", "rec-table-a")).splitlines()
    assert ps[0].split() == ["NAME", "DESIRED", "READY", "PHASE", "PAUSED", "AGE"]
    assert ps[1].split()[:5] == ["rps-a", "2", "1", "Running", "false"]
    # rps-b has no status: READY and PHASE are null, which kubectl prints as blanks
    header = ps[0]
    ready, phase = header.index("READY"), header.index("PHASE")
    assert ps[2][ready:phase].strip() == "" and ps[2].split()[:3] == ["rps-b", "0", "true"]
    ps_wide = (await kubectl.ok("get", "rps", "-n", "rec-table-a", "-o", "wide")).splitlines()
    assert "IMAGE" in ps_wide[0].split() and "busybox:1.36" in ps_wide[1].split()
    deploy = (await kubectl.ok("get", "deploy", "-n", "rec-table-a", "-o", "wide")).splitlines()
    assert deploy[0].split() == [
        "NAME",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    assert deploy[1].split()[:4] == ["t-dep", "0/3", "0", "0"]
    nodes = (await kubectl.ok("get", "nodes", "rec-node-1")).split()
    assert nodes[:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "rec-node-1"] and nodes[
        6:8
    ] == ["Ready", "worker"]


@pytest.mark.parametrize("version", ["1.28", "1.33"])
async def test_kubectl_get_watch_prints_rows_as_they_come(
    recorded_state: None, sim: KubeSim, tmp_path: Path, version: str
) -> None:
    kubectl = Kubectl(kubectl_binary(version), sim.write_kubeconfig(tmp_path / "kc"), tmp_path)
    ns = f"watched-{version.replace('.', '')}"
    sim.create("namespaces", {"metadata": {"name": ns}})
    sim.create(
        "pods",
        {"metadata": {"name": "w-0"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        ns,
    )
    proc = await asyncio.create_subprocess_exec(
        kubectl.binary,
        "--kubeconfig",
        str(kubectl.kubeconfig),
        "--cache-dir",
        str(tmp_path),
        "get",
        "pods",
        "-n",
        ns,
        "--watch",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        lines = []
        for _ in range(2):
            lines.append((await asyncio.wait_for(proc.stdout.readline(), 30)).decode())
        assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert lines[1].split()[:3] == ["w-0", "0/1", "Pending"]
        sim.create(
            "pods",
            {"metadata": {"name": "w-1"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
            ns,
        )
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.split()[:3] == ["w-1", "0/1", "Pending"]  # no second header
    finally:
        proc.kill()
        await proc.wait()

"""``/openapi/v2`` and ``/openapi/v3`` over HTTP: the recorded headers, ETags, 304, 301 and
caching (27a), CRD documents appearing and going with their CRD, and kubectl (1.28 and
1.33) using them: ``explain`` for a built-in field and a CRD field, ``apply``/``create``/
``replace -f`` with validation on."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import AsyncIterator
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio
import yaml

from aioinformer.testing import KubeSim
from tests.kubesim.discovery import test_openapi_v3_proto as v3
from tests.kubesim.kubectl import Kubectl, kubectl_binary
from tests.support import REPO, transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")

PODSET_CRD = yaml.safe_load((REPO / "examples/crds/podset.yaml").read_text())
PODSETS = "example.aioinformer.dev/v1/podsets"
SKIP = {"host", "user-agent", "content-length", "accept-encoding"}
PROTOBUF_V3 = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
PROTOBUF_V3_DEPRECATED = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim() -> AsyncIterator[KubeSim]:
    async with KubeSim(tls=True) as s:
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    import ssl

    assert sim.ca_file is not None
    ctx = ssl.create_default_context(cafile=str(sim.ca_file))
    headers = {"Authorization": f"Bearer {sim.token}"}
    conn = aiohttp.TCPConnector(ssl=ctx)
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers, connector=conn) as s:
        yield s


def exchanges(name: str) -> list[dict[str, Any]]:
    rec = transcript(name)
    return [rec, *rec.get("more_exchanges", [])]


def recorded_headers(exchange: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in exchange["response"]["headers"]:
        if k.lower() not in ("date", "content-length") and not k.startswith("X-Kubernetes-Pf"):
            out.setdefault(k.lower(), []).append(v)
    return out


async def replay(
    http: aiohttp.ClientSession, exchange: dict[str, Any]
) -> tuple[int, dict[str, list[str]], bytes]:
    """The recorded request again; a conditional one carries the document's current ETag
    (the recorded v2 document differs from the served one: another CRD was installed)."""
    req = exchange["request"]
    headers = {k: v for k, v in req["headers"] if k.lower() not in SKIP}
    if "If-None-Match" in headers:
        async with http.get(req["path"], headers={"Accept": "application/json"}) as r:
            headers["If-None-Match"] = r.headers["Etag"]
    if "Accept" not in headers:
        headers["Accept"] = ""
    async with http.get(
        req["path"],
        params=req["query"],
        headers=headers,
        allow_redirects=False,
    ) as r:
        got: dict[str, list[str]] = {}
        for k, v in r.headers.items():
            got.setdefault(k.lower(), []).append(v)
        return r.status, got, await r.read()


def assert_one_year_ahead(expires: str) -> None:
    assert re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d UTC", expires), expires
    when = parsedate_to_datetime(expires.removesuffix("UTC") + "GMT").timestamp()
    assert abs(when - (time.time() + 365 * 24 * 3600)) < 120


async def test_openapi_headers_as_recorded(http: aiohttp.ClientSession, sim: KubeSim) -> None:
    """27a, exchange by exchange: status, every recorded header (values where they do not
    depend on the document: Cache-Control, Vary, Accept-Ranges, Location's form), the ETag
    as the SHA-512 of the body, Content-Type, 304 without a body."""
    etags: dict[str, str] = {}
    for ex in exchanges("27a-openapi-headers"):
        label = ex.get("label", "GET /openapi/v2")
        want = recorded_headers(ex)
        status, got, body = await replay(http, ex)
        assert status == ex["response"]["status"], label
        assert set(got) - {"content-type", "content-length", "date", "server"} == set(want), label
        for key in ("cache-control", "vary", "accept-ranges"):
            assert got.get(key) == want.get(key), (label, key)
        ctype = ex["response"]["content_type"]
        if ctype is not None:
            assert got["content-type"] == [ctype], label
        else:
            assert "content-type" not in got, label
        if status == 200:
            assert len(body) > 1000
            if "etag" in want:
                digest = hashlib.sha512(body).hexdigest().upper()
                if "protobuf" not in (ctype or ""):
                    assert got["etag"] == [f'"{digest}"'], label
                etags[label] = got["etag"][0]
            assert parsedate_to_datetime(got["last-modified"][0]).tzname() == "UTC"
        if status in (301, 304):
            assert body == b""
        if "expires" in want:
            assert_one_year_ahead(got["expires"][0])
        if status == 301:
            assert got["location"] == [f"/openapi/v3/apis/apps/v1?hash={got['etag'][0][1:-1]}"]
    # the apps/v1 document is the recorded one: the recorded hash is its hash
    recorded_hash = next(
        ex["request"]["query"]["hash"]
        for ex in exchanges("27a-openapi-headers")
        if ex["request"]["query"].get("hash", "0000") != "0000"
    )
    assert etags["GET /openapi/v3/apis/apps/v1 (no hash)"] == f'"{recorded_hash}"'
    # the protobuf answers share the JSON's ETag, as recorded
    pb = "GET /openapi/v2 Accept application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    assert etags[pb] == etags["GET /openapi/v2"]
    pb3 = f"GET /openapi/v3/apis/apps/v1?hash=<current> Accept {PROTOBUF_V3_DEPRECATED}"
    assert etags[pb3] == f'"{recorded_hash}"'


async def test_protobuf_v2_starts_as_recorded(http: aiohttp.ClientSession) -> None:
    rec = next(
        ex
        for ex in exchanges("27a-openapi-headers")
        if ex["request"]["path"] == "/openapi/v2" and "body_first64_hex" in ex["response"]
    )
    status, _, body = await replay(http, rec)
    assert status == 200
    # swagger "2.0", info {Kubernetes, v1.28.0}, then the paths message
    head = bytes.fromhex(rec["response"]["body_first64_hex"])[:26]
    assert body[:26] == head


async def test_v3_index_lists_every_document_with_its_hash(http: aiohttp.ClientSession) -> None:
    async with http.get("/openapi/v3") as r:
        assert r.status == 200 and r.headers["Content-Type"] == "text/plain; charset=utf-8"
        index = orjson.loads(await r.read())["paths"]
    recorded = orjson.loads((REPO / "kubesim/src/kubesim/openapi/v3-index.json").read_bytes())[
        "paths"
    ]
    assert set(index) == set(recorded) - {"apis/example.aioinformer.dev/v1"}
    assert index["apis/apps/v1"] == recorded["apis/apps/v1"]
    for path in ("api/v1", "apis/coordination.k8s.io/v1", "version"):
        url = index[path]["serverRelativeURL"]
        async with http.get(url) as r:
            assert r.status == 200 and r.headers["Cache-Control"] == "public, immutable"
            assert f'"{url.rsplit("=", 1)[1]}"' == r.headers["Etag"]
    async with http.get("/openapi/v3/apis/nope/v1") as r:
        assert r.status == 404


async def test_protobuf_v3_is_the_recorded_message(http: aiohttp.ClientSession) -> None:
    """The recorded apps/v1 protobuf answer: its exact length and first 64 bytes (openapi
    "3.0.0", info {Kubernetes, v1.28.0}, the paths message and its first path item)."""
    rec = next(
        ex
        for ex in exchanges("27a-openapi-headers")
        if ex.get("label", "").endswith("spec.v3@v1.0+protobuf")
    )
    status, got, body = await replay(http, rec)
    assert status == 200
    assert got["content-type"] == [PROTOBUF_V3]
    assert len(body) == rec["response"]["body_raw_len"]
    assert body[:64] == bytes.fromhex(rec["response"]["body_first64_hex"])


@pytest.mark.parametrize(
    ("accept", "served"),
    [
        (PROTOBUF_V3, PROTOBUF_V3),
        (PROTOBUF_V3_DEPRECATED, PROTOBUF_V3),
        (f"{PROTOBUF_V3}, application/json", PROTOBUF_V3),  # the first clause wins
        (f"application/json, {PROTOBUF_V3}", "application/json"),
        (f"application/json;q=0.5, {PROTOBUF_V3}", PROTOBUF_V3),  # then the higher q
        (f"*/*, {PROTOBUF_V3}", PROTOBUF_V3),  # then the more specific
        ("application/*", "application/json"),
        ("", "application/json"),
        ("text/html", None),
        ("application/yaml, text/plain", None),
        ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", None),
    ],
)
async def test_v3_content_negotiation(
    http: aiohttp.ClientSession, accept: str, served: str | None
) -> None:
    """kube-openapi's choice among JSON and the v3 protobuf; neither admitted is a 406 with
    an empty body and ``Vary: Accept``."""
    async with http.get("/openapi/v3/apis/apps/v1", headers={"Accept": accept}) as r:
        body = await r.read()
        if served is None:
            assert r.status == 406 and body == b""
            assert r.headers.getall("Vary") == ["Accept"]
            return
        assert r.status == 200 and r.headers["Content-Type"] == served
    if served == "application/json":
        assert orjson.loads(body)["openapi"] == "3.0.0"
    else:
        assert body.startswith(b"\x0a\x053.0.0")


async def test_v2_content_negotiation(http: aiohttp.ClientSession) -> None:
    pb = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    async with http.get("/openapi/v2", headers={"Accept": f"{pb}, application/json"}) as r:
        assert r.headers["Content-Type"] == pb.replace("@", ".")
    async with http.get("/openapi/v2", headers={"Accept": PROTOBUF_V3}) as r:
        assert r.status == 406 and await r.read() == b""
        assert r.headers.getall("Vary") == ["Accept-Encoding", "Accept"]


async def test_protobuf_v3_caching_headers(http: aiohttp.ClientSession) -> None:
    """The protobuf form under the JSON's ETag: 304 for it, 301 for a wrong hash (with the
    protobuf Content-Type, as kube-openapi sets it before redirecting), immutable with the
    current hash."""
    async with http.get("/openapi/v3/apis/batch/v1") as r:
        etag = r.headers["Etag"]
        json_modified = r.headers["Last-Modified"]
    accept = {"Accept": PROTOBUF_V3}
    async with http.get("/openapi/v3/apis/batch/v1", headers=accept) as r:
        assert r.status == 200 and r.headers["Etag"] == etag
        assert r.headers["Cache-Control"] == "no-cache, private"
        assert r.headers["Last-Modified"] == json_modified
    async with http.get(
        "/openapi/v3/apis/batch/v1", headers={**accept, "If-None-Match": etag}
    ) as r:
        assert r.status == 304 and await r.read() == b""
    async with http.get(
        "/openapi/v3/apis/batch/v1?hash=0000", headers=accept, allow_redirects=False
    ) as r:
        assert r.status == 301 and r.headers["Content-Type"] == PROTOBUF_V3
        assert r.headers["Location"] == f"/openapi/v3/apis/batch/v1?hash={etag[1:-1]}"
    async with http.get(f"/openapi/v3/apis/batch/v1?hash={etag[1:-1]}", headers=accept) as r:
        assert r.status == 200 and r.headers["Cache-Control"] == "public, immutable"
        assert_one_year_ahead(r.headers["Expires"])


async def test_anonymous_may_not_read_openapi(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    async with http.get("/openapi/v2", headers={"Authorization": ""}) as r:
        assert r.status == 403
        body = await r.json()
    assert body["message"] == 'forbidden: User "system:anonymous" cannot get path "/openapi/v2"'


async def test_crd_schema_appears_in_v3_and_v2_and_goes_with_the_crd(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    async with http.get("/openapi/v2") as r:
        etag_before = r.headers["Etag"]
        assert (
            "dev.aioinformer.example.v1.PodSet" not in orjson.loads(await r.read())["definitions"]
        )
    crd = dict(PODSET_CRD, metadata={"name": "widgets.things.example.com"})
    crd["spec"] = {
        **PODSET_CRD["spec"],
        "group": "things.example.com",
        "scope": "Cluster",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    }
    sim.create("customresourcedefinitions", crd)
    await sim.wait_served("things.example.com/v1/widgets")
    async with http.get("/openapi/v3") as r:
        url = orjson.loads(await r.read())["paths"]["apis/things.example.com/v1"][
            "serverRelativeURL"
        ]
    async with http.get(url) as r:
        doc = await r.json()
    schema = doc["components"]["schemas"]["com.example.things.v1.Widget"]
    spec_schema = PODSET_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"
    ]
    assert schema["properties"]["spec"] == spec_schema
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert sorted(doc["paths"]) == [
        "/apis/things.example.com/v1/widgets",
        "/apis/things.example.com/v1/widgets/{name}",
        "/apis/things.example.com/v1/widgets/{name}/status",
    ]
    patch = doc["paths"]["/apis/things.example.com/v1/widgets/{name}"]["patch"]
    assert patch["operationId"] == "patchThingsExampleComV1Widget"
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    async with http.get("/openapi/v2") as r:
        assert r.headers["Etag"] != etag_before
        v2 = orjson.loads(await r.read())
    assert v2["definitions"]["com.example.things.v1.Widget"]["properties"]["spec"]["required"] == [
        "replicas",
        "template",
    ]
    assert "/apis/things.example.com/v1/widgets/{name}" in v2["paths"]
    sim.delete("customresourcedefinitions", "widgets.things.example.com")
    async with http.get("/openapi/v3") as r:
        assert "apis/things.example.com/v1" not in orjson.loads(await r.read())["paths"]
    async with http.get(url) as r:
        assert r.status == 404
    async with http.get("/openapi/v2") as r:
        assert r.headers["Etag"] == etag_before


async def test_a_crd_group_version_is_served_as_protobuf(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    sim.create("customresourcedefinitions", PODSET_CRD)
    await sim.wait_served("example.aioinformer.dev/v1/podsets")
    async with http.get("/openapi/v3") as r:
        index = orjson.loads(await r.read())["paths"]
    url = index["apis/example.aioinformer.dev/v1"]["serverRelativeURL"]
    async with http.get(url) as r:
        etag = r.headers["Etag"]
        doc: dict[str, Any] = await r.json()
    async with http.get(url, headers={"Accept": PROTOBUF_V3}) as r:
        assert r.status == 200 and r.headers["Content-Type"] == PROTOBUF_V3
        assert r.headers["Etag"] == etag and r.headers["Cache-Control"] == "public, immutable"
        top = v3.decode(await r.read())
    assert list(v3.named(v3.decode(top[4][0]), 1)) == list(doc["paths"])
    schemas = v3.pairs(v3.decode(top[5][0])[1][0])
    assert list(schemas) == list(doc["components"]["schemas"])
    podset = v3.schema(schemas["dev.aioinformer.example.v1.PodSet"])
    assert v3.extensions(podset, 36)["x-kubernetes-group-version-kind"] == (
        "- group: example.aioinformer.dev\n  kind: PodSet\n  version: v1\n"
    )
    spec = v3.schema(v3.pairs(podset[31][0])["spec"])
    json_spec = PODSET_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert list(v3.pairs(spec[31][0])) == list(json_spec["properties"])
    assert [r.decode() for r in spec[23]] == json_spec["required"]
    # the CRD goes: its document, in either form, goes with it
    sim.delete("customresourcedefinitions", PODSET_CRD["metadata"]["name"])
    async with http.get(url, headers={"Accept": PROTOBUF_V3}) as r:
        assert r.status == 404


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: c
        image: busybox:1.36
"""
PODSET = """\
apiVersion: example.aioinformer.dev/v1
kind: PodSet
metadata:
  name: {name}
spec:
  replicas: {replicas}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: c, image: busybox:1.36}}]}}
"""


@pytest.mark.parametrize("version", ["1.28", "1.33"])
async def test_kubectl_explain_and_validated_writes(
    sim: KubeSim, tmp_path: Path, version: str
) -> None:
    kubectl = Kubectl(kubectl_binary(version), sim.write_kubeconfig(tmp_path / "kc"), tmp_path)
    out = await kubectl.ok("explain", "pods.spec.containers")
    assert "FIELD: containers <[]Container>" in out
    assert "image\t<string>" in out
    if "podsets.example.aioinformer.dev" not in {
        c["metadata"]["name"] for c in sim.list("customresourcedefinitions")
    }:
        await kubectl.ok("create", "-f", str(REPO / "examples/crds/podset.yaml"))
        await sim.wait_served(PODSETS)
    out = await kubectl.ok("explain", "podsets.spec")
    assert "KIND:       PodSet" in out
    assert re.search(r"replicas\s+<integer> -required-", out)
    assert "A pod template (metadata.labels and a pod spec)." in out
    name = f"web-{version.replace('.', '')}"
    dep = tmp_path / "dep.yaml"
    dep.write_text(DEPLOYMENT.format(name=name, replicas=1))
    assert (await kubectl.ok("create", "-f", str(dep))).strip() == f"deployment.apps/{name} created"
    dep.write_text(DEPLOYMENT.format(name=name, replicas=2))
    assert (
        await kubectl.ok("apply", "-f", str(dep))
    ).strip() == f"deployment.apps/{name} configured"
    assert sim.get("deployments", name, "default")["spec"]["replicas"] == 2
    dep.write_text(DEPLOYMENT.format(name=name, replicas=3))
    assert (
        await kubectl.ok("replace", "-f", str(dep))
    ).strip() == f"deployment.apps/{name} replaced"
    assert sim.get("deployments", name, "default")["spec"]["replicas"] == 3
    ps = tmp_path / "ps.yaml"
    ps.write_text(PODSET.format(name=name, replicas=1))
    out = await kubectl.ok("apply", "-f", str(ps))
    assert out.strip() == f"podset.example.aioinformer.dev/{name} created"
    ps.write_text(PODSET.format(name=name, replicas=4))
    await kubectl.ok("apply", "-f", str(ps))
    assert sim.get(PODSETS, name, "default")["spec"]["replicas"] == 4

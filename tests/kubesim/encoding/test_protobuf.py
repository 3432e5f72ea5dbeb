"""Protobuf request bodies and protobuf answers, over HTTP and through kubectl."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim, eventually
from kubesim.encoding.protobuf import MAGIC, decode_object
from tests.kubesim.differential.protobuf import watch_frames
from tests.kubesim.replay import recorded_podset_crd
from tests.support import transcript

MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
PB = "application/vnd.kubernetes.protobuf"
KUBECTL_DIR = Path("/usr/lib/google-cloud-sdk/bin")


# a minimal protobuf writer, enough to build what client-go sends
def varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def ld(num: int, payload: bytes) -> bytes:
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vi(num: int, value: int) -> bytes:
    return varint(num << 3) + varint(value)


def s(num: int, text: str) -> bytes:
    return ld(num, text.encode())


def entry(num: int, k: str, v: bytes) -> bytes:
    return ld(num, s(1, k) + ld(2, v))


def object_meta(name: str, **labels: str) -> bytes:
    # as gogo-protobuf writes it: every non-pointer field, empty or not
    out = s(1, name) + s(2, "") + s(3, "") + s(4, "") + s(5, "") + s(6, "") + vi(7, 0)
    out += ld(8, b"")  # creationTimestamp: the zero Time
    for k, v in labels.items():
        out += entry(11, k, v.encode())
    return out


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return MAGIC + ld(1, s(1, api_version) + s(2, kind)) + ld(2, raw) + s(3, "") + s(4, "")


def configmap(name: str) -> bytes:
    raw = ld(1, object_meta(name, app="pb")) + entry(2, "k", b"v") + entry(3, "bin", b"\x00\x01")
    return envelope("v1", "ConfigMap", raw)


def test_decodes_a_configmap_as_its_json_twin() -> None:
    assert decode_object(configmap("cm")) == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "cm", "labels": {"app": "pb"}, "creationTimestamp": None},
        "data": {"k": "v"},
        "binaryData": {"bin": "AAE="},
    }


def test_pointer_fields_keep_zero_values_and_structs_stay_objects() -> None:
    container = s(1, "c") + s(2, "img") + ld(8, b"") + vi(16, 0)
    pod_spec = ld(2, container) + vi(4, 0)  # terminationGracePeriodSeconds: 0 is a value
    template = ld(1, object_meta("")) + ld(2, pod_spec)
    spec = vi(1, 0) + ld(3, template) + ld(4, s(1, "")) + vi(5, 0)
    raw = ld(1, object_meta("d")) + ld(2, spec) + ld(3, vi(1, 0) + vi(2, 0))
    obj = decode_object(envelope("apps/v1", "Deployment", raw))
    assert obj["spec"]["replicas"] == 0
    assert obj["spec"]["strategy"] == {} and obj["status"] == {}
    tmpl = obj["spec"]["template"]
    assert tmpl["metadata"] == {"creationTimestamp": None}
    assert tmpl["spec"] == {
        "containers": [{"name": "c", "image": "img", "resources": {}}],
        "terminationGracePeriodSeconds": 0,
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tls_sim() -> AsyncIterator[KubeSim]:
    async with KubeSim(tls=True) as sim:
        sim.create("namespaces", {"metadata": {"name": "pb"}})
        sim.create("customresourcedefinitions", recorded_podset_crd())
        await sim.wait_served("podsets")
        podset = {"apiVersion": "example.aioinformer.dev/v1", "kind": "PodSet",
                  "metadata": {"name": "w"}, "spec": {"replicas": 1}}  # fmt: skip
        sim.create("podsets", podset, "pb")
        yield sim


@pytest_asyncio.fixture(loop_scope="module")
async def http(tls_sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    import ssl

    ctx = ssl.create_default_context(cafile=str(tls_sim.ca_file))
    headers = {"Authorization": f"Bearer {tls_sim.token}"}
    conn = aiohttp.TCPConnector(ssl=ctx)
    async with aiohttp.ClientSession(base_url=tls_sim.url, headers=headers, connector=conn) as s:
        yield s


@MODULE_LOOP
async def test_protobuf_post_creates_the_object(http: aiohttp.ClientSession) -> None:
    async with http.post(
        "/api/v1/namespaces/pb/configmaps",
        data=configmap("from-pb"),
        headers={"Content-Type": PB, "Accept": f"{PB},application/json"},
    ) as r:
        assert r.status == 201
        assert r.content_type == PB  # the first the client accepts, as kube-apiserver does
        body = decode_object(await r.read())
    assert body["data"] == {"k": "v"} and body["metadata"]["labels"] == {"app": "pb"}
    assert body["metadata"]["managedFields"][0]["fieldsV1"]["f:data"] == {".": {}, "f:k": {}}


@MODULE_LOOP
async def test_undecodable_protobuf_gets_an_honest_415(http: aiohttp.ClientSession) -> None:
    podset = envelope("example.aioinformer.dev/v1", "PodSet", ld(1, object_meta("p")))
    bad_field = envelope("v1", "ConfigMap", ld(1, object_meta("x")) + vi(99, 1))
    for body, why in [
        (podset, "does not decode protobuf PodSet"),
        (bad_field, "field 99 of ConfigMap"),
    ]:
        async with http.post(
            "/api/v1/namespaces/pb/configmaps", data=body, headers={"Content-Type": PB}
        ) as r:
            assert r.status == 415
            status = await r.json()
        assert status["reason"] == "UnsupportedMediaType"
        assert status["message"].startswith(
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml, application/vnd.kubernetes.protobuf "
            "(KubeSim: "
        )
        assert why in status["message"]


async def _get(http: aiohttp.ClientSession, path: str, accept: str) -> tuple[int, str, bytes]:
    async with http.get(path, headers={"Accept": accept}) as r:
        return r.status, r.headers["Content-Type"], await r.read()


@MODULE_LOOP
async def test_built_in_kinds_are_answered_as_protobuf_when_asked_first(
    http: aiohttp.ClientSession,
) -> None:
    """28a: protobuf first gets protobuf (a GET, a LIST, an error), the same object as the
    JSON answer; JSON first gets JSON."""
    path = "/api/v1/namespaces/pb/configmaps/from-pb"
    _, _, as_json = await _get(http, path, "application/json")
    for accept in (PB, f"{PB}, application/json", f"{PB};stream=watch"):
        status, ctype, raw = await _get(http, path, accept)
        assert (status, ctype) == (200, PB) and raw.startswith(MAGIC)
        assert decode_object(raw) == json.loads(as_json)
    status, ctype, _ = await _get(http, path, f"application/json, {PB}")
    assert (status, ctype) == (200, "application/json")
    status, ctype, raw = await _get(http, "/api/v1/namespaces/pb/configmaps", PB)
    listed = decode_object(raw)
    assert (status, ctype, listed["kind"]) == (200, PB, "ConfigMapList")
    assert "from-pb" in [item["metadata"]["name"] for item in listed["items"]]
    status, ctype, raw = await _get(http, "/api/v1/namespaces/pb/configmaps/missing", PB)
    missing = decode_object(raw)
    assert (status, ctype, missing["kind"], missing["reason"]) == (404, PB, "Status", "NotFound")
    assert missing["message"] == 'configmaps "missing" not found'


@MODULE_LOOP
async def test_custom_resources_are_never_protobuf(http: aiohttp.ClientSession) -> None:
    """28a: a CR with 'protobuf, application/json' gets JSON; protobuf alone is a 406 whose
    Status is itself protobuf."""
    rec = {ex["label"]: ex for ex in transcript("28a")["more_exchanges"]}
    only = rec["GET RecPodSet (CR) Accept application/vnd.kubernetes.protobuf only"]
    path = "/apis/example.aioinformer.dev/v1/namespaces/pb/podsets/w"
    status, ctype, _ = await _get(http, path, f"{PB}, application/json")
    assert (status, ctype) == (200, "application/json")
    status, ctype, raw = await _get(http, path, PB)
    assert (status, ctype) == (only["response"]["status"], only["response"]["content_type"])
    assert len(raw) == only["response"]["body_raw_len"]
    assert raw[:64].hex() == only["response"]["body_first64_hex"]
    assert decode_object(raw)["message"] == (
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf"
    )


def watch_events(raw: bytes) -> list[dict[str, Any]]:
    """A protobuf watch stream's events, their objects decoded."""
    return [{"type": kind, "object": decode_object(obj)} for kind, obj in watch_frames(raw)]


@MODULE_LOOP
async def test_a_protobuf_watch_sends_length_prefixed_frames(
    tls_sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """28a: ``stream=watch`` Content-Type; each event a 4-byte length and a WatchEvent whose
    object is the enveloped object; bookmarks and a 410 ERROR are frames too."""
    tls_sim.create("configmaps", {"metadata": {"name": "watched"}, "data": {"a": "1"}}, "pb")
    query = {"watch": "1", "resourceVersion": "0", "timeoutSeconds": "1",
             "allowWatchBookmarks": "true", "fieldSelector": "metadata.name=watched"}  # fmt: skip
    async with http.get("/api/v1/namespaces/pb/configmaps", params=query,
                        headers={"Accept": PB}) as r:  # fmt: skip
        assert r.headers["Content-Type"] == f"{PB};stream=watch"
        raw = await r.read()
    events = watch_events(raw)
    assert events[0]["type"] == "ADDED"
    assert events[0]["object"]["metadata"]["name"] == "watched"
    assert events[0]["object"]["data"] == {"a": "1"}
    query = {"watch": "1", "resourceVersion": "1", "timeoutSeconds": "1"}
    tls_sim.compact()
    async with http.get("/api/v1/namespaces/pb/configmaps", params=query,
                        headers={"Accept": PB}) as r:  # fmt: skip
        (error,) = watch_events(await r.read())
    assert error["type"] == "ERROR" and error["object"]["code"] == 410


def kubectl(version: str) -> Path:
    path = KUBECTL_DIR / f"kubectl.{version}"
    if not os.access(path, os.X_OK):
        pytest.skip(f"kubectl {version} is not installed at {path}")
    return path


async def run(*argv: str | Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *map(str, argv), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode or 0, out.decode()


@MODULE_LOOP
@pytest.mark.parametrize("version", ["1.32", "1.33"])
async def test_kubectl_creates_with_protobuf_and_reads_and_watches(
    tls_sim: KubeSim, version: str, tmp_path: Path
) -> None:
    """kubectl >= 1.32 sends the generator kinds as protobuf (and never retries as JSON),
    accepting protobuf first: it reads KubeSim's protobuf answers."""
    k = kubectl(version)
    cfg = tls_sim.write_kubeconfig(tmp_path / "kubeconfig")
    tag = version.replace(".", "")
    base = [k, "--kubeconfig", cfg, "-n", "pb"]
    for args in (
        ["create", "namespace", f"ns{tag}"],
        ["create", "configmap", f"cm{tag}", "--from-literal=a=b"],
        ["create", "deployment", f"d{tag}", "--image=busybox", "--replicas=2", "--port=80"],
        ["create", "service", "clusterip", f"svc{tag}", "--tcp=80:8080"],
    ):
        rc, out = await run(*base, *args)
        assert rc == 0, out
    dep = tls_sim.get("deployments", f"d{tag}", "pb")
    assert dep["spec"]["replicas"] == 2
    port = dep["spec"]["template"]["spec"]["containers"][0]["ports"][0]
    assert port == {"containerPort": 80, "protocol": "TCP"}
    assert tls_sim.get("configmaps", f"cm{tag}", "pb")["data"] == {"a": "b"}
    manifest = tmp_path / "cm.json"
    manifest.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"file{tag}"},
                "data": {"x": "1"},
            }
        )
    )
    for args in (["create", "-f", manifest], ["apply", "-f", manifest]):
        rc, out = await run(*base, *args, "--validate=false")
        assert rc == 0, out
    rc, out = await run(*base, "get", "configmaps", "-o", "name")
    assert rc == 0 and f"configmap/cm{tag}" in out and f"configmap/file{tag}" in out
    # a watch that sees one change, then its timeout ends it
    watch = await asyncio.create_subprocess_exec(
        *map(
            str,
            [*base, "get", "configmap", f"cm{tag}", "-w", "-o", "name", "--request-timeout=20s"],
        ),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        assert watch.stdout is not None
        first = await asyncio.wait_for(watch.stdout.readline(), 20)
        assert first.decode().strip() == f"configmap/cm{tag}"
        # kubectl GETs, prints, then watches from RV 0: change the object only once the
        # watch is open (an earlier change would only be in the watch's initial state)
        await eventually(lambda: tls_sim.open_watches > 0, "kubectl get -w to open its watch")
        tls_sim.patch("configmaps", f"cm{tag}", {"data": {"a": "c"}}, namespace="pb")
        second = await asyncio.wait_for(watch.stdout.readline(), 20)
        assert second.decode().strip() == f"configmap/cm{tag}"
    finally:
        if watch.returncode is None:
            watch.kill()
        await watch.wait()


def metadata_accept(as_: str) -> str:
    """The Accept of client-go's metadata client (protobuf first)."""
    view = f"as={as_};g=meta.k8s.io;v=v1"
    return f"{PB};{view},application/json;{view},application/json"


@MODULE_LOOP
@pytest.mark.parametrize(
    "collection",
    ["/api/v1/namespaces/pb/configmaps", "/apis/example.aioinformer.dev/v1/namespaces/pb/podsets"],
)
async def test_metadata_views_are_protobuf_for_any_kind(
    http: aiohttp.ClientSession, collection: str
) -> None:
    """The metadata client's protobuf PartialObjectMetadata(List) views: for built-in kinds
    and custom resources alike, the metadata of the JSON view, in list and watch too."""
    json_list_accept = metadata_accept("PartialObjectMetadataList").split(",", 1)[1]
    _, _, as_json = await _get(http, collection, json_list_accept)
    status, ctype, raw = await _get(http, collection, metadata_accept("PartialObjectMetadataList"))
    listed = decode_object(raw)
    assert (status, ctype, listed["kind"]) == (200, PB, "PartialObjectMetadataList")
    assert listed["apiVersion"] == "meta.k8s.io/v1"
    assert [i["metadata"] for i in listed["items"]] == [
        i["metadata"] for i in json.loads(as_json)["items"]
    ]
    name = listed["items"][0]["metadata"]["name"]
    status, ctype, raw = await _get(
        http, f"{collection}/{name}", metadata_accept("PartialObjectMetadata")
    )
    one = decode_object(raw)
    assert (status, ctype, one["kind"]) == (200, PB, "PartialObjectMetadata")
    assert one["metadata"] == listed["items"][0]["metadata"]
    query = {"watch": "1", "resourceVersion": "0", "timeoutSeconds": "1"}
    accept = metadata_accept("PartialObjectMetadata")
    async with http.get(collection, params=query, headers={"Accept": accept}) as r:
        assert r.headers["Content-Type"] == f"{PB};stream=watch"
        events = watch_events(await r.read())
    assert {e["object"]["kind"] for e in events} == {"PartialObjectMetadata"}
    assert name in [e["object"]["metadata"]["name"] for e in events]

"""Request bodies: the 3 MiB cap (413 + Connection: close, the rest never read), JSON
syntax and depth errors in Go's words (25a, 25d), YAML bodies (25e, 25b)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import orjson
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim
from kubesim.encoding import deepjson
from kubesim.errors import KubeSimApiError
from kubesim.server.bodies import parse
from kubesim.server.undecodable import summarize
from tests.kubesim.replay import (
    bad_input_namespace,
    described_depth,
    exchange,
    exchanges,
    nested,
    recorded_warnings,
    send_exchange,
)

in_module_loop = pytest.mark.asyncio(loop_scope="module")

NS = "rec-bad-a"
CM = f"/api/v1/namespaces/{NS}/configmaps"
RPS = f"/apis/rec.aioinformer.dev/v1/namespaces/{NS}/recpodsets"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim() -> AsyncIterator[KubeSim]:
    async with KubeSim() as s:
        await bad_input_namespace(s)
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as s:
        yield s


async def raw_request(sim: KubeSim, head: bytes, body: bytes) -> tuple[bytes, bytes]:
    """Send ``head`` + ``body`` on a fresh connection; the response head and body read
    until the server closes (a hang fails the test after 30 s)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", sim.port)
    try:
        writer.write(head + body)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    head_part, _, rest = data.partition(b"\r\n\r\n")
    return head_part, rest


@in_module_loop
async def test_a_body_over_3_mib_is_413_and_the_connection_closes(sim: KubeSim) -> None:
    """25c: a 3.5 MiB ConfigMap. The server answers at the limit and closes: it reads
    neither the rest of this body nor anything else on the connection."""
    ex = exchange("25c-body-size-limits", "ConfigMap with 3.5 MiB")
    want = ex["response"]
    token = sim.token
    for length in (3670102, 100 * 1024 * 1024):  # as recorded, and 100 MiB announced
        head = (
            f"POST {CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
        ).encode()
        resp_head, resp_body = await raw_request(sim, head, b'{"apiVersion":"v1"' + b" " * 4096)
        assert resp_head.startswith(b"HTTP/1.1 413 Request Entity Too Large"), resp_head
        assert b"\r\nConnection: close\r\n" in resp_head + b"\r\n"
        assert orjson.loads(resp_body) == want["body"]
    # chunked, no Content-Length: counted as it arrives
    head = (
        f"POST {CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b"x" * 65536
    body = (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 49 + b"0\r\n\r\n"
    resp_head, resp_body = await raw_request(sim, head, body)
    assert resp_head.startswith(b"HTTP/1.1 413 ") and orjson.loads(resp_body) == want["body"]


@in_module_loop
async def test_nesting_depth_as_recorded(http: aiohttp.ClientSession, sim: KubeSim) -> None:
    """25d: 20000 levels in a string are fine; as an object where a string belongs it is a
    type error up to 10000 levels and the max-depth error beyond (checked first); inside a
    preserve-unknown-fields CR field 200 and 2000 levels are stored and returned."""
    for ex in exchanges("25d-json-nesting-depth"):
        got = await send_exchange(http, ex, described_depth(ex))
        want = ex["response"]
        assert got.status == want["status"], ex.get("label")
        if want["body"] is not None and want["body"]["kind"] == "Status":
            assert got.body == want["body"], ex.get("label")
    async with http.get(f"{RPS}/nest-2000") as r:
        stored = deepjson.loads(await r.read())
    depth, level = 0, stored["spec"]["template"]
    while isinstance(level, dict):
        depth, level = depth + 1, level["a"]
    assert depth == 2000 and level == 1
    fields, levels = stored["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"], 0
    while "f:a" in fields:
        fields, levels = fields["f:a"], levels + 1
    assert levels == 2000  # managedFields track every level, as recorded


@in_module_loop
async def test_yaml_bodies_as_recorded(http: aiohttp.ClientSession) -> None:
    """25e: anchors and aliases expanded, a merge override warned about with its line, a
    billion-laughs body refused before anything is expanded, a YAML answer; 25b's YAML
    body under Strict."""
    for ex in exchanges("25e-yaml-anchors"):
        got = await send_exchange(http, ex)
        want = ex["response"]
        assert got.status == want["status"], ex.get("label")
        assert got.warnings == recorded_warnings(ex), ex.get("label")
        if isinstance(want["body"], dict) and want["body"]["kind"] == "Status":
            assert got.body == want["body"]
        elif isinstance(want["body"], dict):
            assert got.body["metadata"].get("labels") == want["body"]["metadata"].get("labels")
            assert got.body["metadata"].get("annotations") == want["body"]["metadata"].get(
                "annotations"
            )
            assert got.body["data"] == want["body"]["data"]
        else:
            assert got.headers["Content-Type"].startswith("application/yaml")
            assert "kind: ConfigMap\n" in got.body and "  k: v\n" in got.body
    ex = exchange("25b-field-validation", "YAML body")
    got = await send_exchange(http, ex)
    assert (got.status, got.body) == (400, ex["response"]["body"])


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        (b'{"a":1', "unexpected end of JSON input"),
        (b'{"a":1}x', "invalid character 'x' after top-level value"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
        (b"[1 2]", "invalid character '2' after array element"),
        (b"{1:2}", "invalid character '1' looking for beginning of object key string"),
        (b'{"a":}', "invalid character '}' looking for beginning of value"),
        (b'{"a":"\x01"}', "invalid character '\\x01' in string literal"),
        (b'{"a":"\\q"}', "invalid character 'q' in string escape code"),
        (b'{"a":tru}', "invalid character '}' in literal true (expecting 'e')"),
        (b'{"a":NaN}', "invalid character 'N' looking for beginning of value"),
    ],
)
def test_json_syntax_errors_are_gos(raw: bytes, detail: str) -> None:
    with pytest.raises(KubeSimApiError) as info:
        parse(raw, "application/json", "Deployment")
    assert info.value.code == 400
    assert info.value.body["message"] == (
        "the object provided is unrecognized (must be of type Deployment): couldn't get "
        f"version/kind; json parse error: {detail} ({summarize(raw)})"
    )


def test_summaries_and_duplicates() -> None:
    assert (
        summarize(b'{"apiVersion":"apps/v1","kind":"Deployment"}')
        == '{"apiVersion":"apps/v1","kind" ...'
    )
    assert summarize(b"[1]") == "5b315d"
    assert summarize(b"") == "<empty>"
    body = parse(b'{"a":{"b":1,"b":2},"a":{"c":3}}', "application/json", "X")
    assert body.doc == {"a": {"c": 3}}
    assert sorted(body.duplicates.values()) == [["a"], ["b"]]
    huge = parse(b'{"n":100000000000000000000000000000}', "application/json", "X")
    assert huge.doc == {"n": 1e29} and orjson.dumps(huge.doc) == b'{"n":1e+29}'
    deep = parse(nested(3000).encode(), "application/json", "X")
    assert deep.depth == 3000 and deepjson.dumps(deep.doc) == nested(3000).encode()

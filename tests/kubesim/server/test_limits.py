"""Size limits as recorded (25c), Go's integer parsing of timeoutSeconds (no 500 for any
value), and the recursion allowance for deep documents."""

from __future__ import annotations

import asyncio
import base64
import sys
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim, KubeSimApiError
from kubesim.server.limits import deep_recursion, parse_int64, watch_timeout
from tests.kubesim.replay import bad_input_namespace, exchange, send_exchange

in_module_loop = pytest.mark.asyncio(loop_scope="module")
NS = "rec-bad-a"


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


@in_module_loop
@pytest.mark.parametrize(
    "label",
    [
        "25c",  # 1.5 MiB of ConfigMap data: 422 Too long
        "RecPodSet CR with a 1.8 MiB string",  # over etcd's request limit: 500
        "ConfigMap with 1 MiB - 4 bytes",  # just under: 201
    ],
)
async def test_object_size_limits_as_recorded(http: aiohttp.ClientSession, label: str) -> None:
    ex = exchange("25c-body-size-limits", "" if label == "25c" else label)
    got = await send_exchange(http, ex)
    want = ex["response"]
    assert got.status == want["status"]
    if want["body"]["kind"] == "Status":
        assert got.body == want["body"]
    else:
        assert len(got.body["data"]["big"]) == 1048572


@in_module_loop
async def test_in_process_writes_have_the_same_limits(sim: KubeSim) -> None:
    with pytest.raises(KubeSimApiError) as info:
        sim.create(
            "configmaps", {"metadata": {"name": "huge"}, "data": {"k": "x" * (50 << 20)}}, NS
        )
    assert info.value.code == 422
    blob = base64.b64encode(b"\0" * (1 << 20) + b"\0").decode()
    with pytest.raises(KubeSimApiError) as info:
        sim.create("secrets", {"metadata": {"name": "huge"}, "data": {"k": blob}}, NS)
    assert info.value.code == 422
    assert info.value.body["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: must have at most 1048576 bytes",
            "field": "data",
        }
    ]
    with pytest.raises(KubeSimApiError) as info:
        sim.create(
            "rec.aioinformer.dev/v1/recpodsets",
            {
                "metadata": {"name": "big"},
                "spec": {"replicas": 1, "template": {"b": "x" * (2 << 20)}},
            },
            NS,
        )
    assert (info.value.code, info.value.body["message"]) == (
        500,
        "etcdserver: request is too large",
    )


@in_module_loop
@pytest.mark.parametrize(
    ("value", "status", "message"),
    [
        ("soon", 400, 'strconv.ParseInt: parsing "soon": invalid syntax'),
        (
            "99999999999999999999",
            400,
            'strconv.ParseInt: parsing "99999999999999999999": value out of range',
        ),
        ("9223372036854775807", 200, None),  # seconds x 1e9 wraps: the watch ends at once
        ("-5", 200, None),
        ("1", 200, None),
    ],
)
async def test_timeout_seconds_never_500(
    http: aiohttp.ClientSession, value: str, status: int, message: str | None
) -> None:
    params = {"watch": "1", "timeoutSeconds": value}
    async with http.get("/api/v1/namespaces/default/configmaps", params=params) as r:
        assert r.status == status
        if message is not None:
            assert (await r.json())["message"] == message
        else:
            assert await asyncio.wait_for(r.content.read(), 10) == b""  # a clean end


def test_go_integer_and_duration_semantics() -> None:
    assert parse_int64("+12") == 12 and parse_int64("-9223372036854775808") == -(2**63)
    for bad in ("1.5", " 1", "", "0x10"):
        with pytest.raises(ValueError):
            parse_int64(bad)
    assert watch_timeout("0") == 0.0 and watch_timeout("-1") == 0.0
    assert watch_timeout("30") == 30.0
    assert watch_timeout("9223372036") == 10 * 365 * 24 * 3600  # ~292 years: capped
    assert watch_timeout("9223372037") == 0.0  # 9223372037e9 > 2**63-1 wraps negative
    assert watch_timeout(str(10**12)) > 0  # wraps to some positive duration, capped
    assert watch_timeout(str(10**12)) <= 10 * 365 * 24 * 3600


def test_deep_recursion_lifts_and_restores_the_limit() -> None:
    before = sys.getrecursionlimit()

    def down(n: int) -> int:
        return 0 if n == 0 else 1 + down(n - 1)

    with pytest.raises(RecursionError):
        down(before + 10)
    with deep_recursion(10_000):
        assert down(20_000) == 20_000
    assert sys.getrecursionlimit() == before
    with deep_recursion(50):
        assert sys.getrecursionlimit() == before

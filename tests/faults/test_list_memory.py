"""A list costs memory in proportion to the objects it may keep, not to what a server sends;
a silent connection is found within the informer's own idle timeout, an endless line within a
few line limits.

With the default settings (pages of 500, ``max_list_bytes`` left at its 2 GiB cap), a list
body that never ends and a gzip bomb are refused at the page's limit
(:meth:`~aioinformer._client.listwatch.ListWatch.body_limit`: 32 MiB for 500 items), not
at 2 GiB; a collection of objects too big for that limit still syncs, its pages asking for
fewer items. A watch whose server never sends headers fails after ``idle_timeout``, not
after the 30 s ``header_timeout``.
"""

from __future__ import annotations

import asyncio
import zlib

import pytest
from aiohttp import web

from aioinformer import InformerFactory, WatchOptions
from aioinformer._client.listwatch import ListWatch
from aioinformer.testing import KubeSim, eventually
from tests.faults.hostile import RssSampler, hang, hostile_server, list_body, pod

PAGE = 500


def page_limit() -> int:
    lw = ListWatch(object(), "v1", "pods")  # type: ignore[arg-type]
    return lw.body_limit(PAGE)


async def endless(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    await resp.write(b'{"kind":"PodList","apiVersion":"v1","items":[')
    while True:
        await resp.write(b" " * 65536)
        await asyncio.sleep(0)


_COMP = zlib.compressobj(9, zlib.DEFLATED, 31)
_HEAD = _COMP.compress(b'{"kind":"PodList","items":[') + _COMP.flush(zlib.Z_FULL_FLUSH)
_BLOCK = _COMP.compress(b" " * (1 << 20)) + _COMP.flush(zlib.Z_FULL_FLUSH)


async def bomb(request: web.Request) -> web.StreamResponse:
    """4 GiB of spaces in a list, about 4 MB compressed."""
    resp = web.StreamResponse(
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )
    await resp.prepare(request)
    await resp.write(_HEAD)
    for _ in range(4096):
        await resp.write(_BLOCK)
        await asyncio.sleep(0)
    await resp.write_eof()
    return resp


@pytest.mark.parametrize("handler", [endless, bomb], ids=["endless-body", "gzip-bomb"])
async def test_a_list_body_costs_what_its_page_may_keep(handler: object) -> None:
    opts = WatchOptions(backoff_initial=5.0, backoff_jitter=0.0)  # (one attempt is enough)
    assert opts.page_size == PAGE and opts.max_list_bytes == 2 << 30
    async with hostile_server(handler) as http, http.api_client() as api:  # type: ignore[arg-type]
        async with RssSampler() as rss, InformerFactory(api, watch_options=opts) as factory:
            inf = factory.informer("v1", "pods")
            await eventually(lambda: inf.statistics().stream_errors >= 1, "the list refused")
    assert f"longer than {page_limit()} bytes" in inf.statistics().last_error
    assert page_limit() <= 33 << 20
    # the body read so far, its join, the decompressor's buffers: a few limits at most
    assert rss.growth < 3 * page_limit(), f"{rss.growth / 2**20:.0f} MiB"


async def test_objects_too_big_for_a_page_still_sync_in_smaller_pages() -> None:
    """20 objects of 0.9 MiB in pages of 20: 18 MiB, over the 16 MiB a page of 20 may take.
    The first list fails, counted; the next ones ask for 2 items a page, and sync."""
    big = "x" * (900 << 10)  # (a ConfigMap holds at most 1 MiB)
    async with KubeSim() as sim, sim.api_client() as api:
        for i in range(20):
            sim.create("configmaps", {"metadata": {"name": f"c{i}"}, "data": {"k": big}}, "default")
        opts = WatchOptions(page_size=20, backoff_initial=0.05, backoff_jitter=0.0)
        async with InformerFactory(api, "default", watch_options=opts) as factory:
            inf = factory.informer("v1", "configmaps")
            await inf.wait_for_sync(timeout=30)
            assert len(inf.snapshot()) == 20
            assert inf.statistics().stream_errors == 1
            assert "longer than" in inf.statistics().last_error


async def test_a_watch_without_headers_fails_within_the_idle_timeout() -> None:
    """The list is answered; every watch never answers its headers. With ``idle_timeout``
    0.5 s, the watch fails after 0.5 s (counted, retried), not after the 30 s header
    timeout: the informer's own setting bounds how long it trusts a silent server."""
    served = list_body([pod("a", 5)], 5)

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch"):
            return await hang(request)
        return web.Response(body=served, content_type="application/json")

    opts = WatchOptions(idle_timeout=0.5, backoff_initial=0.05, backoff_jitter=0.0)
    assert opts.header_timeout == 30.0
    async with hostile_server(handle) as http, http.api_client() as api:
        async with InformerFactory(api, watch_options=opts) as factory:
            inf = factory.informer("v1", "pods")
            await inf.wait_for_sync(timeout=10)
            await eventually(
                lambda: inf.statistics().stream_errors >= 2,
                "two silent watches given up",
                timeout=10,
            )
    assert "no response headers within 0.5 s" in inf.statistics().last_error


@pytest.mark.parametrize("handler", [endless, bomb], ids=["endless-line", "gzip-bomb"])
async def test_a_watch_line_that_never_ends_ends_the_watch(handler: object) -> None:
    """A watch answered with bytes that never make a line (plain, or a gzip bomb: the
    limit applies to what is decompressed): once it is 64 MiB (4 times ``max_line_bytes``
    if more) the watch fails (counted), instead of skipping the line until the watch's
    deadline, ``timeoutSeconds`` + 30 s later, or reading all 4 GiB of the bomb."""
    served = list_body([pod("a", 5)], 5)

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch"):
            return await handler(request)  # type: ignore[operator,no-any-return]
        return web.Response(body=served, content_type="application/json")

    opts = WatchOptions(max_line_bytes=64 << 10, backoff_initial=0.05, backoff_jitter=0.0)
    async with hostile_server(handle) as http, http.api_client() as api:
        async with InformerFactory(api, watch_options=opts) as factory:
            inf = factory.informer("v1", "pods")
            await inf.wait_for_sync(timeout=10)
            await eventually(lambda: inf.statistics().stream_errors >= 1, "the watch ended")
    assert "without its end" in inf.statistics().last_error

"""No server or proxy behaviour makes a tight loop or unbounded memory.

Each misbehaviour is a tiny hostile server; the informer runs against it until the server
has seen enough requests to measure (or a bound on time passes). Two things must hold
whatever it does: the request ceiling (at most ``request_burst + request_rate * t``
requests in ``t`` seconds), and the process's resident memory stays within a bound while
it runs. Where the backoff is what should slow the loop (every case but the endless
pages, which only the ceiling and ``max_list_pages`` bound), the steady rate must also be
that of the backoff, not of the server. The figures are printed and are in the assertion
messages (run with ``-s`` to see them).
"""

from __future__ import annotations

import asyncio
import itertools
import zlib
from collections.abc import Callable

import pytest
from aiohttp import web

from aioinformer import InformerFactory, WatchOptions
from aioinformer.testing import eventually
from tests.faults.hostile import (
    Handler,
    RssSampler,
    event,
    hostile_server,
    json_response,
    list_body,
    pod,
    status,
)

RATE, BURST = 20.0, 10
MAX_LIST_BYTES = 8 << 20
BACKOFF_MAX = 0.2  # so a backoff-bound loop settles at about 1 / 0.2 s per failure
LIST = list_body([pod("a", 5)], 10)


def options() -> WatchOptions:
    return WatchOptions(
        min_watch_timeout=30.0,
        max_watch_timeout=30.0,
        backoff_initial=0.05,
        backoff_maximum=BACKOFF_MAX,
        backoff_jitter=0.0,
        request_rate=RATE,
        request_burst=BURST,
        max_list_bytes=MAX_LIST_BYTES,
        max_list_pages=40,
    )


async def open_stream(request: web.Request, **headers: str) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "application/json", **headers})
    await resp.prepare(request)
    return resp


def repeated_continue_token() -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return json_response(list_body([pod("a", 5)], 10, cont="the-same-token"))

    return handle


def pages_for_ever() -> Handler:
    counter = itertools.count()

    async def handle(request: web.Request) -> web.StreamResponse:
        n = next(counter)
        return json_response(list_body([pod(f"p{n}", 5)], 10, cont=f"token-{n}"))

    return handle


def one_event_then_close() -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        if not request.query.get("watch"):
            return json_response(LIST)
        resp = await open_stream(request)
        await resp.write(event("MODIFIED", pod("a", 11)))
        await resp.write_eof()
        return resp

    return handle


def one_event_then_410() -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        if not request.query.get("watch"):
            return json_response(LIST)
        resp = await open_stream(request)
        gone = status(410, "Expired", "too old resource version")
        await resp.write(event("MODIFIED", pod("a", 11)) + event("ERROR", gone))
        await resp.write_eof()
        return resp

    return handle


def empty_watch_at_once() -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        if not request.query.get("watch"):
            return json_response(LIST)
        return json_response(b"")

    return handle


def http_410_on_every_watch() -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        if not request.query.get("watch"):
            return json_response(LIST)
        return web.json_response(status(410, "Expired", "too old"), status=410)

    return handle


def list_body_never_ends() -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        resp = await open_stream(request)
        await resp.write(b'{"kind":"PodList","items":[')
        chunk = b" " * 65536
        while True:
            await resp.write(chunk)
            await asyncio.sleep(0)

    return handle


def gzip_bomb() -> Handler:
    """A list body of 4 GiB of spaces, gzip-compressed to about 4 MB: the same compressed
    block (the compressor's state is reset after each) sent 4,096 times."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = comp.compress(b'{"kind":"PodList","items":[') + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(b" " * (1 << 20)) + comp.flush(zlib.Z_FULL_FLUSH)

    async def handle(request: web.Request) -> web.StreamResponse:
        resp = await open_stream(request, **{"Content-Encoding": "gzip"})
        await resp.write(head)
        for _ in range(4096):
            await resp.write(block)
            await asyncio.sleep(0)  # (the writes never fill the socket: let the client read)
        await resp.write_eof()
        return resp

    return handle


CASES: dict[str, tuple[Callable[[], Handler], bool]] = {  # name -> (handler, backoff-bound)
    "continue-token-repeated": (repeated_continue_token, True),
    "pages-for-ever": (pages_for_ever, False),
    "one-event-then-clean-close": (one_event_then_close, True),
    "one-event-then-error-410": (one_event_then_410, True),
    "empty-watch-closed-at-once": (empty_watch_at_once, True),
    "http-410-on-every-watch": (http_410_on_every_watch, True),
    "list-body-never-ends": (list_body_never_ends, True),
    "gzip-bomb-4-GB": (gzip_bomb, True),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_the_request_ceiling_and_memory_hold_under_every_misbehaviour(case: str) -> None:
    make, backoff_bound = CASES[case]
    want = 40 if not backoff_bound else 14
    async with hostile_server(make()) as server, server.api_client() as api:
        async with RssSampler() as rss, InformerFactory(api, watch_options=options()) as factory:
            inf = factory.informer("v1", "pods")

            def failed() -> int:  # (counted on the pipeline thread, after its answer)
                stats = inf.statistics()
                return stats.stream_errors + sum(stats.errors_by_code.values())

            await eventually(
                lambda: len(server.seen) >= want and failed() >= 1,
                f"{want} requests and a failure counted",
                timeout=30,
            )
            seen = list(server.seen)
            stats = inf.statistics()
    elapsed = seen[-1].at - seen[0].at
    rate = server.rate()
    # the steady rate: the second half of the requests, once the backoff has grown
    half = seen[len(seen) // 2 :]
    steady = (len(half) - 1) / max(half[-1].at - half[0].at, 1e-3)
    figures = (
        f"{case}: {len(seen)} requests in {elapsed:.2f} s = {rate:.1f}/s (steady "
        f"{steady:.1f}/s), RSS +{rss.growth / 2**20:.1f} MiB, last error: {stats.last_error[:160]}"
    )
    print(figures)
    assert len(seen) <= BURST + RATE * elapsed + 2, figures  # the ceiling
    assert rss.growth < 4 * MAX_LIST_BYTES, figures  # no more than a few list bodies
    if backoff_bound:
        # at most two requests (a list and a watch) per failure, failures BACKOFF_MAX apart
        assert steady <= 2.5 / BACKOFF_MAX, figures
    assert stats.stream_errors + sum(stats.errors_by_code.values()) >= 1, figures


@pytest.mark.parametrize(
    "case", ["continue-token-repeated", "pages-for-ever", "list-body-never-ends", "gzip-bomb-4-GB"]
)
async def test_a_list_that_never_ends_fails_with_a_clear_error(case: str) -> None:
    make, _ = CASES[case]
    expected = {
        "continue-token-repeated": "the same continue token twice (after 2 pages): a paging loop",
        "pages-for-ever": "more than 40 pages (max_list_pages)",
        "list-body-never-ends": f"longer than {MAX_LIST_BYTES} bytes",
        "gzip-bomb-4-GB": f"longer than {MAX_LIST_BYTES} bytes",
    }[case]
    async with hostile_server(make()) as server, server.api_client() as api:
        async with InformerFactory(api, watch_options=options()) as factory:
            inf = factory.informer("v1", "pods")
            await eventually(lambda: inf.statistics().stream_errors >= 2, "two failed lists")
            assert expected in inf.statistics().last_error
            assert not inf.has_synced and len(inf.snapshot()) == 0


async def test_relists_in_a_row_back_off_until_real_progress() -> None:
    """One event then ERROR 410 on every watch: the first relist is immediate, the next
    ones wait for a growing backoff (an event is not progress enough to reset it)."""
    async with hostile_server(one_event_then_410()) as server, server.api_client() as api:
        async with InformerFactory(api, watch_options=options()) as factory:
            inf = factory.informer("v1", "pods")
            await eventually(lambda: len(server.of("list")) >= 5, "5 lists")
            backoff = inf._watcher.backoff.current
    lists = [s.at for s in server.of("list")]
    gaps = [b - a for a, b in itertools.pairwise(lists)]
    assert gaps[1] >= 0.05 and gaps[2] >= 0.1 and gaps[3] >= BACKOFF_MAX * 0.99, gaps
    assert backoff == BACKOFF_MAX

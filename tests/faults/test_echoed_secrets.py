"""Secrets stay secret even when a server echoes them.

A hostile server echoes the client's bearer token everywhere it can: in a 401 Status
message, an HTML 502 page, a watch ERROR event, the reason phrase and the Retry-After and
Location headers, a redirect to a URL made of it, the names and bytes of list items and
watch lines (across the point where a message cuts them), and the status line of a broken
HTTP answer (a connection error's text). Every log record (every logger at DEBUG,
tracebacks included), every statistics field and every exception (str, repr, traceback) is
searched for the token and for pieces of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import traceback
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from aioinformer import AioinformerError, InformerFactory, WatchOptions
from aioinformer._client.listwatch import ListWatch
from aioinformer.testing import eventually
from tests.faults.hostile import (
    TOKEN,
    Hostile,
    event,
    hostile_server,
    json_response,
    list_body,
    pod,
    status,
)

ALL_LOGGERS = ("", "aioinformer", "aiohttp", "asyncio", "kubernetes_asyncio")
CASES = ("status401", "html502", "errorevent", "headers", "redirect", "items")
PIECES = [TOKEN, TOKEN[:12], TOKEN[-12:], TOKEN[20:32]]


def options() -> WatchOptions:
    return WatchOptions(
        min_watch_timeout=30.0, max_watch_timeout=30.0, backoff_initial=0.05, backoff_maximum=0.2
    )


async def echo(request: web.Request) -> web.StreamResponse:
    _, _, rest = request.path.partition("/namespaces/")
    case = rest.split("/")[0]
    watch = bool(request.query.get("watch"))
    said = request.headers.get("Authorization", "")  # what the server echoes
    token = said.split(" ", 1)[-1]
    if case == "status401":
        body = status(401, "Unauthorized", f"token {token} is not valid ({said})")
        return web.Response(body=orjson.dumps(body), status=401, content_type="application/json")
    if case == "html502":
        page = (
            f"<html><body><h1>502</h1><pre>Authorization: {said}\ntoken={token}</pre></body></html>"
        )
        return web.Response(text=page, status=502, content_type="text/html")
    if case == "headers":
        headers = {"Retry-After": token, "Location": f"https://example.invalid/{token}"}
        return web.Response(
            status=503, reason=f"Go away {token}", headers=headers, content_type="text/plain"
        )
    if case == "redirect":
        raise web.HTTPFound(location=f"ht!tp://{token}/")
    if case == "items" and not watch:
        good = pod("good", 5, case)
        good["metadata"]["annotations"] = {"echo": token}
        bad = pod(token, "x" + token, case)  # a bad resourceVersion, the token as its name
        return json_response(list_body([good, bad, "oops-" + token], 10))
    if not watch:
        return json_response(list_body([], 10))
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    if case == "errorevent":
        await resp.write(event("ERROR", status(500, "InternalError", f"bad token {token}")))
    else:  # items: bad lines, the token across the 64-byte cut of the message
        await resp.write(
            b'{"type":"ADDED","object":{"metadata":{"name":"' + token.encode() + b'"}}}\n'
        )
        await resp.write(
            b'{"type":"WHAT","object":{},"pad":"xxxxxxxxxxxxxxxxxxx' + token.encode() + b'"}\n'
        )
    await resp.write_eof()
    return resp


@contextlib.asynccontextmanager
async def broken_http_server() -> AsyncIterator[str]:
    """A raw TCP server whose answer is not HTTP: a status line holding the token."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 2" + TOKEN.encode() + b" OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


async def test_no_echoed_secret_reaches_a_log_a_statistic_or_an_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in ALL_LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    errors: list[BaseException] = []
    stats: list[Any] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        return await echo(request)

    async with hostile_server(handler) as server, server.api_client() as api:
        async with InformerFactory(api, watch_options=options()) as factory:
            infs = {case: factory.informer("v1", "pods", namespace=case) for case in CASES}
            await eventually(
                lambda: all(
                    i.statistics().last_error or i.statistics().decode_errors >= 4
                    for i in infs.values()
                ),
                "every informer to fail or skip",
            )
            await eventually(lambda: infs["items"].statistics().decode_errors >= 4, "4 skips")
            stats += [i.statistics() for i in infs.values()]
            stats += [i._watcher.statistics() for i in infs.values()]
        for case in CASES:
            try:
                await ListWatch(api, "v1", "pods", namespace=case).list_page("", 10, None)
            except AioinformerError as exc:
                errors.append(exc)
    async with broken_http_server() as url:
        hostile = Hostile(url)
        async with hostile.api_client() as api:
            try:
                await ListWatch(api, "v1", "pods").list_page("", 10, None)
            except AioinformerError as exc:
                errors.append(exc)
            async with InformerFactory(api, watch_options=options()) as factory:
                inf = factory.informer("v1", "pods")
                await eventually(lambda: inf.statistics().stream_errors >= 2, "two failures")
                stats.append(inf.statistics())

    # the server really echoed it: the errors say so, with the token cut out
    assert len(errors) == 5, errors  # 4 failing lists + the broken server
    by_text = " ".join(str(e) for e in errors)
    assert "HTTP 401" in by_text and "HTTP 502" in by_text and "HTTP 503" in by_text
    assert "<redacted>" in by_text
    assert "BadStatusLine" in by_text or "400" in by_text or "Invalid" in by_text, by_text
    assert (
        stats[2].last_error.startswith("ServerError")
        and "bad token <redacted>" in stats[2].last_error
    )
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    texts = [formatter.format(r) for r in caplog.records]
    texts += [f"{e!s} {e!r} {''.join(traceback.format_exception(e))}" for e in errors]
    texts += [repr(s) for s in stats]
    assert any("skipped a bad watch line" in t for t in texts)
    assert any("skipped a bad list item" in t for t in texts)
    for text in texts:
        for piece in PIECES:
            assert piece not in text, f"a secret leaked into: {text[:400]}"

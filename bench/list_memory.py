"""What a hostile list body costs an informer with the default settings: the resident memory
it adds before the list is refused, and how long that takes.

Two servers on 127.0.0.1: one whose list body never ends (spaces after ``"items":[``), one
that sends a gzip bomb (4 GiB of spaces, about 4 MB compressed). An informer of pods with
``WatchOptions()`` lists from each until its first failure is counted (at most
``--seconds``); the figure is the largest RSS sample (every 20 ms) minus the first.

    python bench/list_memory.py            # both cases, one run each
"""

from __future__ import annotations

import argparse
import asyncio
import os
import zlib
from collections.abc import Awaitable, Callable

from aiohttp import web
from kubernetes_asyncio import client

from aioinformer import InformerFactory, WatchOptions

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def endless(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    await resp.write(b'{"kind":"PodList","apiVersion":"v1","items":[')
    while True:
        await resp.write(b" " * 65536)
        await asyncio.sleep(0)


async def bomb(request: web.Request) -> web.StreamResponse:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = comp.compress(b'{"kind":"PodList","items":[') + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(b" " * (1 << 20)) + comp.flush(zlib.Z_FULL_FLUSH)
    resp = web.StreamResponse(
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )
    await resp.prepare(request)
    await resp.write(head)
    for _ in range(4096):
        await resp.write(block)
        await asyncio.sleep(0)
    await resp.write_eof()
    return resp


async def measure(handler: Handler, seconds: float) -> tuple[float, float, str]:
    """(MB added at the peak, seconds to the first counted failure, its text)."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{runner.addresses[0][1]}"
    loop = asyncio.get_running_loop()
    base = peak = rss()
    try:
        async with client.ApiClient(configuration=cfg) as api:
            opts = WatchOptions(backoff_initial=30.0)
            async with InformerFactory(api, watch_options=opts) as factory:
                inf = factory.informer("v1", "pods")
                start = loop.time()
                while loop.time() - start < seconds and not inf.statistics().stream_errors:
                    peak = max(peak, rss())
                    await asyncio.sleep(0.02)
                took = loop.time() - start
                error = inf.statistics().last_error
    finally:
        await runner.cleanup()
    return (max(peak, rss()) - base) / 1e6, took, error[:120]


async def main(seconds: float) -> None:
    for name, handler in (("endless list body", endless), ("gzip bomb", bomb)):
        mb, took, error = await measure(handler, seconds)
        print(f"{name}: +{mb:.0f} MB RSS, refused after {took:.1f} s: {error or '(not yet)'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    asyncio.run(main(parser.parse_args().seconds))

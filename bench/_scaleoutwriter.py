"""The rebalancing drill's writer for bench/scaleout.py: a steady rate of writes over HTTP.

Run as ``python -m bench._scaleoutwriter``; the first stdin line is its configuration
``{"url", "token", "rate", "pods": [keys], "podsets": {key: replicas}, "scale_rate",
"concurrency"}``. It then writes until the next line (or EOF) comes: at ``rate`` per
second in all, JSON merge patches of an annotation on the pods (round robin over every
key), and at ``scale_rate`` of them per second a PodSet scaled up by one (round robin), so
the operator has pods to create while shards move. Its answer: ``{"writes", "errors",
"seconds", "scaled": {key: replicas}}`` (writes answered 2xx; the PodSets' final
``spec.replicas``). At most ``concurrency`` requests are in flight (a slower server lowers
the rate achieved rather than piling up requests).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from typing import Any

import aiohttp
import orjson

from aioinformer._harness.simproc import parent_messages

MERGE = "application/merge-patch+json"
TICK = 0.01


def _path(key: str, plural: str) -> str:
    ns, name = key.split("/")
    if plural == "pods":
        return f"/api/v1/namespaces/{ns}/pods/{name}"
    return f"/apis/example.aioinformer.dev/v1/namespaces/{ns}/podsets/{name}"


async def _until_told(receive: Any) -> None:
    """Until the parent writes a line or closes the pipe."""
    try:
        await receive()
    except SystemExit:
        pass


async def main() -> None:
    receive = await parent_messages()
    cfg = await receive()
    rate, scale_rate = float(cfg["rate"]), float(cfg["scale_rate"])
    replicas: dict[str, int] = dict(cfg["podsets"])
    pods = itertools.cycle(cfg["pods"])
    podsets = itertools.cycle(sorted(replicas))
    headers = {"Authorization": f"Bearer {cfg['token']}", "Content-Type": MERGE}
    limit = asyncio.Semaphore(int(cfg["concurrency"]))
    counts = {"writes": 0, "errors": 0}
    tasks: set[asyncio.Task[None]] = set()
    stop = asyncio.ensure_future(_until_told(receive))

    async with aiohttp.ClientSession(cfg["url"], headers=headers) as http:

        async def write(path: str, body: dict[str, Any]) -> None:
            try:
                async with http.patch(path, data=orjson.dumps(body)) as resp:
                    await resp.read()
                    counts["writes" if resp.status < 300 else "errors"] += 1
            except aiohttp.ClientError:
                counts["errors"] += 1
            finally:
                limit.release()

        start = last = time.monotonic()
        budget = scale_budget = 0.0
        n = 0
        while not stop.done():
            await asyncio.sleep(TICK)
            now = time.monotonic()
            budget = min(budget + (now - last) * rate, max(1.0, rate * 0.1))
            scale_budget += (now - last) * scale_rate
            last = now
            while budget >= 1 and not stop.done():
                budget -= 1
                if scale_budget >= 1:
                    scale_budget -= 1
                    key = next(podsets)
                    replicas[key] += 1
                    path, body = _path(key, "podsets"), {"spec": {"replicas": replicas[key]}}
                else:
                    n += 1
                    annotations = {"bench.aioinformer.dev/tick": str(n)}
                    path, body = (
                        _path(next(pods), "pods"),
                        {"metadata": {"annotations": annotations}},
                    )
                await limit.acquire()
                task = asyncio.create_task(write(path, body))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        elapsed = time.monotonic() - start
        if tasks:
            await asyncio.wait(tasks)
    out = {**counts, "seconds": round(elapsed, 3), "scaled": replicas}
    sys.stdout.buffer.write(orjson.dumps(out) + b"\n")
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    asyncio.run(main())

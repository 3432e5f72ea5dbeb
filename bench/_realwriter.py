"""The writer process of bench/staleness_bench.py's real-server mode: PATCHes at a rate.

Run as ``python -m bench._realwriter`` (bench/realserver.py starts it); it ignores SIGINT
(the benchmark's parent ends it, and cleans up, on Ctrl-C). Protocol (stdin -> stdout, one
JSON object per line):

1. config ``{"kubeconfig", "namespace", "names", "patch"}`` -> ``{"ready": {"pid"}}``.
2. ``{"op": "churn", "rate"}`` -> ``{"writes"}``: ``rate`` PATCHes per second from now on
   (token bucket, 10 ms ticks, at most :data:`IN_FLIGHT` outstanding: a token that finds
   them all outstanding is counted in ``skipped``, not queued). ``rate`` 0 stops and waits
   for the outstanding ones.
3. ``{"op": "record"}`` -> ``{"rv"}``: drop the logs so far.
4. ``{"op": "commits"}`` -> ``{"commits": [[rv, t], ...], "latencies": [[t, seconds], ...],
   "errors", "skipped", "last_error"}`` since the last call: each PATCH's resourceVersion
   and the CLOCK_MONOTONIC time its response was read, and its latency (request sent ->
   response read).
5. ``{"op": "stats"}`` -> ``{"rv", "writes", "errors", "skipped"}``: ``rv`` the highest
   resourceVersion a PATCH answered.

``patch``: ``status`` (a kubelet-like strategic merge patch of the Ready condition on
``pods/status``, alternating True/False each round over ``names``, as KubeSim's churn) or
``label`` (a merge patch of one label to a counter). Every PATCH changes its pod.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from typing import Any

import orjson

#: PATCHes outstanding at most (a server slower than the rate does not grow a backlog).
IN_FLIGHT = 64
_TICK = 0.01
_STRATEGIC = "application/strategic-merge-patch+json"
_MERGE = "application/merge-patch+json"


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.buffer.write(orjson.dumps(obj) + b"\n")
    sys.stdout.buffer.flush()


def patch_of(kind: str, round_: int, tick: int) -> tuple[str, dict[str, Any], str]:
    """(subresource path suffix, body, content type) of one PATCH of ``kind``."""
    if kind == "label":
        return "", {"metadata": {"labels": {"bench.aioinformer.dev/tick": str(tick)}}}, _MERGE
    ready = "False" if round_ % 2 == 0 else "True"
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    condition = {"type": "Ready", "status": ready, "lastTransitionTime": now}
    return "/status", {"status": {"conditions": [condition]}}, _STRATEGIC


class Writer:
    """The churn, its logs and the highest resourceVersion answered."""

    def __init__(self, rest: Any, namespace: str, names: list[str], kind: str) -> None:
        self.rest, self.namespace, self.names, self.kind = rest, namespace, names, kind
        self.rate = 0.0
        self.writes = self.errors = self.skipped = self.rv = 0
        self.last_error = ""
        self.commits: list[tuple[int, float]] = []
        self.latencies: list[tuple[float, float]] = []
        self.outstanding: set[asyncio.Task[None]] = set()
        self._loop: asyncio.Task[None] | None = None
        self._tick = 0

    async def churn(self, rate: float) -> dict[str, Any]:
        self.rate = max(0.0, rate)
        if self.rate and self._loop is None:
            self._loop = asyncio.create_task(self._run())
        elif not self.rate and self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
            self._loop = None
            await asyncio.gather(*self.outstanding, return_exceptions=True)
        return {"writes": self.writes}

    async def _run(self) -> None:
        budget, last = 0.0, time.monotonic()
        while True:
            await asyncio.sleep(_TICK)
            now = time.monotonic()
            budget = min(budget + (now - last) * self.rate, max(1.0, self.rate * 0.1))
            last = now
            while budget >= 1:
                budget -= 1
                if len(self.outstanding) >= IN_FLIGHT:
                    self.skipped += 1
                    continue
                task = asyncio.create_task(self._patch_one())
                self.outstanding.add(task)
                task.add_done_callback(self.outstanding.discard)

    async def _patch_one(self) -> None:
        from aioinformer._client.rest import Request

        tick, self._tick = self._tick, self._tick + 1
        name = self.names[tick % len(self.names)]
        suffix, body, ctype = patch_of(self.kind, tick // len(self.names), tick)
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}{suffix}"
        t0 = time.monotonic()
        try:
            answer = await self.rest.request_json(
                "PATCH",
                path,
                Request("patch", "pods", self.namespace, name),
                body=body,
                content_type=ctype,
            )
        except Exception as exc:  # counted and said; the churn goes on
            self.errors += 1
            self.last_error = str(exc)[:300]
            return
        t1 = time.monotonic()
        rv = int(answer["metadata"]["resourceVersion"])
        self.writes += 1
        self.rv = max(self.rv, rv)
        self.commits.append((rv, t1))
        self.latencies.append((t1, t1 - t0))

    def take(self) -> dict[str, Any]:
        out = {
            "commits": self.commits,
            "latencies": self.latencies,
            "errors": self.errors,
            "skipped": self.skipped,
            "last_error": self.last_error,
        }
        self.commits, self.latencies = [], []
        return out


async def main() -> None:
    from aioinformer._client.config import load_api_client
    from aioinformer._client.rest import RestClient
    from aioinformer._harness.simproc import parent_messages

    receive = await parent_messages()
    cfg = await receive()
    async with await load_api_client(cfg["kubeconfig"]) as api:
        writer = Writer(RestClient(api), cfg["namespace"], cfg["names"], cfg["patch"])
        emit({"ready": {"pid": os.getpid()}})
        try:
            while True:
                msg = await receive()
                op = msg["op"]
                if op == "churn":
                    emit(await writer.churn(float(msg["rate"])))
                elif op == "record":
                    writer.take()
                    emit({"rv": writer.rv})
                elif op == "commits":
                    emit(writer.take())
                elif op == "stats":
                    emit(
                        {
                            "rv": writer.rv,
                            "writes": writer.writes,
                            "errors": writer.errors,
                            "skipped": writer.skipped,
                        }
                    )
                else:
                    emit({"error": f"unknown op {op!r}"})
        finally:
            await writer.churn(0)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(main())

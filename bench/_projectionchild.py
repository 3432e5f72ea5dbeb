"""The informer process of bench/projection_memory.py: one pods informer in one mode.

Run as ``python -m bench._projectionchild`` with ``AIOINFORMER_PROJECTION_TOKEN`` in the
environment (never on the command line). Protocol (stdin -> stdout, one JSON object per
line): the config ``{"url", "compact", "project": [paths] or null, "labels": [keys] or
null (all kept), "drop_managed_fields"}``
-> ``{"ready": {"rss_bytes"}}`` (imports done, client and informer built, nothing listed);
then ``{"op": "sync"}`` -> ``{"objects", "synced", "rss_bytes", "cached_bytes",
"plain_bytes"}`` once synced (after a gc and the heap trimmed); then EOF.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import time
from typing import Any

import orjson

from aioinformer._harness.procstats import rss_bytes

TOKEN_ENV = "AIOINFORMER_PROJECTION_TOKEN"


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.buffer.write(orjson.dumps(obj) + b"\n")
    sys.stdout.buffer.flush()


async def main() -> None:
    logging.basicConfig(level=logging.ERROR, format="informer process: %(name)s: %(message)s")
    from aioinformer import InformerFactory, drop_managed_fields, project
    from aioinformer._cache.trim import release_free_memory
    from aioinformer._harness.simproc import parent_messages, sim_api_client

    receive = await parent_messages()
    cfg = await receive()
    async with sim_api_client(cfg["url"], os.environ[TOKEN_ENV]) as api:
        factory = InformerFactory(api, compact=cfg["compact"])
        if cfg["project"]:
            labels = cfg.get("labels")
            transform: Any = project(*cfg["project"], labels=True if labels is None else labels)
        else:
            transform = drop_managed_fields if cfg["drop_managed_fields"] else None
        pods = factory.informer("v1", "pods", transform=transform)
        gc.collect()
        emit({"ready": {"rss_bytes": rss_bytes()}})
        assert (await receive())["op"] == "sync"
        t0 = time.perf_counter()
        async with factory:
            await pods.wait_for_sync()
            synced = time.perf_counter() - t0
            gc.collect()
            release_free_memory()
            stats = pods.statistics()
            emit(
                {
                    "objects": stats.objects,
                    "synced": synced,
                    "rss_bytes": rss_bytes(),
                    "cached_bytes": stats.cached_bytes,
                    "plain_bytes": stats.plain_bytes,
                }
            )
            await receive()  # (EOF: SystemExit)


if __name__ == "__main__":
    asyncio.run(main())

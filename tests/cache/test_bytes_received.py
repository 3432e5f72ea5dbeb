"""``InformerStatistics.bytes_received``: the bytes of the list bodies and watch lines an
informer read (what it cost the API server's egress), counted for lists and watches alike,
and exported as ``aioinformer_informer_bytes_received_total``."""

from __future__ import annotations

from typing import Any

import orjson

from aioinformer import InformerFactory
from aioinformer._runtime.metrics import Metrics
from aioinformer.testing import KubeSim, eventually
from tests.support import pod, watch_options


def sent(sim: KubeSim, names: list[str]) -> int:
    """The bytes of the named pods of ``default`` as compact JSON, without ``kind`` and
    ``apiVersion`` (a list's items have none): what any answer that carries them holds at
    least."""
    bodies = (sim.get("pods", n, "default") for n in names)
    bare = ({k: v for k, v in b.items() if k not in ("kind", "apiVersion")} for b in bodies)
    return sum(len(orjson.dumps(b)) for b in bare)


async def test_bytes_received_counts_the_list_and_every_watch_event(sim: KubeSim, api: Any) -> None:
    listed = [f"p{i}" for i in range(20)]
    for name in listed:
        sim.create("pods", pod(name), "default")
    f = InformerFactory(api, watch_options=watch_options(), pipeline="loop")
    inf = f.informer("v1", "pods", namespace="default")
    async with f:
        await f.wait_for_sync(timeout=10)
        after_list = inf.statistics().bytes_received
        assert after_list >= sent(sim, listed), "the list's body is counted"
        watched = [f"w{i}" for i in range(10)]
        for name in watched:
            sim.create("pods", pod(name), "default")
        await eventually(lambda: len(inf.snapshot()) == 30, "the watch events applied")
        grown = inf.statistics().bytes_received - after_list
        assert grown >= sent(sim, watched), "each watch event's line is counted"
        metrics = Metrics()
        metrics.add_informer_source(lambda: [inf.statistics()])
        text = metrics.render().decode()
        line = next(x for x in text.splitlines() if x.startswith("aioinformer_informer_bytes"))
        assert line.startswith("aioinformer_informer_bytes_received_total{")
        assert float(line.rsplit(" ", 1)[1]) >= after_list + grown

"""Watcher.rescope(relist=True) always brings a relist, even when it lands while a read of
a resumed watch (one running beside its history check, in a task of its own) is being
queued: that read's end must not put the watch position back, or the watcher resumes the
watch with the new selector instead of listing it, and what the wider scope gains (objects
nobody writes) never arrives (bench/scaleout.py's drill found it: a replica that gained a
shard never cached its pods, and created them again: 409s)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aioinformer._cache.deltas import Delta, ObjectDelta, Replace
from aioinformer.testing import KubeSim, eventually
from tests.support import ModelFifo, make_watcher, pod, running


class HookedFifo(ModelFifo):
    """A ModelFifo that runs ``hook`` once, inside the next ``put_many`` of watch events."""

    def __init__(self) -> None:
        super().__init__()
        self.hook: Callable[[], None] | None = None

    def put_many(self, items: Sequence[Delta]) -> None:
        super().put_many(items)
        hook, self.hook = self.hook, None
        if hook is not None and any(isinstance(i, ObjectDelta) for i in items):
            hook()


async def test_a_rescope_during_a_read_of_a_resumed_watch_still_relists(
    sim: KubeSim, api: Any
) -> None:
    for i in range(3):
        sim.create("pods", pod(f"p{i}"), "default")
    sink = HookedFifo()
    w = make_watcher(api, sink, namespace="default")
    async with running(w):
        await w.wait_for_sync()
        w.rescope(relist=False)  # the next watch is a resumed one, beside a history check
        sim.create("pods", pod("seen"), "default")
        await eventually(lambda: "default/seen" in sink.state, "the resumed watch's event")
        sink.hook = lambda: w.rescope(relist=True)
        sim.patch("pods", "p0", {"metadata": {"labels": {"touched": "yes"}}}, "default")
        await eventually(lambda: len(sink.of(Replace)) == 2, "the relist the rescope asked for")

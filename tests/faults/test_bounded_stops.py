"""Stopping a factory is bounded, whatever its transform does.

A transform that blocks (1 s per object in the report: a factory's exit took 18 s) used
to run over a whole list, a whole streaming list or a whole read of a watch without a
cancellation point, and the factory's exit joined the pipeline thread without a bound.
Now the watcher yields between objects (every ``TRANSFORM_SLICE`` seconds of transform
work), so a stop waits at most for the object being transformed; and a pipeline that
does not end within ``STOP_TIMEOUT`` seconds of its cancellation (a transform stuck on one
object) is abandoned with a WARNING that names it and where it is stuck: the factory's
exit returns, and the thread ends when the transform returns.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import pytest
from aiohttp import web

from aioinformer import InformerFactory, KubeObject, WatchOptions
from aioinformer._cache import pipeline
from aioinformer._cache.pipeline import THREAD_PREFIX
from aioinformer.testing import eventually
from tests.faults.hostile import event, hostile_server, json_response, list_body, pod

N = 20
END = {"k8s.io/initial-events-end": "true"}


def server_of(how: str) -> Any:
    """A server that gives N pods by a list, a streaming list or one read of a watch."""
    pods = [pod(f"p{i}", i + 1) for i in range(N)]

    async def handle(request: web.Request) -> web.StreamResponse:
        query = request.query
        if query.get("watch") not in ("1", "true"):
            return json_response(list_body(pods if how == "list" else [], 100))
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        if query.get("sendInitialEvents") == "true":
            mark = {"metadata": {"resourceVersion": "100", "annotations": END}}
            await resp.write(b"".join(event("ADDED", p) for p in pods) + event("BOOKMARK", mark))
        elif how == "watch":
            news = [pod(f"p{i}", 101 + i) for i in range(N)]
            await resp.write(b"".join(event("ADDED", p) for p in news))
        await asyncio.Event().wait()
        raise AssertionError

    return handle


class Blocking:
    """A transform that blocks ``seconds`` per object (or until ``release`` with None)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self.as_transform = True

    def __call__(self, obj: KubeObject) -> Any:
        self.calls += 1
        self.entered.set()
        if self.seconds is None:
            self.release.wait(30)
        else:
            time.sleep(self.seconds)
        return obj if self.as_transform else []


def options() -> WatchOptions:
    return WatchOptions(min_watch_timeout=30.0, max_watch_timeout=30.0)


async def run_until_transforming(
    handle: Any, transform: Blocking, *, pipeline_kind: str, streaming: bool
) -> tuple[asyncio.Task[None], InformerFactory]:
    """Start a factory over ``handle``'s server; return once ``transform`` is running (as
    the transform, or as an index function when not ``transform.as_transform``)."""
    started = asyncio.Event()
    holder: list[InformerFactory] = []

    async def main() -> None:
        async with hostile_server(handle) as server, server.api_client() as api:
            factory = InformerFactory(
                api,
                "default",
                watch_options=options(),
                pipeline=pipeline_kind,  # type: ignore[arg-type]
            )
            holder.append(factory)
            if transform.as_transform:
                factory.informer("v1", "pods", transform=transform, streaming_list=streaming)
            else:
                factory.informer("v1", "pods", indexers={"slow": transform})
            async with factory:
                started.set()
                await asyncio.Event().wait()

    task = asyncio.create_task(main())
    await started.wait()
    await eventually(transform.entered.is_set, "the transform running")
    return task, holder[0]


@pytest.mark.parametrize(
    ("how", "pipeline_kind"),
    [("list", "thread"), ("list", "loop"), ("stream", "thread"), ("watch", "thread")],
)
async def test_a_stop_waits_for_the_object_being_transformed_not_for_the_rest(
    how: str, pipeline_kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A transform of 0.2 s per object over 20 objects: the stop asked during the first
    one ends the pipeline after that one (it went through all 20 before). On the caller's
    loop each step of the cancellation's way to the pipeline lets one more object
    through (the transform blocks that loop): a few."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    transform = Blocking(0.2)
    task, _factory = await run_until_transforming(
        server_of(how), transform, pipeline_kind=pipeline_kind, streaming=how == "stream"
    )
    at_stop = transform.calls
    task.cancel()
    await asyncio.wait([task], timeout=30)
    assert task.done()
    after = transform.calls - at_stop
    assert after <= (2 if pipeline_kind == "thread" else 5), f"{after} objects after the stop"
    (note,) = [r.getMessage() for r in caplog.records if "abandoned" in r.getMessage()]
    assert "objects transformed" in note
    if how == "list":
        assert f"of {N} objects" in note


@pytest.mark.parametrize("stuck", ["transform", "index-function"])
async def test_a_pipeline_stuck_in_user_code_is_abandoned_after_the_stop_bound(
    stuck: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A transform (or an index function, run by the writer) that never returns by
    itself: the factory's exit returns after ``STOP_TIMEOUT`` (0.5 s here), naming the
    pipeline and where it is stuck; the thread ends once the call returns."""
    monkeypatch.setattr(pipeline, "STOP_TIMEOUT", 0.5)
    caplog.set_level(logging.INFO, logger="aioinformer")
    transform = Blocking(None)
    transform.as_transform = stuck == "transform"
    task, factory = await run_until_transforming(
        server_of("list"), transform, pipeline_kind="thread", streaming=False
    )
    task.cancel()
    try:
        await asyncio.wait([task], timeout=20)
        assert task.done(), "the factory's exit waited for the stuck transform"
    finally:
        transform.release.set()
    stuck = [r for r in caplog.records if r.levelno == logging.WARNING and "abandon" in r.msg]
    assert stuck, "no WARNING names the abandoned pipeline"
    text = stuck[0].getMessage()
    assert "pods[default]" in text and "__call__" in text, text
    name = THREAD_PREFIX + f"{id(factory):x}"
    await eventually(lambda: all(t.name != name for t in threading.enumerate()), "the thread's end")
    if stuck == "transform":  # (the writer applies one batch whole: its index calls go on)
        assert transform.calls == 1

"""Watcher and ListWatch over real HTTP against KubeSim.

Every scenario ends the same way: after the writes stop, a model store that applies the
watcher's FIFO items (Replace swaps, ObjectDelta adds/updates/deletes) holds exactly what the
server holds (``sim.versions``, or ``sim.list`` with the same selectors), key for key and
resourceVersion for resourceVersion.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from aiohttp import web

from aioinformer._cache.deltas import Bookmark, ChangeType, ObjectDelta, Replace
from aioinformer._cache.fifo import RealFIFO
from aioinformer._cache.watcher import Watcher
from aioinformer._client.listwatch import ListWatch
from aioinformer._core.backoff import Backoff
from aioinformer._core.errors import (
    ClosedError,
)
from aioinformer._core.objects import KubeObject, drop_managed_fields
from aioinformer.testing import KubeSim, eventually
from tests.support import (
    CountingListWatch,
    FakeClock,
    ModelFifo,
    Sleeps,
    api_client_for,
    fake_server,
    make_watcher,
    pod,
    running,
    transcript,
)

PODSETS = "example.aioinformer.dev/v1/podsets"


async def converge(sink: ModelFifo, expected: Callable[[], dict[str, str]]) -> None:
    with contextlib.suppress(AssertionError):
        await eventually(lambda: sink.state == expected(), "convergence")
    assert sink.state == expected()


def listed(sim: KubeSim, resource: str, **selectors: str) -> dict[str, str]:
    out = {}
    for o in sim.list(resource, **selectors):
        meta = o["metadata"]
        out[f"{meta['namespace']}/{meta['name']}"] = meta["resourceVersion"]
    return out


# -- sync, events, selectors, resources --------------------------------------------------------


async def test_sync_is_one_replace_then_deltas_for_add_update_delete() -> None:
    async with KubeSim(bookmark_interval=0.2) as sim, sim.api_client() as api:
        for i in range(3):
            sim.create("pods", pod(f"p{i}"), "default")
        list_rv = sim.resource_version
        sink = ModelFifo()
        w = make_watcher(api, sink)
        async with running(w):
            await w.wait_for_sync()
            assert w.has_synced and w.statistics().has_synced
            first = sink.items[0]
            assert isinstance(first, Replace)
            assert sorted(o.key for o in first.objects) == [
                "default/p0",
                "default/p1",
                "default/p2",
            ]
            assert first.resource_version == list_rv
            sim.create("pods", pod("p3"), "default")
            sim.patch("pods", "p0", {"metadata": {"labels": {"x": "1"}}}, "default")
            sim.delete("pods", "p1", "default")
            await converge(sink, lambda: sim.versions("pods"))
            # the periodic bookmark carries the final RV
            await eventually(lambda: w.statistics().bookmarks > 0, "a bookmark")
        types = [(d.type, d.obj.name) for d in sink.of(ObjectDelta)]
        assert (ChangeType.ADDED, "p3") in types
        assert (ChangeType.UPDATED, "p0") in types
        assert types[-1] == (ChangeType.DELETED, "p1")
        assert (
            len(sink.of(Replace)) == 1 and w.statistics().lists == 1 and w.statistics().relists == 0
        )
        assert all(b.resource_version <= sim.resource_version for b in sink.of(Bookmark))
        assert w.statistics().last_rv == str(sim.resource_version)
        assert w.statistics().events_total == len(sink.of(ObjectDelta))
        assert w.statistics().decode_errors == 0 and w.statistics().errors_by_code == {}


async def test_real_delta_fifo_receives_the_same_items() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        fifo = RealFIFO()
        w = make_watcher(api, fifo)
        async with running(w):
            await w.wait_for_sync()
            sim.create("pods", pod("b"), "default")
            await eventually(lambda: w.statistics().events_total == 1, "the ADDED event")
        items = [fifo.pop_nowait() for _ in range(len(fifo))]
        first, second = [i for i in items if not isinstance(i, Bookmark)]
        assert isinstance(first, Replace) and [o.key for o in first.objects] == ["default/a"]
        assert isinstance(second, ObjectDelta) and second.type is ChangeType.ADDED
        assert second.obj.key == "default/b"


async def test_pagination_concatenates_pages_into_one_replace() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        for i in range(7):
            sim.create("pods", pod(f"p{i}"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, page_size=2)
        async with running(w):
            await w.wait_for_sync()
        lw = w._lw
        assert isinstance(lw, CountingListWatch)
        assert len(lw.pages) == 4 and lw.pages[0] is None and all(lw.pages[1:])
        (replace,) = sink.of(Replace)
        assert [o.name for o in replace.objects] == [f"p{i}" for i in range(7)]
        assert sink.state == sim.versions("pods")


async def test_each_page_is_transformed_before_the_next_is_asked_for() -> None:
    """What a transform frees (the managedFields drop_managed_fields removes) is freed page
    by page, so the next page's objects reuse that memory instead of the cached objects
    keeping a hole each between them."""
    transformed: list[str] = []

    def transform(obj: KubeObject) -> KubeObject:
        transformed.append(obj.name)
        return drop_managed_fields(obj)

    async with KubeSim() as sim, sim.api_client() as api:
        for i in range(7):
            sim.create("pods", pod(f"p{i}"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, page_size=2, transform=transform)
        lw = w._lw
        assert isinstance(lw, CountingListWatch)
        done_before_page: list[int] = []
        lw.before_page = lambda _continue: done_before_page.append(len(transformed))
        async with running(w):
            await w.wait_for_sync()
        assert done_before_page == [0, 2, 4, 6]
        (replace,) = sink.of(Replace)
        assert [o.name for o in replace.objects] == [f"p{i}" for i in range(7)]
        assert all(o.managed_fields == b"" for o in replace.objects)


async def test_expired_continue_token_restarts_the_list() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        for i in range(5):
            sim.create("pods", pod(f"p{i}"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, page_size=2)
        lw = w._lw
        assert isinstance(lw, CountingListWatch)
        compacted: list[str] = []

        def compact_once(continue_: str | None) -> None:
            if continue_ and not compacted:  # the token now points before the compaction
                compacted.append(continue_)
                sim.create("pods", pod("p5"), "default")
                sim.compact()

        lw.before_page = compact_once
        async with running(w):
            await w.wait_for_sync()
        assert w.statistics().errors_by_code == {410: 1}
        assert lw.pages[:2] == [None, compacted[0]] and lw.pages[2] is None
        (replace,) = sink.of(Replace)
        assert len(replace.objects) == 6
        assert sink.state == sim.versions("pods")


async def test_label_selector_object_leaving_is_deleted_and_reentering_added() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("w1", app="web"), "default")
        sim.create("pods", pod("w2", app="web"), "default")
        sim.create("pods", pod("d1", app="db"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, label_selector="app=web")
        expected = functools.partial(listed, sim, "pods", label_selector="app=web")
        async with running(w):
            await w.wait_for_sync()
            assert sink.state == expected() and len(sink.state) == 2
            sim.patch("pods", "w1", {"metadata": {"labels": {"app": "db"}}}, "default")
            sim.patch("pods", "d1", {"metadata": {"labels": {"app": "web"}}}, "default")
            sim.patch("pods", "d1", {"metadata": {"annotations": {"a": "b"}}}, "default")
            await converge(sink, expected)
        changes = [(d.type, d.obj.name) for d in sink.of(ObjectDelta)]
        assert changes == [
            (ChangeType.DELETED, "w1"),
            (ChangeType.ADDED, "d1"),
            (ChangeType.UPDATED, "d1"),
        ]


async def test_field_selector_phase_change_leaves_the_selection() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        for i in range(3):
            sim.create("pods", pod(f"p{i}"), "default")
        sink = ModelFifo()
        selector = "status.phase=Pending"
        w = make_watcher(api, sink, field_selector=selector)
        expected = functools.partial(listed, sim, "pods", field_selector=selector)
        async with running(w):
            await w.wait_for_sync()
            assert len(sink.state) == 3
            sim.patch(
                "pods", "p1", {"status": {"phase": "Running"}}, "default", subresource="status"
            )
            await converge(sink, expected)
        assert sorted(sink.state) == ["default/p0", "default/p2"]
        assert [(d.type, d.obj.name) for d in sink.of(ObjectDelta)] == [(ChangeType.DELETED, "p1")]


async def test_namespaced_watch_sees_only_its_namespace_and_its_deletion() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        for ns in ("team-a", "team-b"):
            sim.create("namespaces", {"metadata": {"name": ns}})
            sim.create("pods", pod("p"), ns)
        sink = ModelFifo()
        w = make_watcher(api, sink, namespace="team-a")
        async with running(w):
            await w.wait_for_sync()
            assert sink.state == sim.versions("pods", "team-a")
            sim.create("pods", pod("q"), "team-b")
            sim.delete("namespaces", "team-a")  # its pods go away: DELETED events flow
            await eventually(lambda: not sim.versions("pods", "team-a"), "the pods to go")
            await converge(sink, lambda: sim.versions("pods", "team-a"))
        assert sink.state == {}


async def test_custom_resources_across_namespaces() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("customresourcedefinitions", transcript("13a")["request"]["body"])
        await sim.wait_served(PODSETS)
        sim.create("namespaces", {"metadata": {"name": "apps"}})
        body = {"apiVersion": "example.aioinformer.dev/v1", "kind": "PodSet"}
        sim.create(PODSETS, {**body, "metadata": {"name": "a"}, "spec": {"replicas": 1}}, "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, "example.aioinformer.dev/v1", "podsets")
        async with running(w):
            await w.wait_for_sync()
            sim.create(
                PODSETS, {**body, "metadata": {"name": "b"}, "spec": {"replicas": 2}}, "apps"
            )
            sim.patch(PODSETS, "a", {"spec": {"replicas": 3}}, "default")
            sim.delete(PODSETS, "b", "apps")
            sim.create(
                PODSETS, {**body, "metadata": {"name": "c"}, "spec": {"replicas": 1}}, "apps"
            )
            await converge(sink, lambda: sim.versions(PODSETS))
        assert sink.objects["default/a"].kind == "PodSet"
        assert sink.objects["default/a"].field("spec.replicas") == 3


async def test_metadata_only_lists_and_watches_partial_objects() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, metadata_only=True)
        async with running(w):
            await w.wait_for_sync()
            sim.patch("pods", "a", {"metadata": {"labels": {"tier": "x"}}}, "default")
            sim.create("pods", pod("b"), "default")
            await converge(sink, lambda: sim.versions("pods"))
        objs = [*sink.of(Replace)[0].objects, *(d.obj for d in sink.of(ObjectDelta))]
        assert {o.kind for o in objs} == {"PartialObjectMetadata"}
        assert {o.body for o in objs} == {b"{}"}
        assert sink.objects["default/a"].labels == {"app": "web", "tier": "x"}


# -- streaming lists -------------------------------------------------------------------------


async def test_streaming_list_is_one_replace_at_the_end_bookmark_then_a_watch() -> None:
    async with KubeSim(watch_list=True) as sim, sim.api_client() as api:
        for i in range(4):
            sim.create("pods", pod(f"p{i}"), "default")
        rv = sim.resource_version
        sink = ModelFifo()
        w = make_watcher(api, sink, streaming_list=True)
        async with running(w):
            await w.wait_for_sync()
            first = sink.items[0]
            assert isinstance(first, Replace) and first.resource_version == rv
            assert sorted(o.name for o in first.objects) == ["p0", "p1", "p2", "p3"]
            sim.create("pods", pod("p4"), "default")
            sim.delete("pods", "p0", "default")
            await converge(sink, lambda: sim.versions("pods"))
        lw = w._lw
        assert isinstance(lw, CountingListWatch) and lw.pages == []  # no list request
        assert w.streaming_list and w.statistics().lists == 1 and len(sink.of(Replace)) == 1
        assert not sink.of(Bookmark) or sink.of(Bookmark)[0].resource_version > rv


async def test_streaming_list_falls_back_to_list_when_the_gate_is_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="aioinformer.watch")
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, streaming_list=True)
        async with running(w):
            await w.wait_for_sync()
            sim.create("pods", pod("b"), "default")
            sim.restart()  # before the watcher saw "b": its RV is too old now
            await converge(sink, lambda: sim.versions("pods"))
            await eventually(lambda: w.statistics().relists == 1, "the relist")
        assert not w.streaming_list
        lw = w._lw
        assert isinstance(lw, CountingListWatch) and len(lw.pages) == 2
        fallbacks = [r for r in caplog.records if "does not support streaming lists" in r.msg]
        assert len(fallbacks) == 1  # logged once, not at every relist
        assert w.statistics().errors_by_code.get(422) is None
        st = w.statistics()  # counted once too, and named
        assert st.stream_errors == 1 and "422" in st.last_error, st


# -- resume, relist -----------------------------------------------------------------------------


async def test_resume_after_dropped_connection_without_relist() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink)
        async with running(w):
            await w.wait_for_sync()
            await eventually(lambda: sim.open_watches == 1, "the watch")
            for i in range(3):
                sim.drop_watches()
                sim.create("pods", pod(f"b{i}"), "default")
                await converge(sink, lambda: sim.versions("pods"))
        assert w.statistics().lists == 1 and w.statistics().relists == 0
        assert w.statistics().watch_restarts >= 3 and w.statistics().stream_errors >= 3


async def test_resume_after_clean_timeout_without_relist() -> None:
    async with KubeSim(bookmark_interval=60) as sim, sim.api_client() as api:
        sink = ModelFifo()
        w = make_watcher(api, sink, min_watch_timeout=1, max_watch_timeout=1)
        async with running(w):
            await w.wait_for_sync()
            sim.create("pods", pod("a"), "default")
            await eventually(lambda: w.statistics().watch_restarts >= 2, "two timeouts", timeout=30)
            sim.create("pods", pod("b"), "default")
            await converge(sink, lambda: sim.versions("pods"))
        assert w.statistics().lists == 1 and w.statistics().stream_errors == 0
        assert w.statistics().errors_by_code == {}


@pytest.mark.parametrize("how", ["restart", "expire_watch_history"])
async def test_relist_after_410(how: str) -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sim.create("pods", pod("gone"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink)
        async with running(w):
            await w.wait_for_sync()
            # writes the watcher has not seen yet, then their history is lost
            sim.create("pods", pod("b"), "default")
            sim.delete("pods", "gone", "default")
            getattr(sim, how)()
            sim.create("pods", pod("c"), "default")
            await converge(sink, lambda: sim.versions("pods"))
        assert w.statistics().relists >= 1 and w.statistics().errors_by_code.get(410, 0) >= 1
        assert sorted(sink.state) == ["default/a", "default/b", "default/c"]


async def test_error_event_410_relists() -> None:
    """An expired RV on a watch arrives as HTTP 200 + an ERROR event 410 (conformance 08a):
    the watcher relists. Other ERROR codes: tests/test_bad_input.py."""
    async with KubeSim() as sim, sim.api_client() as api:
        sink = ModelFifo()
        w = make_watcher(api, sink)
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
        async with running(w):
            await w.wait_for_sync()
            await eventually(lambda: sim.open_watches == 1, "the watch")
            err = {**status, "message": "too old resource version: 1 (2)", "code": 410}
            sim.faults.inject_line(orjson.dumps({"type": "ERROR", "object": err}) + b"\n")
            await eventually(lambda: w.statistics().relists == 1, "the relist")
            sim.create("pods", pod("b"), "default")
            await converge(sink, lambda: sim.versions("pods"))
        assert w.statistics().errors_by_code == {410: 1}
        assert w.statistics().last_error == ""  # a 410 is routine, not a failure


class ErrorReadListWatch(ListWatch):
    """ListWatch that records where each watch starts and holds back the lines of a watch
    until an ERROR event arrives, then hands them over with it as one read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watched_from: list[str] = []
        self.held: list[bytes] = []

    async def watch(self, resource_version: str, *args: Any, **kwargs: Any) -> Any:
        self.watched_from.append(resource_version)
        async for lines in super().watch(resource_version, *args, **kwargs):
            self.held += [line for line in lines if b'"BOOKMARK"' not in line]
            if any(line.startswith(b'{"type":"ERROR"') for line in self.held):
                read, self.held = self.held, []
                yield read


async def test_events_read_together_with_an_error_event_are_queued_and_resumed_after() -> None:
    """Events and an ERROR event in one read: the events reach the FIFO and the next watch
    starts from the last of them (an ERROR 500 is retried from the RV, no relist)."""
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sink = ModelFifo()
        lw = ErrorReadListWatch(api, "v1", "pods", namespace="default")
        w = Watcher(lw, sink, backoff=Backoff(initial=0.02, maximum=0.2, jitter=0.0))
        async with running(w):
            await w.wait_for_sync()
            await eventually(lambda: sim.open_watches == 1, "the watch")
            sim.create("pods", pod("b"), "default")
            last = sim.create("pods", pod("c"), "default")["metadata"]["resourceVersion"]
            await eventually(lambda: len(lw.held) == 2, "both events, held back")
            err = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500}
            sim.faults.inject_line(orjson.dumps({"type": "ERROR", "object": err}) + b"\n")
            await eventually(lambda: len(lw.watched_from) == 2, "the second watch")
            assert sink.state == sim.versions("pods")  # b and c, before any re-watch
        assert lw.watched_from[1] == last
        assert w.statistics().lists == 1 and w.statistics().errors_by_code == {500: 1}
        assert w.statistics().events_total == 2


# -- failures, backoff ----------------------------------------------------------------------------


async def test_backoff_on_429_and_500_then_sync() -> None:
    """Each failed list or watch waits the next backoff delay (doubling, no jitter here)
    before it is retried; the list is retried from the start, the watch from its RV."""
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sim.fail_next(2, 500, verbs=["list"])
        sim.fail_next(2, 429, retry_after=0, verbs=["watch"])
        backoff = Backoff(initial=0.02, maximum=1.0, jitter=0.0)
        sleeps = Sleeps()
        sleeps.release_all()
        sink = ModelFifo()
        w = make_watcher(api, sink, backoff=backoff, sleep=sleeps)
        async with running(w):
            await w.wait_for_sync()
            sim.create("pods", pod("b"), "default")
            await converge(sink, lambda: sim.versions("pods"))
        assert sleeps.delays == [0.02, 0.04, 0.08, 0.16]  # four failures in a row
        assert w.statistics().errors_by_code == {500: 2, 429: 2}
        assert w.statistics().backoff_current == 0.32
        assert w.statistics().lists == 1


@pytest.mark.parametrize("status", [429, 503, 504])
async def test_retry_after_is_honoured(status: int, caplog: pytest.LogCaptureFixture) -> None:
    """A Retry-After longer than the backoff delay is the delay waited."""
    caplog.set_level(logging.WARNING, logger="aioinformer.watch")
    async with KubeSim() as sim, sim.api_client() as api:
        sim.fail_next(1, status, retry_after=1, verbs=["list"])
        sleeps = Sleeps()
        w = make_watcher(api, ModelFifo(), backoff=Backoff(initial=0.01, jitter=0.0), sleep=sleeps)
        async with running(w):
            await eventually(lambda: sleeps.delays == [1.0], "the retry delay")
            sleeps.release_all()
            await w.wait_for_sync()
        (record,) = [r for r in caplog.records if f"HTTP {status}" in r.getMessage()]
        assert record.getMessage().endswith("retrying in 1.0 s")  # not the 0.01 s backoff
        assert sleeps.delays == [1.0]


async def test_silent_stream_watchdog_rewatches_and_converges() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, idle_timeout=0.3)
        async with running(w):
            await w.wait_for_sync()
            await eventually(lambda: sim.open_watches == 1, "the watch")
            restarts = w.statistics().watch_restarts
            sim.stall_watches()
            sim.create("pods", pod("b"), "default")
            await eventually(
                lambda: w.statistics().watch_restarts >= restarts + 2,
                "watchdog restarts",
                timeout=30,
            )
            assert "default/b" not in sink.state
            sim.unstall_watches()
            await converge(sink, lambda: sim.versions("pods"))
        assert w.statistics().lists == 1 and w.statistics().stream_errors >= 2


# -- lifecycle -----------------------------------------------------------------------------------


def new_tasks(before: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    return {t for t in asyncio.all_tasks() - before if t is not asyncio.current_task()}


async def test_cancellation_closes_the_response_and_propagates() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        before = asyncio.all_tasks()
        w = make_watcher(api, ModelFifo())
        task = asyncio.create_task(w.run())
        await w.wait_for_sync()
        await eventually(lambda: sim.open_watches == 1, "the watch")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the server saw the connection close, and nothing is left running on either side
        await eventually(lambda: sim.open_watches == 0, "the server to see the close")
        await eventually(lambda: not new_tasks(before), "no task left")


async def test_stop_returns_normally_and_fifo_close_stops_it() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        before = asyncio.all_tasks()
        w = make_watcher(api, ModelFifo())
        task = asyncio.create_task(w.run())
        await w.wait_for_sync()
        await eventually(lambda: sim.open_watches == 1, "the watch")
        w.stop()
        w.stop()  # idempotent
        await task  # returns normally
        assert not task.cancelled()
        await eventually(lambda: sim.open_watches == 0, "the server to see the close")
        with pytest.raises(RuntimeError):
            await w.run()  # one run per watcher

        fifo = RealFIFO()
        w2 = make_watcher(api, fifo)
        task2 = asyncio.create_task(w2.run())
        await w2.wait_for_sync()
        fifo.close()
        sim.create("pods", pod("a"), "default")  # the next put fails: the stop signal
        await task2  # returns normally
        assert not task2.cancelled()
        await eventually(lambda: sim.open_watches == 0, "the server to see the close")

        w3 = make_watcher(api, ModelFifo())
        w3.stop()  # before run: run returns at once, wait_for_sync raises
        await w3.run()
        with pytest.raises(ClosedError, match="stopped before it synced"):
            await w3.wait_for_sync()
        await eventually(lambda: not new_tasks(before), "no task left")


async def test_transform_runs_before_the_fifo_and_its_errors_are_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def transform(obj: KubeObject) -> KubeObject:
        if obj.labels.get("boom"):
            raise ValueError("boom")
        if obj.labels.get("shape"):
            return obj.to_dict()  # type: ignore[return-value]  # (the bug under test)
        return drop_managed_fields(obj)

    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, transform=transform)
        async with running(w):
            await w.wait_for_sync()
            sim.create("pods", pod("b", boom="1"), "default")  # skipped, logged
            sim.create("pods", pod("d", shape="dict"), "default")  # a dict: skipped, logged
            sim.create("pods", pod("c"), "default")
            await eventually(lambda: "default/c" in sink.state, "c")
            sim.delete("pods", "b", "default")  # the deletion still reaches the FIFO
            sim.delete("pods", "d", "default")
            await eventually(lambda: any(d.obj.name == "b" for d in sink.of(ObjectDelta)), "b")
            await converge(sink, lambda: sim.versions("pods"))
        objs = [*sink.of(Replace)[0].objects, *(d.obj for d in sink.of(ObjectDelta))]
        assert objs and all(o.managed_fields == b"" for o in objs if o.name not in ("b", "d"))
        (deleted,) = [d for d in sink.of(ObjectDelta) if d.obj.name == "b"]
        assert deleted.type is ChangeType.DELETED and deleted.obj.managed_fields  # as received
        assert w.statistics().transform_errors >= 4  # the ADDED and the DELETED of "b" and "d"
        assert "the transform raised on default/b" in caplog.text
        assert "returned a dict, not a KubeObject" in caplog.text
        assert [d.type for d in sink.of(ObjectDelta) if d.obj.name == "d"] == [ChangeType.DELETED]


async def test_a_watch_closed_at_once_without_events_is_backed_off() -> None:
    """A server (or proxy) that ends every watch immediately: client-go's "very short
    watch" rule turns that into a failure, so the watcher backs off instead of spinning."""
    watches = 0

    async def handle(request: web.Request) -> web.Response:
        nonlocal watches
        if request.query.get("watch"):
            watches += 1
            return web.Response(body=b"", content_type="application/json")
        body = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}}
        return web.json_response({**body, "items": []})

    async with fake_server(handle) as url, api_client_for(url) as api:
        backoff = Backoff(initial=0.05, maximum=10.0, jitter=0.0)
        sleeps = Sleeps()
        # a clock that never moves: every watch is "within 1 s", whatever the load
        w = make_watcher(api, ModelFifo(), backoff=backoff, sleep=sleeps, clock=FakeClock())
        async with running(w):
            for n in range(1, 6):
                await eventually(lambda n=n: len(sleeps.delays) == n, f"backoff {n}")
                assert watches == n  # the next watch waits for this delay
                if n < 5:
                    sleeps.release()
            # (stopped while it waits out the fifth delay: every count above is final)
        assert sleeps.delays == [0.05, 0.1, 0.2, 0.4, 0.8]
        assert w.statistics().lists == 1 and w.statistics().stream_errors == 5
        assert w.statistics().backoff_current == 1.6

"""Tests for aioinformer._cache.handlers: per-subscriber queues, isolation, coalescing, sync."""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer import InformerFactory
from aioinformer._cache.deltas import Change, ChangeType
from aioinformer._cache.handlers import (
    DEFAULT_MAX_QUEUE,
    STOP_GRACE,
    Dispatcher,
    HandlerFailure,
    Subscription,
)
from aioinformer._core.errors import ClosedError, ConfigError, FreshnessTimeout
from aioinformer._core.objects import KubeObject
from aioinformer._runtime.metrics import Metrics
from aioinformer.testing import KubeSim
from tests.support import FakeClock, pod_object

POD_SPEC = {"containers": [{"name": "c", "image": "busybox"}]}
Note = tuple[str, str, int, int | None]  # (type, key, rv of the object, rv of old for UPDATED)


def obj(name: str = "a", rv: int = 5, ns: str = "n") -> KubeObject:
    return pod_object(name, ns, rv)


def added(o: KubeObject) -> Change:
    return Change(ChangeType.ADDED, o, None)


def updated(old: KubeObject, new: KubeObject) -> Change:
    return Change(ChangeType.UPDATED, new, old)


def deleted(o: KubeObject) -> Change:
    return Change(ChangeType.DELETED, o, o)  # the store's DELETED: obj is the last known state


LABELS = {ChangeType.ADDED: "ADDED", ChangeType.UPDATED: "UPDATED", ChangeType.DELETED: "DELETED"}


def note(c: Change) -> Note:
    old = c.old.rv if c.type == ChangeType.UPDATED and c.old is not None else None
    return (LABELS[c.type], c.obj.key, c.obj.rv, old)


class Recorder:
    """Async handlers that record what they get; with a gate, each call waits for it."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.notes: list[Note] = []
        self.gate = gate
        self.entered = asyncio.Event()

    async def _wait(self) -> None:
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()

    async def on_add(self, o: KubeObject) -> None:
        await self._wait()
        self.notes.append(("ADDED", o.key, o.rv, None))

    async def on_update(self, old: KubeObject, new: KubeObject) -> None:
        await self._wait()
        self.notes.append(("UPDATED", new.key, new.rv, old.rv))

    async def on_delete(self, o: KubeObject) -> None:
        await self._wait()
        self.notes.append(("DELETED", o.key, o.rv, None))

    def subscribe(
        self,
        d: Dispatcher,
        *,
        name: str | None = None,
        coalesce: bool = False,
        max_queue: int | None = None,
        initial: Iterable[KubeObject] = (),
    ) -> Subscription:
        return d.add_handler(
            self.on_add,
            self.on_update,
            self.on_delete,
            name=name,
            coalesce=coalesce,
            max_queue=max_queue,
            initial=initial,
        )


class Model:
    """The store's side: turns operations on keys into Changes with increasing rvs."""

    def __init__(self) -> None:
        self.objects: dict[str, KubeObject] = {}
        self.rv = 0

    def touch(self, name: str, delete: bool = False) -> Change:
        self.rv += 1
        current = self.objects.get(name)
        if current is None:
            self.objects[name] = new = obj(name, self.rv)
            return added(new)
        if delete:
            del self.objects[name]
            return deleted(current)
        self.objects[name] = new = obj(name, self.rv)
        return updated(current, new)

    def final(self) -> dict[str, int]:
        return {o.key: o.rv for o in self.objects.values()}


def history(n: int, keys: str = "abc") -> tuple[list[Change], Model]:
    model = Model()
    changes = [model.touch(keys[i % len(keys)], delete=i % 7 == 6) for i in range(n)]
    return changes, model


def replay(notes: list[Note]) -> dict[str, int]:
    """Apply a subscriber's changes to a view, checking they are consistent."""
    view: dict[str, int] = {}
    for typ, key, rv, old in notes:
        if typ == "ADDED":
            assert key not in view, notes
        else:
            assert key in view and rv >= view[key], notes  # never backwards
        if typ == "UPDATED":
            assert old == view[key], notes  # old is what the subscriber last saw
        if typ == "DELETED":
            del view[key]
        else:
            view[key] = rv
    return view


# -- order, sync and async handlers, isolation ------------------------------------------------


async def test_sync_and_async_subscribers_get_every_change_in_order() -> None:
    changes, _ = history(40)
    d = Dispatcher("pods")
    rec = Recorder()
    sub_async = rec.subscribe(d, name="async")
    seen: list[Note] = []
    sub_sync = d.add_handler(
        lambda o: seen.append(("ADDED", o.key, o.rv, None)),
        lambda old, new: seen.append(("UPDATED", new.key, new.rv, old.rv)),
        lambda o: seen.append(("DELETED", o.key, o.rv, None)),
        name="sync",
    )
    for i in range(0, len(changes), 7):
        d.dispatch(changes[i : i + 7])
    await sub_async.join()
    await sub_sync.join()
    assert rec.notes == [note(c) for c in changes]
    assert seen == [note(c) for c in changes]
    assert sub_sync.handled_total == sub_async.handled_total == 40
    assert sub_sync.errors_total == sub_async.errors_total == 0
    await d.aclose()


async def test_missing_callbacks_skip_their_change_type() -> None:
    changes, _ = history(21)
    d = Dispatcher()
    gone: list[str] = []
    sub = d.add_handler(on_delete=lambda o: gone.append(o.key))
    d.dispatch(changes)
    await sub.join()
    assert gone == [c.obj.key for c in changes if c.type == ChangeType.DELETED]
    assert len(gone) == 3
    assert sub.handled_total == 21
    await d.aclose()


async def test_a_stuck_or_sleeping_handler_delays_only_itself() -> None:
    assert not inspect.iscoroutinefunction(Dispatcher.dispatch)
    d = Dispatcher("pods")
    stuck = Recorder(asyncio.Event())  # its gate never opens
    s_stuck = stuck.subscribe(d, name="stuck")
    slept = asyncio.Event()

    async def sleepy(o: KubeObject) -> None:
        slept.set()
        await asyncio.sleep(3600)

    s_sleepy = d.add_handler(sleepy, name="sleepy")
    fast = Recorder()
    s_fast = fast.subscribe(d, name="fast")
    changes, _ = history(300)
    for c in changes[:150]:
        d.dispatch([c])
    # dispatch never awaits: no handler has run yet, everything is queued
    assert fast.notes == [] and s_fast.depth == s_stuck.depth == 150
    await s_fast.join()
    assert stuck.entered.is_set() and slept.is_set()
    for c in changes[150:]:  # dispatch goes on while two subscribers are stuck mid-handler
        d.dispatch([c])
    await s_fast.join()
    assert fast.notes == [note(c) for c in changes]
    assert stuck.notes == []
    assert s_stuck.handled_total == s_sleepy.handled_total == 0
    assert s_stuck.depth == s_sleepy.depth == 299  # the first one is in flight
    await d.aclose()


async def test_handler_exceptions_are_logged_with_key_and_do_not_stop_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = Dispatcher("pods")
    seen: list[str] = []

    def on_add(o: KubeObject) -> None:
        if o.key == "n/bad":
            raise RuntimeError("boom")
        seen.append(o.key)

    async def on_update(old: KubeObject, new: KubeObject) -> None:
        await asyncio.sleep(0)
        raise ValueError("async boom")

    sub = d.add_handler(on_add, on_update, name="flaky")
    bad = obj("bad", 6)
    with caplog.at_level(logging.ERROR, logger="aioinformer.handlers"):
        d.dispatch([added(obj("a", 5)), added(bad), updated(bad, obj("bad", 7))])
        d.dispatch([added(obj("c", 8))])
        await sub.join()
    assert seen == ["n/a", "n/c"]
    assert sub.errors_total == 2 and sub.handled_total == 4
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    for record, kind, exc_type in zip(
        errors, ("Added", "Updated"), (RuntimeError, ValueError), strict=True
    ):
        message = record.getMessage()
        assert "n/bad" in message and "'flaky'" in message and "pods" in message
        assert kind in message
        assert record.exc_info is not None and isinstance(record.exc_info[1], exc_type)
    assert isinstance(sub.last_error, HandlerFailure)
    assert sub.last_error.key == "n/bad" and sub.last_error.change == ChangeType.UPDATED
    assert isinstance(sub.last_error.error, ValueError)
    await d.aclose()


async def test_a_handler_raising_on_every_change_logs_one_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """3,000 changes, a handler raising on each: all counted, one ERROR with the
    traceback; 10 s later the next failure is one summary line (no traceback) counting
    them; another exception type gets its own traceback."""
    clock = FakeClock()
    d = Dispatcher("pods", clock=clock)

    def on_add(o: KubeObject) -> None:
        raise (KeyError if o.key == "n/other" else RuntimeError)("boom")

    sub = d.add_handler(on_add, name="broken")
    with caplog.at_level(logging.ERROR, logger="aioinformer.handlers"):
        d.dispatch([added(obj(f"p{i}", i + 1)) for i in range(3000)])
        await sub.join()
        assert sub.errors_total == 3000
        (first,) = caplog.records
        assert "'broken' failed on Added n/p0" in first.getMessage()
        assert "[1 so far]" in first.getMessage() and first.exc_info is not None
        clock.advance(10.0)
        d.dispatch([added(obj("late", 9000)), added(obj("other", 9001))])
        await sub.join()
    summary, other = caplog.records[1:]
    assert "n/late" in summary.getMessage() and summary.exc_info is None
    assert "[3001 so far; 3000 of this kind since its last line 10 s ago]" in (summary.getMessage())
    assert other.exc_info is not None and isinstance(other.exc_info[1], KeyError)
    assert sub.errors_total == 3002
    await d.aclose()


# -- coalescing ---------------------------------------------------------------------------------

A1, A2, A3, B1 = obj("a", 1), obj("a", 2), obj("a", 3), obj("b", 1)

COALESCE_TABLE: list[tuple[str, list[Change], list[Note]]] = [
    ("added+updated", [added(A1), updated(A1, A2)], [("ADDED", "n/a", 2, None)]),
    ("updated+updated", [updated(A1, A2), updated(A2, A3)], [("UPDATED", "n/a", 3, 1)]),
    ("added+deleted", [added(A1), deleted(A1)], []),
    ("updated+deleted", [updated(A1, A2), deleted(A2)], [("DELETED", "n/a", 2, None)]),
    ("deleted+added", [deleted(A1), added(A2)], [("UPDATED", "n/a", 2, 1)]),
    ("added+updated+deleted", [added(A1), updated(A1, A2), deleted(A2)], []),
    ("added+deleted+added", [added(A1), deleted(A1), added(A2)], [("ADDED", "n/a", 2, None)]),
    (
        "deleted+added+updated",
        [deleted(A1), added(A2), updated(A2, A3)],
        [("UPDATED", "n/a", 3, 1)],
    ),
    ("deleted+added+deleted", [deleted(A1), added(A2), deleted(A2)], [("DELETED", "n/a", 2, None)]),
    (
        "keys keep the order of their first pending change",
        [added(A1), added(B1), updated(A1, A2)],
        [("ADDED", "n/a", 2, None), ("ADDED", "n/b", 1, None)],
    ),
]


@pytest.mark.parametrize(
    ("changes", "expected"), [c[1:] for c in COALESCE_TABLE], ids=[c[0] for c in COALESCE_TABLE]
)
async def test_coalescing_merge_rules(changes: list[Change], expected: list[Note]) -> None:
    d = Dispatcher()
    stream = d.changes(coalesce=True)
    d.dispatch(changes)
    assert stream.subscription.depth == len(expected)
    assert [note(await anext(stream)) for _ in expected] == expected
    assert stream.subscription.depth == 0
    await d.aclose()
    assert [c async for c in stream] == []


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 3), st.booleans(), st.booleans(), st.integers(0, 4)),
        max_size=60,
    )
)
def test_blocked_coalescing_subscriber_never_goes_backwards_and_converges(
    steps: list[tuple[int, bool, bool, int]],
) -> None:
    """For any change sequence with increasing rvs, a coalescing subscriber blocked and
    released at arbitrary points (and an exact one that overflows) ends with the store's
    state, never seeing a key go backwards; an exact subscriber sees every change."""

    async def scenario() -> None:
        gate = asyncio.Event()
        d = Dispatcher(slow_warning_depth=10**9)
        coalescing, overflowing, exact = Recorder(gate), Recorder(gate), Recorder(gate)
        subs = [
            coalescing.subscribe(d, coalesce=True),
            overflowing.subscribe(d, max_queue=2),
            exact.subscribe(d),
        ]
        model, batch, everything = Model(), list[Change](), list[Change]()
        for key, delete, flush, run in steps:
            batch.append(model.touch("abcd"[key], delete))
            if flush:
                d.dispatch(batch)
                everything += batch
                batch = []
            if run:  # let the handlers through for a few loop iterations
                gate.set()
                for _ in range(run):
                    await asyncio.sleep(0)
                gate.clear()
        d.dispatch(batch)
        everything += batch
        gate.set()
        for sub in subs:
            await sub.join()
        for rec in (coalescing, overflowing, exact):
            assert replay(rec.notes) == model.final()
        assert exact.notes == [note(c) for c in everything]
        assert subs[0].depth == subs[1].depth == 0 and not subs[1].statistics().coalescing
        assert subs[0].peak_depth <= 4
        await d.aclose()

    asyncio.run(scenario())


async def test_coalescing_queue_is_bounded_by_the_number_of_objects() -> None:
    gate = asyncio.Event()
    rec = Recorder(gate)
    d = Dispatcher(slow_warning_depth=10**9)
    sub = rec.subscribe(d, coalesce=True)
    model = Model()
    for start in range(0, 100_000, 1000):
        d.dispatch([model.touch(f"p{i % 100}") for i in range(start, start + 1000)])
        assert sub.depth <= 100
        await asyncio.sleep(0)  # the handler takes one change and blocks on the gate
    assert rec.entered.is_set() and rec.notes == []
    assert sub.peak_depth <= 100
    gate.set()
    await sub.join()
    assert replay(rec.notes) == model.final()
    assert sub.handled_total <= 101  # the first one plus one merged change per key
    await d.aclose()


async def test_max_queue_overflow_switches_to_coalescing_until_idle(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gate = asyncio.Event()
    rec = Recorder(gate)
    d = Dispatcher("pods", slow_warning_interval=3600)
    sub = rec.subscribe(d, name="laggard", max_queue=10)
    d.mark_synced()  # an overflow of the initial backlog is not warned about (test below)
    model = Model()
    with caplog.at_level(logging.WARNING, logger="aioinformer.handlers"):
        d.dispatch([model.touch("a")])
        await rec.entered.wait()  # the handler holds the first change
        for i in range(10):
            d.dispatch([model.touch("abcde"[i % 5])])
        assert not sub.statistics().coalescing and sub.overflows == 0 and sub.depth == 10
        for i in range(40):
            d.dispatch([model.touch("abcde"[i % 5], delete=i % 9 == 8)])
            assert sub.depth <= 10
        assert sub.coalescing and sub.overflows == 1 and sub.depth <= 5
        gate.set()
        await sub.join()
        assert replay(rec.notes) == model.final()
        assert not sub.statistics().coalescing  # caught up: exact again
        # A second episode counts again; its warning falls in the same interval.
        gate.clear()
        rec.entered.clear()
        d.dispatch([model.touch("a")])
        await rec.entered.wait()
        for i in range(20):
            d.dispatch([model.touch("abcde"[i % 5])])
        assert sub.coalescing and sub.overflows == 2
        gate.set()
        await sub.join()
    warnings = [r.getMessage() for r in caplog.records if "max_queue" in r.getMessage()]
    assert len(warnings) == 1
    assert "pods" in warnings[0] and "'laggard'" in warnings[0]
    assert replay(rec.notes) == model.final()
    await d.aclose()


async def test_exact_subscribers_are_capped_by_default_and_none_opts_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stuck exact subscriber made without ``max_queue`` holds at most
    DEFAULT_MAX_QUEUE changes, then at most one per key; ``max_queue=None`` keeps
    every change (unbounded), and both end with the same final state."""
    gate = asyncio.Event()
    capped, unbounded = Recorder(gate), Recorder(gate)
    d = Dispatcher("pods", slow_warning_depth=10**9)
    sub = d.add_handler(capped.on_add, capped.on_update, capped.on_delete, name="capped")
    free = unbounded.subscribe(d, name="unbounded", max_queue=None)
    d.mark_synced()
    model = Model()
    keys = [f"k{i}" for i in range(50)]
    total = DEFAULT_MAX_QUEUE + 5000
    with caplog.at_level(logging.WARNING, logger="aioinformer.handlers"):
        d.dispatch([model.touch(keys[0])])
        await capped.entered.wait()  # both handlers hold their first change, stuck
        for start in range(0, total, 1000):
            d.dispatch([model.touch(keys[i % len(keys)]) for i in range(start, start + 1000)])
            assert sub.depth <= DEFAULT_MAX_QUEUE
    assert sub.overflows == 1 and sub.coalescing and sub.depth <= len(keys)
    assert free.depth == total and free.overflows == 0 and not free.coalescing
    assert any(
        "'capped'" in r.getMessage() and "max_queue" in r.getMessage() for r in caplog.records
    )
    gate.set()
    await sub.join()
    await free.join()
    assert replay(capped.notes) == replay(unbounded.notes) == model.final()
    assert len(unbounded.notes) == total + 1
    await d.aclose()


async def test_overflow_of_the_initial_backlog_is_counted_not_warned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The initial list (before mark_synced) may exceed max_queue: it is merged and
    counted, silently; an overflow after the sync is warned about."""
    gate = asyncio.Event()
    rec = Recorder(gate)
    d = Dispatcher("pods", slow_warning_interval=0)
    sub = rec.subscribe(d, name="late", max_queue=5)
    model = Model()
    with caplog.at_level(logging.WARNING, logger="aioinformer.handlers"):
        d.dispatch([model.touch(f"k{i}") for i in range(20)])
        assert sub.overflows == 1 and sub.depth == 20  # 20 distinct keys: nothing to merge
        d.mark_synced()
        assert not [r for r in caplog.records if "max_queue" in r.getMessage()]
        await rec.entered.wait()
        for i in range(30):
            d.dispatch([model.touch(f"k{i % 20}")])
        assert sub.overflows == 1 and sub.coalescing  # still merging since the first one
    gate.set()
    await sub.join()
    assert replay(rec.notes) == model.final()
    gate.clear()
    rec.entered.clear()
    with caplog.at_level(logging.WARNING, logger="aioinformer.handlers"):
        d.dispatch([model.touch("k0")])
        await rec.entered.wait()
        for i in range(10):
            d.dispatch([model.touch(f"k{i}")])
    assert sub.overflows == 2
    assert [r for r in caplog.records if "max_queue=5" in r.getMessage()]
    gate.set()
    await d.aclose()


async def test_stuck_subscribers_on_an_informer_stay_bounded_and_are_reported(
    sim: KubeSim,
) -> None:
    """End to end over HTTP: many updates over few keys while handlers are stuck. The
    coalescing queue never holds more than one change per object, the exact one
    (max_queue=100) overflows into coalescing instead of growing, and both backlogs show
    in the informer's stats and in the Prometheus series."""
    keys = 10
    for i in range(keys):
        sim.create("pods", {"metadata": {"name": f"p{i}"}, "spec": POD_SPEC}, "default")
    stuck = asyncio.Event()
    async with sim.api_client() as api, InformerFactory(api) as factory:
        pods = factory.informer("v1", "pods")
        merged = pods.add_handler(lambda o: stuck.wait(), coalesce=True, name="stuck-merged")
        exact = pods.add_handler(lambda o: stuck.wait(), max_queue=100, name="stuck-exact")
        metrics = Metrics()
        metrics.add_informer_source(lambda: [pods.statistics()])
        await factory.wait_for_sync(timeout=30)
        peak_merged = 0
        for n in range(1500):
            sim.patch("pods", f"p{n % keys}", {"metadata": {"labels": {"n": str(n)}}}, "default")
            if n % 100 == 99:
                await pods.wait_for_rv(sim.resource_version, timeout=30)
                peak_merged = max(peak_merged, merged.depth)
        assert peak_merged <= keys and merged.peak_depth <= keys
        assert exact.overflows >= 1 and exact.depth <= keys and exact.peak_depth <= 100 + keys
        by_name = {h.name: h for h in pods.statistics().handlers}
        assert by_name["stuck-exact"].overflows == exact.overflows
        text = metrics.render().decode()
        depth = 'aioinformer_handler_queue_depth{informer="pods",subscriber="stuck-exact"} '
        assert depth + f"{float(exact.depth)}" in text
        overflows = 'aioinformer_handler_overflows_total{informer="pods",subscriber="stuck-exact"}'
        assert f"{overflows} {float(exact.overflows)}" in text
        stuck.set()


async def test_namespace_subscribers_get_only_their_namespace_and_still_sync() -> None:
    d = Dispatcher()
    mine = Recorder()
    d.add_handler(mine.on_add, mine.on_update, mine.on_delete, namespace="n")
    stream = d.changes(namespace="n")
    other = Recorder()
    d.add_handler(other.on_add, namespace="nowhere")
    a, b = obj("a", 1, ns="n"), obj("b", 2, ns="m")
    a2 = obj("a", 3, ns="n")
    d.dispatch([added(a), added(b), updated(b, obj("b", 4, ns="m")), updated(a, a2)])
    d.dispatch([deleted(a2)])
    d.mark_synced()
    expected = [("ADDED", "n/a", 1, None), ("UPDATED", "n/a", 3, 1), ("DELETED", "n/a", 3, None)]
    assert [note(c) for c in [await anext(stream) for _ in range(3)]] == expected
    subs = d.subscriptions
    for sub in (subs[0], subs[2]):
        await asyncio.wait_for(sub.wait_for_sync(), 5)
    assert mine.notes == expected
    assert other.notes == [] and subs[2].handled_total == 0 and subs[2].has_synced
    with pytest.raises(ConfigError):
        d.add_handler(lambda o: None, namespace="")
    await d.aclose()


async def test_late_namespace_subscriber_on_an_informer_starts_from_its_namespace(
    sim: KubeSim,
) -> None:
    for ns in ("team-a", "team-b"):
        sim.create("namespaces", {"metadata": {"name": ns}})
        for i in range(3):
            sim.create("pods", {"metadata": {"name": f"p{i}"}, "spec": POD_SPEC}, ns)
    async with sim.api_client() as api, InformerFactory(api) as factory:
        pods = factory.informer("v1", "pods")
        await factory.wait_for_sync(timeout=30)
        seen: list[str] = []
        sub = pods.add_handler(on_add=lambda o: seen.append(o.key), namespace="team-b")
        sim.create("pods", {"metadata": {"name": "late"}, "spec": POD_SPEC}, "team-a")
        sim.create("pods", {"metadata": {"name": "late"}, "spec": POD_SPEC}, "team-b")
        await pods.wait_for_rv(sim.resource_version, timeout=30)  # dispatched by then
        await asyncio.wait_for(sub.join(), 10)
        assert sorted(seen) == ["team-b/late", "team-b/p0", "team-b/p1", "team-b/p2"]


# -- slow-handler warning ----------------------------------------------------------------------


def slow_depths(caplog: pytest.LogCaptureFixture) -> list[int]:
    return [
        int(m.group(1))
        for r in caplog.records
        if r.levelno == logging.WARNING
        and (m := re.search(r"slow handler .*: (\d+) changes queued", r.getMessage()))
    ]


async def test_slow_warning_names_dispatcher_subscriber_and_depth_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("test.handlers")
    d = Dispatcher("pods", slow_warning_depth=5, slow_warning_interval=3600, logger=logger)
    rec = Recorder(asyncio.Event())
    rec.subscribe(d, name="slowpoke")
    d.mark_synced()
    model = Model()
    with caplog.at_level(logging.WARNING, logger="test.handlers"):
        d.dispatch([model.touch("a")])
        await rec.entered.wait()
        for i in range(50):
            d.dispatch([model.touch(f"k{i}")])
    assert slow_depths(caplog) == [5]
    message = next(r.getMessage() for r in caplog.records if "slow" in r.getMessage())
    assert message.startswith("pods:") and "'slowpoke'" in message
    await d.aclose()


async def test_slow_warning_repeats_after_the_interval_and_not_before_sync(
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = Dispatcher("pods", slow_warning_depth=5, slow_warning_interval=0)
    rec = Recorder(asyncio.Event())
    rec.subscribe(d)
    model = Model()
    with caplog.at_level(logging.WARNING, logger="aioinformer.handlers"):
        d.dispatch([model.touch("a")])
        await rec.entered.wait()
        for i in range(8):  # depths 1..8, but the initial backlog is expected: no warning
            d.dispatch([model.touch(f"k{i}")])
        assert slow_depths(caplog) == []
        d.mark_synced()  # synced once these 8 are handled: they never are
        d.dispatch([model.touch("x")])
        assert slow_depths(caplog) == []
    await d.aclose()

    d = Dispatcher("pods", slow_warning_depth=5, slow_warning_interval=0)
    d.mark_synced()
    rec = Recorder(asyncio.Event())
    rec.subscribe(d)
    with caplog.at_level(logging.WARNING, logger="aioinformer.handlers"):
        d.dispatch([model.touch("a")])
        await rec.entered.wait()
        for i in range(8):
            d.dispatch([model.touch(f"k{i}")])
    assert slow_depths(caplog) == [5, 6, 7, 8]  # interval 0: every dispatch at or over 5
    await d.aclose()


async def test_slow_warnings_are_spaced_by_the_interval_on_the_dispatchers_clock(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(100.0)
    d = Dispatcher("pods", slow_warning_depth=5, slow_warning_interval=10.0, clock=clock)
    d.mark_synced()
    rec = Recorder(asyncio.Event())
    rec.subscribe(d)
    model = Model()
    with caplog.at_level(logging.WARNING, logger="aioinformer.handlers"):
        d.dispatch([model.touch("a")])
        await rec.entered.wait()
        for i in range(4):  # depths 1..4: under the threshold
            d.dispatch([model.touch(f"k{i}")])
        assert slow_depths(caplog) == []
        d.dispatch([model.touch("k4")])  # depth 5 at t=100: warned
        clock.advance(9.999)
        d.dispatch([model.touch("k5")])  # depth 6, 9.999 s later: not yet
        clock.advance(0.001)
        d.dispatch([model.touch("k6")])  # depth 7, 10 s later: warned again
        d.dispatch([model.touch("k7")])
    assert slow_depths(caplog) == [5, 7]
    await d.aclose()


# -- has_synced ---------------------------------------------------------------------------------


async def test_has_synced_once_the_pre_sync_backlog_is_handled() -> None:
    d = Dispatcher()
    never = asyncio.Event()
    calls: list[str] = []

    async def on_add(o: KubeObject) -> None:
        calls.append(o.key)
        if len(calls) == 4:  # the first change after mark_synced never completes
            await never.wait()

    sub = d.add_handler(on_add)
    d.dispatch([added(obj(n, i)) for i, n in enumerate("abc", 1)])
    assert not sub.statistics().has_synced
    d.mark_synced()
    assert not sub.statistics().has_synced
    d.dispatch([added(obj("d", 4)), added(obj("e", 5))])
    with pytest.raises(FreshnessTimeout):
        await sub.wait_for_sync(timeout=0)
    await sub.wait_for_sync()
    assert sub.has_synced and sub.handled_total == 3
    assert sub.statistics().has_synced
    d.mark_synced()  # idempotent
    await d.aclose()
    assert sub.has_synced


async def test_subscriber_with_empty_queue_syncs_at_mark_synced() -> None:
    d = Dispatcher()
    sub = d.add_handler(lambda o: None)
    stream = d.changes()
    assert not sub.statistics().has_synced and not stream.subscription.statistics().has_synced
    d.mark_synced()
    assert sub.has_synced and stream.subscription.has_synced
    await sub.wait_for_sync()
    await d.aclose()


async def test_late_subscriber_gets_initial_objects_first_then_syncs() -> None:
    d = Dispatcher()
    a1, a3, b2 = obj("a", 1), obj("a", 3), obj("b", 2)
    d.dispatch([added(a1), added(b2)])
    d.mark_synced()
    gate = asyncio.Event()
    rec = Recorder(gate)
    sub = rec.subscribe(d, name="late", initial=[a1, b2])
    assert not sub.statistics().has_synced and sub.depth == 2
    d.dispatch([updated(a1, a3)])
    gate.set()
    await sub.wait_for_sync()
    await sub.join()
    assert rec.notes == [
        ("ADDED", "n/a", 1, None),
        ("ADDED", "n/b", 2, None),
        note(updated(a1, a3)),
    ]

    empty = d.add_handler(lambda o: None, initial=())
    assert empty.has_synced  # nothing to replay

    stream = d.changes(initial=[a3, b2])
    assert [note(await anext(stream)) for _ in range(2)] == [
        ("ADDED", "n/a", 3, None),
        ("ADDED", "n/b", 2, None),
    ]
    assert not stream.subscription.statistics().has_synced  # the consumer still holds the second
    d.dispatch([deleted(b2)])
    assert note(await anext(stream)) == ("DELETED", "n/b", 2, None)
    assert stream.subscription.has_synced
    await d.aclose()


async def test_coalesced_away_notifications_count_as_handled_for_sync() -> None:
    d = Dispatcher()
    stream = d.changes(coalesce=True)
    d.dispatch([added(A1)])
    d.mark_synced()
    assert not stream.subscription.statistics().has_synced
    d.dispatch([deleted(A1)])  # ADDED + DELETED: nothing left to deliver
    assert stream.subscription.has_synced and stream.subscription.depth == 0
    await d.aclose()


async def test_wait_for_sync_raises_closed_error_when_cancelled_first() -> None:
    d = Dispatcher()
    sub = d.add_handler(lambda o: None)
    waiter = asyncio.create_task(sub.wait_for_sync())
    await asyncio.sleep(0)
    sub.cancel()
    with pytest.raises(ClosedError):
        await waiter
    await d.aclose()


# -- events(), cancel(), aclose() ------------------------------------------------------------


async def test_events_iterates_changes_in_order_and_ends_on_aclose() -> None:
    d = Dispatcher()
    stream = d.changes(name="stream")
    got: list[Change] = []

    async def consume() -> None:
        async for change in stream:
            got.append(change)

    consumer = asyncio.create_task(consume())
    changes, _ = history(30)
    d.dispatch(changes[:10])
    d.dispatch(changes[10:])
    await stream.subscription.join()
    assert got == changes
    assert stream.subscription.handled_total == 30
    await d.aclose()
    await asyncio.wait_for(consumer, 10)  # iteration ended
    assert d.statistics() == []


async def test_events_async_with_unsubscribes() -> None:
    d = Dispatcher()
    async with d.changes() as stream:
        assert d.subscriptions == [stream.subscription]
        d.dispatch([added(A1)])
        assert note(await anext(stream)) == ("ADDED", "n/a", 1, None)
    assert stream.subscription.closed and d.subscriptions == []
    d.dispatch([added(B1)])
    assert [c async for c in stream] == []
    await stream.aclose()  # idempotent
    await d.aclose()


async def test_cancel_from_inside_the_handler_stops_the_subscription() -> None:
    before = asyncio.all_tasks()
    d = Dispatcher()
    seen: list[str] = []

    def on_add(o: KubeObject) -> None:
        seen.append(o.key)
        sub.cancel()

    sub = d.add_handler(on_add)
    other = d.add_handler(lambda o: None)
    d.dispatch([added(A1), added(B1)])
    await sub.join()
    await other.join()
    assert seen == ["n/a"] and sub.closed
    assert d.subscriptions == [other]
    d.dispatch([added(obj("c", 1))])
    assert sub.handled_total == 1 and sub.depth == 0
    await d.aclose()
    assert asyncio.all_tasks() == before


async def test_aclose_cancels_handlers_awaits_every_task_and_is_idempotent() -> None:
    before = asyncio.all_tasks()
    d = Dispatcher()
    started = asyncio.Event()
    cancelled: list[str] = []

    async def stuck(o: KubeObject) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(o.key)
            raise

    async def sleeper(o: KubeObject) -> None:
        await asyncio.sleep(3600)

    subs = [d.add_handler(stuck), d.add_handler(sleeper), d.add_handler(print, coalesce=True)]
    gone = d.add_handler(lambda o: None)
    gone.cancel()  # its task must be awaited too
    stream = d.changes()
    d.dispatch([added(A1), added(B1)])
    await started.wait()
    assert len(asyncio.all_tasks() - before) >= 3
    await asyncio.gather(d.aclose(), d.aclose())
    await d.aclose()
    assert asyncio.all_tasks() == before
    assert cancelled == ["n/a"]
    assert d.subscriptions == [] and all(s.closed and s.depth == 0 for s in subs)
    with pytest.raises(ClosedError):
        d.add_handler(lambda o: None)
    with pytest.raises(ClosedError):
        d.changes()
    d.dispatch([added(A1)])  # a no-op after close
    assert [c async for c in stream] == []


# -- configuration and statistics -------------------------------------------------------------


async def test_config_errors() -> None:
    with pytest.raises(ConfigError):
        Dispatcher(slow_warning_depth=0)
    with pytest.raises(ConfigError):
        Dispatcher(slow_warning_interval=-1)
    d = Dispatcher()
    with pytest.raises(ConfigError):
        d.add_handler()
    with pytest.raises(ConfigError):
        d.add_handler(lambda o: None, max_queue=0)
    with pytest.raises(ConfigError):
        d.changes(max_queue=0)
    assert d.subscriptions == []
    await d.aclose()


async def test_statistics_and_default_names() -> None:
    d = Dispatcher()

    def on_pod(o: KubeObject) -> None:
        pass

    sub = d.add_handler(on_pod)
    stream = d.changes(coalesce=True)
    assert sub.name.endswith("on_pod#1") and stream.subscription.name == "changes#2"
    d.dispatch([added(A1), updated(A1, A2), added(B1)])
    await sub.join()
    first, second = d.statistics()
    assert (first.name, first.depth, first.handled_total, first.coalescing) == (
        sub.name,
        0,
        3,
        False,
    )
    assert (second.depth, second.peak_depth, second.coalescing, second.has_synced) == (
        2,
        2,
        True,
        False,
    )
    await d.aclose()


@pytest.mark.looptime
async def test_aclose_abandons_a_handler_whose_cleanup_outlasts_the_grace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A handler whose cancellation cleanup takes 12 s: the dispatcher's close (an
    informer's stop, so a factory's and a manager's) returns STOP_GRACE (1 s) after it
    began, naming the handler it abandoned; the cleanup still runs to its end."""
    loop = asyncio.get_running_loop()
    d = Dispatcher("pods")
    started = asyncio.Event()
    cleaned: list[float] = []
    ended = asyncio.Event()

    async def slow_cleanup(o: KubeObject) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(12)  # the handler's own slow cleanup (virtual time)
            cleaned.append(loop.time())
            ended.set()

    d.add_handler(slow_cleanup, name="slow")
    d.dispatch([added(A1)])
    await started.wait()
    closing = loop.time()
    await d.aclose()
    assert loop.time() - closing == pytest.approx(STOP_GRACE)
    assert "pods: abandoned 1 handler tasks still running 1 s after their cancellation" in (
        caplog.text
    )
    assert "(pods/slow)" in caplog.text
    await asyncio.wait_for(ended.wait(), 30)  # the abandoned cleanup still runs to its end
    assert cleaned == [pytest.approx(closing + 12)]


async def test_a_subscription_starts_its_task_with_its_first_change() -> None:
    """A handler added to an informer that never runs (a manager that failed to start)
    leaves no task behind; the first change starts it."""
    before = asyncio.all_tasks()
    d = Dispatcher()
    seen: list[str] = []
    sub = d.add_handler(lambda o: seen.append(o.key))
    d.mark_synced()
    assert sub.has_synced and asyncio.all_tasks() == before
    d.dispatch([added(A1)])
    assert len(asyncio.all_tasks() - before) == 1
    await sub.join()
    assert seen == ["n/a"]
    await d.aclose()
    assert asyncio.all_tasks() == before

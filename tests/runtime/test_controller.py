"""Controller over real HTTP against KubeSim: reconciles, errors retried with per-key
backoff, ``Result(requeue=...)`` and ``Result(requeue_after=...)``, predicates, the owns and
watches mappings, freshness (``record_write``) and its timeout, expectations, statistics,
stop and restart, and a locked-store informer as the primary.

Retry delays come from the rate limiter, so the tests inject one that records every
``when`` (:class:`~tests.support.FixedLimiter`): the delays are asserted where they are
decided, and are short enough that no test waits for them in earnest. The work queue's
use of them is tested on virtual time in test_workqueue.py.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest

from aioinformer import (
    Controller,
    ControllerStatistics,
    Informer,
    InformerFactory,
    KubeObject,
    Result,
    WatchOptions,
    WorkQueueStatistics,
    generation_changed,
)
from aioinformer._runtime.ratelimit import ItemExponentialFailureRateLimiter
from aioinformer.testing import KubeSim
from tests.support import FixedLimiter, configmap, eventually, pod, pod_object, transcript

FAST = WatchOptions(min_watch_timeout=2.0, max_watch_timeout=4.0)
FAR = 3600.0  # a delay no test waits for
PODSETS = "example.aioinformer.dev/v1/podsets"


def podset(name: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "example.aioinformer.dev/v1",
        "kind": "PodSet",
        "metadata": {"name": name},
        "spec": {"replicas": replicas},
    }


def owned_pod(name: str, owner: Mapping[str, Any], kind: str = "PodSet") -> dict[str, Any]:
    body = pod(name)
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": kind,
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    body["metadata"]["ownerReferences"] = [ref]
    return body


class Reconciles:
    """A reconciler that records every call and answers what ``answer(key, n)`` says (the
    n-th call for that key, from 1): a Result, None, or an exception to raise."""

    def __init__(
        self, answer: Callable[[str, int], Result | Exception | None] = lambda k, n: None
    ) -> None:
        self.answer = answer
        self.calls: list[str] = []
        self.gate: asyncio.Event | None = None  # when set: each call waits for it
        self.running = 0

    def count(self, key: str) -> int:
        return self.calls.count(key)

    async def __call__(self, key: str) -> Result | None:
        self.calls.append(key)
        self.running += 1
        try:
            if self.gate is not None:
                await self.gate.wait()
            got = self.answer(key, self.calls.count(key))
        finally:
            self.running -= 1
        if isinstance(got, Exception):
            raise got
        return got


@asynccontextmanager
async def running(
    api: Any,
    reconcile: Callable[[str], Awaitable[Result | None]],
    *,
    resource: tuple[str, str] = ("v1", "configmaps"),
    kind: str = "ConfigMap",
    store: str = "snapshot",
    wire: Callable[[InformerFactory], Mapping[str, Any]] = lambda f: {},
    **options: Any,
) -> AsyncIterator[Controller]:
    """A factory on namespace "default" and a started Controller named "test" on its
    ``resource`` informer; ``wire(factory)`` gives extra Controller arguments (owns,
    watches); the controller is stopped on exit."""
    async with InformerFactory(api, "default", watch_options=FAST) as factory:
        primary = factory.informer(*resource, store=store)  # type: ignore[arg-type]
        options.setdefault("rate_limiter", FixedLimiter(0.001))
        c = Controller(
            "test", reconcile, primary=primary, primary_kind=kind, **wire(factory), **options
        )
        await factory.wait_for_sync(timeout=30)
        c.start()
        try:
            yield c
        finally:
            await c.stop()


def sample(c: Controller, series: str, **labels: str) -> float:
    """A sample of the controller's metrics (0.0 if the series has none yet)."""
    value = c.metrics.registry.get_sample_value(
        f"aioinformer_{series}", {"controller": "test", **labels}
    )
    return value or 0.0


def handled(informer: Informer, subscriber: str) -> int:
    """Changes the named handler subscription of ``informer`` has handled."""
    (sub,) = [s for s in informer.statistics().handlers if s.name == subscriber]
    return sub.handled_total


@pytest.fixture
async def podsets(sim: KubeSim) -> str:
    sim.create("customresourcedefinitions", transcript("13a")["request"]["body"])
    await sim.wait_served(PODSETS)
    return PODSETS


# -- reconciling --------------------------------------------------------------------------------


async def test_every_primary_object_is_reconciled_and_so_are_changes(
    sim: KubeSim, api: Any
) -> None:
    for name in ("a", "b"):
        sim.create("configmaps", configmap(name), "default")
    sim.create("namespaces", {"metadata": {"name": "elsewhere"}})
    sim.create("configmaps", configmap("other"), "elsewhere")  # not the informer's namespace
    rec = Reconciles()
    async with running(api, rec) as c:
        await eventually(lambda: {"default/a", "default/b"} <= set(rec.calls), "both reconciled")
        sim.create("configmaps", configmap("c"), "default")
        sim.patch("configmaps", "a", {"data": {"v": "2"}}, "default")
        sim.delete("configmaps", "b", "default")
        await eventually(lambda: rec.count("default/c") == 1, "the new one")
        await eventually(lambda: rec.count("default/b") == 2, "the deleted one")
        await eventually(lambda: rec.count("default/a") == 2, "the changed one")
        await eventually(lambda: c.queue.statistics().processing == 0, "the workers idle")
        stats = c.statistics()
        assert isinstance(stats, ControllerStatistics) and isinstance(
            stats.queue, WorkQueueStatistics
        )
        assert (stats.name, stats.reconciles, stats.stale_reads_avoided) == (
            "test",
            len(rec.calls),
            0,
        )
        assert stats.queue.name == "test" and stats.queue.depth == 0
        assert sample(c, "reconcile_total", result="success") == len(rec.calls)
        assert sample(c, "reconcile_duration_seconds_count") == len(rec.calls)
    assert "elsewhere/other" not in rec.calls


async def test_a_failing_reconcile_is_retried_with_per_key_backoff(sim: KubeSim, api: Any) -> None:
    """Each failure asks the rate limiter for the key's next delay (the default limiter
    doubles it per key); the first success forgets the key's failures; other keys are
    reconciled meanwhile."""
    sim.create("configmaps", configmap("bad"), "default")
    sim.create("configmaps", configmap("good"), "default")
    delays: list[float] = []

    class Spy(ItemExponentialFailureRateLimiter[Any]):
        def when(self, item: Any) -> float:
            delay = super().when(item)
            delays.append(delay)
            return delay

    limiter = Spy(base_delay=0.001, max_delay=1.0)
    rec = Reconciles(lambda k, n: RuntimeError("boom") if k == "default/bad" and n <= 3 else None)
    async with running(api, rec, rate_limiter=limiter) as c:
        await eventually(lambda: rec.count("default/bad") == 4, "three retries, then success")
        await eventually(lambda: c.queue.statistics().processing == 0, "the workers idle")
        assert rec.count("default/good") == 1
        assert delays == [0.001, 0.002, 0.004]
        assert limiter.num_requeues("default/bad") == 0  # forgotten after the success
        assert sample(c, "reconcile_total", result="error") == 3
        assert c.statistics().queue.retries_total == 3


async def test_requeue_true_is_a_rate_limited_retry(sim: KubeSim, api: Any) -> None:
    sim.create("configmaps", configmap("again"), "default")
    limiter = FixedLimiter(0.001)
    rec = Reconciles(lambda k, n: Result(requeue=True) if n < 3 else None)
    async with running(api, rec, rate_limiter=limiter) as c:
        await eventually(lambda: rec.count("default/again") == 3, "two requeues")
        await eventually(lambda: "default/again" in limiter.forgotten, "the final success")
        assert limiter.asked == ["default/again", "default/again"]
        assert sample(c, "reconcile_total", result="requeue") == 2
        assert sample(c, "reconcile_total", result="success") == 1


async def test_requeue_after_schedules_the_key_and_resets_its_backoff(
    sim: KubeSim, api: Any
) -> None:
    sim.create("configmaps", configmap("soon"), "default")
    sim.create("configmaps", configmap("later"), "default")
    limiter = FixedLimiter(0.001)

    def answer(key: str, n: int) -> Result | None:
        if key == "default/later":
            return Result(requeue_after=FAR)
        return Result(requeue_after=0.01) if n == 1 else None

    rec = Reconciles(answer)
    async with running(api, rec, rate_limiter=limiter) as c:
        await eventually(lambda: rec.count("default/soon") == 2, "the key back after 10 ms")
        await eventually(lambda: c.queue.statistics().waiting == 1, "the far one waiting")
        assert rec.count("default/later") == 1
        assert limiter.asked == []  # a requeue_after is not a failure
        assert limiter.forgotten.count("default/soon") == 2  # after the requeue and at the end
        assert "default/later" in limiter.forgotten
        assert sample(c, "reconcile_total", result="requeue_after") == 2


async def test_a_key_is_never_reconciled_twice_at_once(sim: KubeSim, api: Any) -> None:
    sim.create("configmaps", configmap("busy"), "default")
    rec = Reconciles()
    rec.gate = asyncio.Event()
    async with running(api, rec, concurrency=4) as c:
        await eventually(lambda: rec.running == 1, "the first reconcile")
        for i in range(3):
            sim.patch("configmaps", "busy", {"data": {"v": str(i)}}, "default")
        await eventually(lambda: c.queue.statistics().depth == 1, "the changes queued once")
        assert rec.running == 1 and c.queue.statistics().getters == 3  # three workers idle
        rec.gate.set()
        await eventually(lambda: rec.count("default/busy") == 2, "one more reconcile")
        await eventually(lambda: c.queue.statistics().processing == 0, "the workers idle")
        assert rec.count("default/busy") == 2


# -- predicates, owns, watches -------------------------------------------------------------------


def test_generation_changed() -> None:
    v1, v1_relabelled, v2 = (
        pod_object("p", rv=1, generation=1),
        pod_object("p", rv=2, generation=1, app="x"),
        pod_object("p", rv=3, generation=2),
    )
    assert generation_changed(None, v1)  # a first sight always counts
    assert not generation_changed(v1, v1_relabelled)
    assert generation_changed(v1_relabelled, v2)


async def test_a_predicate_filters_primary_updates(sim: KubeSim, api: Any, podsets: str) -> None:
    """With generation_changed, a metadata-only change reaches the controller's handler
    but queues nothing; a spec change is reconciled."""
    sim.create(podsets, podset("web"), "default")
    rec = Reconciles()
    gv, plural = podsets.rsplit("/", 1)
    async with running(
        api, rec, resource=(gv, plural), kind="PodSet", predicates=[generation_changed]
    ) as c:
        await eventually(lambda: rec.count("default/web") == 1, "the first reconcile")
        await eventually(lambda: c.queue.statistics().processing == 0, "the workers idle")
        adds = c.statistics().queue.adds_total
        seen = handled(c.primary, "test/primary")
        sim.patch(podsets, "web", {"metadata": {"labels": {"tier": "x"}}}, "default")
        await eventually(lambda: handled(c.primary, "test/primary") > seen, "the label change")
        assert c.statistics().queue.adds_total == adds  # the handler queued nothing
        sim.patch(podsets, "web", {"spec": {"replicas": 3}}, "default")
        await eventually(lambda: rec.count("default/web") == 2, "the spec change")
        assert c.statistics().queue.adds_total == adds + 1


async def test_owned_objects_reconcile_their_controller_owner(
    sim: KubeSim, api: Any, podsets: str
) -> None:
    web = sim.create(podsets, podset("web"), "default")
    rec = Reconciles()
    gv, plural = podsets.rsplit("/", 1)
    owns = {"owns": []}

    def wire(f: InformerFactory) -> Mapping[str, Any]:
        owns["owns"] = [f.informer("v1", "pods")]
        return owns

    async with running(api, rec, resource=(gv, plural), kind="PodSet", wire=wire):
        await eventually(lambda: rec.count("default/web") == 1, "the first reconcile")
        (pods,) = owns["owns"]
        sim.create("pods", owned_pod("web-0", web), "default")
        await eventually(lambda: rec.count("default/web") == 2, "the owned pod's ADDED")
        sim.patch("pods", "web-0", {"metadata": {"labels": {"v": "2"}}}, "default")
        await eventually(lambda: rec.count("default/web") == 3, "its update")
        seen = handled(pods, "test/owns:pods[default]")
        sim.create("pods", owned_pod("stray", web, kind="ReplicaSet"), "default")  # other kind
        sim.create("pods", pod("orphan"), "default")
        await eventually(
            lambda: handled(pods, "test/owns:pods[default]") >= seen + 2, "both handled"
        )
        sim.delete("pods", "web-0", "default")
        await eventually(lambda: rec.count("default/web") == 4, "its deletion")
    assert Counter(rec.calls) == {"default/web": 4}  # the stray and the orphan map to nothing


async def test_watched_objects_reconcile_the_keys_their_mapper_gives(
    sim: KubeSim, api: Any
) -> None:
    """A watched informer's events reconcile ``mapper(obj)``; with a namespaced primary,
    mapped keys of other namespaces are ignored."""
    sim.create("configmaps", configmap("target"), "default")

    def mapper(obj: KubeObject) -> Iterable[str]:
        return [f"default/{obj.labels['for']}", f"elsewhere/{obj.labels['for']}"]

    def wire(f: InformerFactory) -> Mapping[str, Any]:
        return {"watches": [(f.informer("v1", "pods", namespace=None), mapper)]}

    rec = Reconciles()
    async with running(api, rec, wire=wire) as c:
        await eventually(lambda: rec.count("default/target") == 1, "the first reconcile")
        sim.create("pods", pod("p", **{"for": "target"}), "default")
        await eventually(lambda: rec.count("default/target") == 2, "the watched pod's ADDED")
        sim.delete("pods", "p", "default")
        # (the deletion may come as two events, deletionTimestamp then DELETED, handled
        # apart when the informer delivers them in separate batches)
        await eventually(lambda: rec.count("default/target") >= 3, "its deletion")
        await eventually(lambda: c.queue.statistics().processing == 0, "the workers idle")
    assert set(rec.calls) == {"default/target"}


async def test_owns_key_false_skips_the_key(sim: KubeSim, api: Any) -> None:
    sim.create("configmaps", configmap("mine"), "default")
    sim.create("configmaps", configmap("theirs"), "default")
    asked: list[str] = []

    def owns_key(key: str) -> bool:
        asked.append(key)
        return key == "default/mine"

    rec = Reconciles()
    async with running(api, rec, owns_key=owns_key) as c:
        await eventually(lambda: {"default/mine", "default/theirs"} <= set(asked), "both asked")
        await eventually(lambda: c.queue.statistics().processing == 0, "the workers idle")
    assert rec.calls == ["default/mine"]


# -- freshness and expectations ------------------------------------------------------------------


async def test_a_reconcile_after_a_write_waits_until_the_cache_has_it(
    sim: KubeSim, api: Any
) -> None:
    """record_write: the next reconcile of the key sees the write in the cache, even while
    the watch lags (its events held back by the server until the test lets them go)."""
    sim.create("configmaps", configmap("cm"), "default")
    seen_rv: list[int] = []
    written: list[int] = []
    holder: list[Controller] = []

    async def reconcile(key: str) -> Result | None:
        c = holder[0]
        obj = c.primary.snapshot().get(key)
        assert obj is not None
        seen_rv.append(obj.rv)
        if len(seen_rv) == 1:
            sim.faults.delay_watch_events(FAR)  # the cache falls behind the server
            made = sim.patch("configmaps", "cm", {"data": {"v": "2"}}, "default")
            written.append(int(made["metadata"]["resourceVersion"]))
            c.record_write(key, c.primary, made["metadata"]["resourceVersion"])
            return Result(requeue_after=0.001)
        return None

    async with running(api, reconcile, freshness_timeout=FAR) as c:
        holder.append(c)
        await eventually(lambda: len(written) == 1, "the write")
        await eventually(lambda: len(c.primary._waiters) == 1, "the next one to wait")
        assert len(seen_rv) == 1  # held at the freshness gate: the cache lags
        sim.faults.delay_watch_events(0)
        await eventually(lambda: len(seen_rv) >= 2, "the reconcile after the cache caught up")
        assert seen_rv[1] >= written[0]
        assert c.statistics().stale_reads_avoided == 0  # waited, not timed out


async def test_a_freshness_timeout_requeues_the_key_and_counts_a_stale_read(
    sim: KubeSim, api: Any
) -> None:
    sim.create("configmaps", configmap("cm"), "default")
    limiter = FixedLimiter(0.001)
    rec = Reconciles()
    async with running(api, rec, rate_limiter=limiter, freshness_timeout=0.01) as c:
        await eventually(lambda: rec.count("default/cm") == 1, "the first reconcile")
        await eventually(lambda: c.queue.statistics().processing == 0, "the workers idle")
        c.record_write("default/cm", c.primary, sim.resource_version + 1)  # not written yet
        c.queue.add("default/cm")
        await eventually(lambda: limiter.asked.count("default/cm") >= 2, "two timeouts")
        assert rec.count("default/cm") == 1  # each attempt stopped at the freshness gate
        stats = c.statistics()
        assert stats.stale_reads_avoided >= 2 and stats.queue.retries_total >= 2
        assert (
            sample(c, "stale_reads_avoided_total", reason="freshness") == stats.stale_reads_avoided
        )
        sim.create("configmaps", configmap("other"), "default")  # the RV moves past the write
        await eventually(lambda: rec.count("default/cm") == 2, "the reconcile once fresh")


async def test_expectations_hold_the_owner_until_its_creations_are_observed(
    sim: KubeSim, api: Any, podsets: str
) -> None:
    web = sim.create(podsets, podset("web"), "default")
    gv, plural = podsets.rsplit("/", 1)
    holder: list[Controller] = []

    def answer(key: str, n: int) -> None:
        if n == 1:
            holder[0].expectations.expect_creations(key, 1)

    rec = Reconciles(answer)

    def wire(f: InformerFactory) -> Mapping[str, Any]:
        return {"owns": [f.informer("v1", "pods")]}

    async with running(api, rec, resource=(gv, plural), kind="PodSet", wire=wire) as c:
        holder.append(c)
        await eventually(lambda: rec.count("default/web") == 1, "the first reconcile")
        assert c.expectations.pending("default/web") == (1, 0)
        c.queue.add("default/web")
        await eventually(lambda: c.statistics().stale_reads_avoided == 1, "the held reconcile")
        assert rec.count("default/web") == 1
        assert sample(c, "stale_reads_avoided_total", reason="expectations") == 1
        sim.create("pods", owned_pod("web-0", web), "default")  # the expected creation
        await eventually(lambda: rec.count("default/web") == 2, "the reconcile once observed")
        assert c.expectations.satisfied("default/web")


async def test_deleting_the_primary_forgets_its_expectations(sim: KubeSim, api: Any) -> None:
    sim.create("configmaps", configmap("cm"), "default")
    rec = Reconciles()
    async with running(api, rec) as c:
        await eventually(lambda: rec.count("default/cm") == 1, "the first reconcile")
        c.expectations.expect_creations("default/cm", 3)
        sim.delete("configmaps", "cm", "default")
        await eventually(lambda: rec.count("default/cm") == 2, "the deletion reconciled")
        assert c.expectations.pending("default/cm") == (0, 0)


# -- lifecycle ------------------------------------------------------------------------------------


async def test_stop_lets_the_running_reconcile_finish_and_restart_runs_again(
    sim: KubeSim, api: Any
) -> None:
    sim.create("configmaps", configmap("a"), "default")
    rec = Reconciles()
    rec.gate = asyncio.Event()
    async with running(api, rec) as c:
        await eventually(lambda: rec.running == 1, "the first reconcile")
        sim.patch("configmaps", "a", {"data": {"v": "2"}}, "default")
        await eventually(lambda: c.queue.statistics().depth == 1, "a change queued meanwhile")
        stopping = asyncio.create_task(c.stop())
        await eventually(lambda: c.queue.shutting_down, "the stop to begin")
        assert not stopping.done()  # it waits for the running reconcile
        rec.gate.set()
        await stopping
        await c.stop()  # idempotent
        assert rec.calls == ["default/a"]  # the queued change was dropped
        assert c.statistics().queue.shutting_down
        c.restart()
        assert not c.queue.shutting_down
        sim.patch("configmaps", "a", {"data": {"v": "3"}}, "default")
        await eventually(lambda: rec.count("default/a") == 2, "a reconcile after the restart")


async def test_stop_cancels_a_reconcile_still_running_after_the_shutdown_timeout(
    sim: KubeSim, api: Any
) -> None:
    sim.create("configmaps", configmap("stuck"), "default")
    rec = Reconciles()
    rec.gate = asyncio.Event()  # never set
    async with running(api, rec, shutdown_timeout=0.01) as c:
        await eventually(lambda: rec.running == 1, "the stuck reconcile")
        await c.stop()
        assert rec.running == 0  # cancelled, not finished
        assert all(w.done() for w in c._workers) and c._workers == []


async def test_a_locked_store_informer_works_as_the_primary(sim: KubeSim, api: Any) -> None:
    sim.create("configmaps", configmap("a"), "default")
    seen: list[str] = []
    holder: list[Controller] = []

    async def reconcile(key: str) -> None:
        async with holder[0].primary.read() as view:
            obj = view.get(key)
            seen.append(f"{key}={obj.field('data.v') if obj is not None else None}")

    async with running(api, reconcile, store="locked") as c:
        holder.append(c)
        assert c.primary.store_kind == "locked"
        await eventually(lambda: seen == ["default/a=1"], "the first reconcile")
        made = sim.patch("configmaps", "a", {"data": {"v": "2"}}, "default")
        c.record_write("default/a", c.primary, made["metadata"]["resourceVersion"])
        await eventually(lambda: seen[-1:] == ["default/a=2"], "the change, read fresh")

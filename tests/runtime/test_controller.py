"""Controller over real HTTP against KubeSim: reconciles, errors retried with per-key
backoff, ``Result(requeue=...)`` and ``Result(requeue_after=...)``, predicates, the owns and
watches mappings, ``may_act``, freshness (``record_write``) and its timeout, expectations,
statistics, its lifecycle (a stop lets running reconciles finish within
``shutdown_timeout``, then cancels them; it runs again), and a lock-based informer (the
benchmarks' baseline) as the primary.

On virtual time (looptime): the informers run on the loop and the controller measures
time on the loop's clock, KubeSim answers on the same loop, so retry delays, requeues and
timeouts take their real values (client-go's 5 ms doubling, a 5 s freshness timeout, a
30 s shutdown) and are asserted to the instant, without waiting for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import pytest

from aioinformer import (
    ConfigError,
    Controller,
    ControllerOptions,
    ControllerStatistics,
    Informer,
    InformerFactory,
    KubeObject,
    Predicate,
    Result,
    WorkQueueStatistics,
    current_reconcile,
    generation_changed,
)
from aioinformer._harness.locked_informer import LockedFactory, LockedInformer
from aioinformer._runtime.ratelimit import ItemExponentialFailureRateLimiter
from aioinformer.testing import KubeSim, eventually
from tests.support import FixedLimiter, configmap, pod, pod_object, transcript

pytestmark = pytest.mark.looptime

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
    """A reconciler that records every call (and the loop's time of each) and answers what
    ``answer(key, n)`` says (the n-th call for that key, from 1): a Result, None, or an
    exception to raise."""

    def __init__(
        self, answer: Callable[[str, int], Result | Exception | None] = lambda k, n: None
    ) -> None:
        self.answer = answer
        self.calls: list[str] = []
        self.times: list[tuple[str, float]] = []
        self.gate: asyncio.Event | None = None  # when set: each call waits for it
        self.running = 0

    def count(self, key: str) -> int:
        return self.calls.count(key)

    def at(self, key: str) -> list[float]:
        """When each call for ``key`` started."""
        return [t for k, t in self.times if k == key]

    async def __call__(self, key: str) -> Result | None:
        self.calls.append(key)
        self.times.append((key, asyncio.get_running_loop().time()))
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


def gaps(times: list[float]) -> list[float]:
    """The seconds between consecutive times, to the loop clock's microsecond."""
    return [round(b - a, 6) for a, b in itertools.pairwise(times)]


def controller(
    factory: InformerFactory,
    reconcile: Callable[[str], Awaitable[Result | None]],
    *,
    resource: tuple[str, str] = ("v1", "configmaps"),
    kind: str = "ConfigMap",
    wire: Callable[[InformerFactory], Mapping[str, Any]] = lambda f: {},
    predicates: Sequence[Predicate] = (),
    may_act: Callable[[str], bool] | None = None,
    **options: Any,
) -> Controller:
    """A Controller named "test" on ``factory``'s ``resource`` informer, on the loop's
    clock; ``wire(factory)`` gives extra Controller arguments (owns, watches), ``options``
    its ControllerOptions (a rate limiter answering 1 ms unless given)."""
    options.setdefault("rate_limiter", FixedLimiter(0.001))
    return Controller(
        "test",
        reconcile,
        primary=factory.informer(*resource),
        primary_kind=kind,
        predicates=predicates,
        options=ControllerOptions(**options),
        may_act=may_act,
        clock=asyncio.get_running_loop().time,
        **wire(factory),
    )


@contextlib.asynccontextmanager
async def running(
    api: Any, reconcile: Callable[[str], Awaitable[Result | None]], **arguments: Any
) -> AsyncIterator[Controller]:
    """A factory on namespace "default" (its informers on the loop) and a controller on
    it (see :func:`controller`), running while the block runs."""
    loop = asyncio.get_running_loop()
    factory = InformerFactory(api, "default", pipeline="loop", clock=loop.time)
    c = controller(factory, reconcile, **arguments)
    async with factory:
        await factory.wait_for_sync(timeout=30)
        async with c:
            yield c


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


def idle(c: Controller) -> bool:
    return c.queue.statistics().processing == 0


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
        await eventually(lambda: idle(c), "the workers idle")
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
    """Each failure asks the rate limiter for the key's next delay (client-go's per-key
    backoff: 5 ms doubling) and the key comes back exactly then; the first success
    forgets the key's failures; other keys are reconciled meanwhile."""
    sim.create("configmaps", configmap("bad"), "default")
    sim.create("configmaps", configmap("good"), "default")
    delays: list[float] = []

    class Spy(ItemExponentialFailureRateLimiter[Any]):
        def when(self, item: Any) -> float:
            delay = super().when(item)
            delays.append(delay)
            return delay

    limiter = Spy(base_delay=0.005, max_delay=1000.0)
    rec = Reconciles(lambda k, n: RuntimeError("boom") if k == "default/bad" and n <= 3 else None)
    async with running(api, rec, rate_limiter=limiter) as c:
        await eventually(lambda: rec.count("default/bad") == 4, "three retries, then success")
        await eventually(lambda: idle(c), "the workers idle")
        assert rec.count("default/good") == 1
        assert delays == [0.005, 0.01, 0.02]
        assert gaps(rec.at("default/bad")) == delays  # each retry came after its delay
        assert limiter.num_requeues("default/bad") == 0  # forgotten after the success
        assert sample(c, "reconcile_total", result="error") == 3
        assert c.statistics().queue.retries_total == 3
        assert c.statistics().errors == 3


async def test_a_reconcile_failing_every_time_logs_one_traceback_then_summaries(
    sim: KubeSim, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """10 keys whose reconcile raises every time, retried every 0.1 s for 21 s (2,100
    failures): one ERROR with the traceback, then one summary line (the latest
    failure, its key, the count) at most every 10 s; all counted in ``errors``."""
    for i in range(10):
        sim.create("configmaps", configmap(f"k{i}"), "default")
    rec = Reconciles(lambda k, n: RuntimeError(f"broken {k}"))
    async with running(api, rec, rate_limiter=FixedLimiter(0.1)) as c:
        await eventually(lambda: c.statistics().errors >= 2100, "2,100 failures", timeout=60)
    logged = [r for r in caplog.records if "reconcile of" in r.getMessage()]
    assert logged[0].exc_info is not None and "RuntimeError('broken" in logged[0].getMessage()
    assert [r.exc_info for r in logged[1:]] == [None, None]  # at 10 s and 20 s
    assert "of this kind since its last line 10 s ago" in logged[1].getMessage()


async def test_requeue_true_is_a_rate_limited_retry(sim: KubeSim, api: Any) -> None:
    sim.create("configmaps", configmap("again"), "default")
    limiter = FixedLimiter(0.25)
    rec = Reconciles(lambda k, n: Result(requeue=True) if n < 3 else None)
    async with running(api, rec, rate_limiter=limiter) as c:
        await eventually(lambda: rec.count("default/again") == 3, "two requeues")
        await eventually(lambda: "default/again" in limiter.forgotten, "the final success")
        assert limiter.asked == ["default/again", "default/again"]
        assert gaps(rec.at("default/again")) == [0.25, 0.25]
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
        return Result(requeue_after=30.0) if n == 1 else None

    rec = Reconciles(answer)
    async with running(api, rec, rate_limiter=limiter) as c:
        await eventually(
            lambda: rec.count("default/soon") == 2, "the key back", timeout=60, interval=0.5
        )
        assert gaps(rec.at("default/soon")) == [30.0]
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
        await eventually(lambda: idle(c), "the workers idle")
        assert rec.count("default/busy") == 2


async def test_a_timed_out_reconcile_whose_cleanup_outlasts_the_grace_is_abandoned(
    sim: KubeSim, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """``reconcile_timeout=1`` and a reconcile whose cancellation cleanup takes 12 s: it is
    abandoned (logged, fenced: ``may_act`` is False inside it) 0.25 s after its
    cancellation (``min(1 s, reconcile_timeout / 4)``), so the only worker reconciles
    another key at 1.25 s, not at 13 s; its own key is not reconciled again until the
    abandoned reconcile has ended (never two at once), then it is retried."""
    loop = asyncio.get_running_loop()
    sim.create("configmaps", configmap("slow"), "default")
    times: dict[str, list[float]] = {}
    inside_cleanup: list[bool] = []
    cleaned_up: list[float] = []

    async def reconcile(key: str) -> None:
        times.setdefault(key, []).append(loop.time())
        if key != "default/slow" or len(times[key]) > 1:
            return
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(12.0)  # a cleanup that outlasts any grace
            inside_cleanup.append(c.may_act(key))
            cleaned_up.append(loop.time())
            raise

    async with running(api, reconcile, concurrency=1, reconcile_timeout=1.0) as c:
        await eventually(lambda: "default/slow" in times, "the slow reconcile")
        (began,) = times["default/slow"]
        sim.create("configmaps", configmap("quick"), "default")
        await eventually(lambda: "default/quick" in times, "the other key", timeout=60)
        assert times["default/quick"] == [pytest.approx(began + 1.25)]  # not 13 s
        assert c.statistics().in_flight == 1 and c.statistics().errors == 1
        assert "abandoned the reconcile of default/slow" in caplog.text
        await eventually(lambda: len(times["default/slow"]) == 2, "the retry", timeout=60)
        assert cleaned_up == [pytest.approx(began + 13.0)]
        assert times["default/slow"][1] >= cleaned_up[0]  # never two at once
        assert inside_cleanup == [False]  # fenced
        await eventually(lambda: c.statistics().in_flight == 0, "nothing in flight")


async def test_a_controller_run_again_waits_for_its_abandoned_reconcile(
    sim: KubeSim, api: Any
) -> None:
    """A controller stopped and run again while a reconcile it abandoned (timed out, its
    cleanup still running) runs: the new run reconciles that key only once it has ended."""
    loop = asyncio.get_running_loop()
    sim.create("configmaps", configmap("slow"), "default")
    times: list[float] = []
    cleaned_up: list[float] = []

    async def reconcile(key: str) -> None:
        times.append(loop.time())
        if len(times) > 1:
            return
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(30.0)
            cleaned_up.append(loop.time())
            raise

    factory = InformerFactory(api, "default", pipeline="loop", clock=loop.time)
    c = controller(factory, reconcile, reconcile_timeout=1.0)
    async with factory:
        await factory.wait_for_sync(timeout=30)
        async with c:
            await eventually(lambda: c.statistics().errors == 1, "the timeout", timeout=60)
        async with c:  # again, with the abandoned reconcile still running
            await eventually(lambda: len(times) == 2, "the reconcile again", timeout=120)
    assert cleaned_up == [pytest.approx(times[0] + 31.0)]
    assert times[1] >= cleaned_up[0]


# -- predicates, owns, watches, may_act ----------------------------------------------------------


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
        await eventually(lambda: idle(c), "the workers idle")
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
    owns: dict[str, list[Informer]] = {"owns": []}

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
        # (a deletion is one or two changes: MODIFIED with the deletionTimestamp, then
        # DELETED, as kube-apiserver's graceful path sends them; one reconcile or two)
        await eventually(
            lambda: "default/web-0" not in pods.snapshot() and rec.count("default/web") >= 4,
            "its deletion",
        )
    assert set(rec.calls) == {"default/web"}  # the stray and the orphan map to nothing


async def test_watched_objects_reconcile_the_keys_their_mapper_gives(
    sim: KubeSim, api: Any
) -> None:
    """A watched informer's changes reconcile ``mapper(obj)``; with a namespaced primary,
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
        # (the deletion may come as two changes, deletionTimestamp then DELETED, handled
        # apart when the informer delivers them in separate batches)
        await eventually(lambda: rec.count("default/target") >= 3, "its deletion")
        await eventually(lambda: idle(c), "the workers idle")
    assert set(rec.calls) == {"default/target"}


async def test_a_key_this_replica_may_not_act_on_is_skipped(sim: KubeSim, api: Any) -> None:
    """``may_act(key)`` is asked right before each reconcile: False (another replica
    holds the key) skips it, and forgets its backoff."""
    sim.create("configmaps", configmap("mine"), "default")
    sim.create("configmaps", configmap("theirs"), "default")
    asked: list[str] = []

    def may_act(key: str) -> bool:
        asked.append(key)
        return key == "default/mine"

    rec = Reconciles()
    limiter = FixedLimiter(0.001)
    async with running(api, rec, may_act=may_act, rate_limiter=limiter) as c:
        await eventually(lambda: {"default/mine", "default/theirs"} <= set(asked), "both asked")
        await eventually(lambda: idle(c), "the workers idle")
        assert c.may_act("default/mine") and not c.may_act("default/theirs")
    assert rec.calls == ["default/mine"]
    assert "default/theirs" in limiter.forgotten


# -- freshness and expectations ------------------------------------------------------------------


async def test_a_reconcile_after_a_write_waits_until_the_cache_has_it(
    sim: KubeSim, api: Any
) -> None:
    """record_write: the next reconcile of the key sees the write in the cache, even while
    the watch lags (its events held back by the server until the test lets them go)."""
    sim.create("configmaps", configmap("cm"), "default")
    seen_rv: list[int] = []
    written: list[int] = []

    async def reconcile(key: str) -> Result | None:
        running = current_reconcile()
        assert running is not None
        c = running.controller
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
        await eventually(lambda: len(written) == 1, "the write")
        await eventually(lambda: len(c.primary._waiters) == 1, "the next one to wait")
        assert len(seen_rv) == 1  # held at the freshness gate: the cache lags
        sim.faults.delay_watch_events(0)
        # (the server's watch sees the delay lifted at its next wake-up: a bookmark, a
        # minute of the loop's time at most)
        await eventually(lambda: len(seen_rv) >= 2, "the reconcile once caught up", timeout=FAR)
        assert seen_rv[1] >= written[0]
        assert c.statistics().stale_reads_avoided == 0  # waited, not timed out


async def test_a_freshness_timeout_requeues_the_key_and_counts_a_stale_read(
    sim: KubeSim, api: Any
) -> None:
    """A reconcile waits ``freshness_timeout`` (5 s) for the cache to see a write recorded
    for its key; then the key is requeued with backoff instead of reconciled stale."""
    loop = asyncio.get_running_loop()
    sim.create("configmaps", configmap("cm"), "default")
    asked: list[float] = []

    class Timed(FixedLimiter):
        def when(self, item: Any) -> float:
            asked.append(loop.time())
            return super().when(item)

    limiter = Timed(0.001)
    rec = Reconciles()
    async with running(api, rec, rate_limiter=limiter) as c:
        await eventually(lambda: rec.count("default/cm") == 1, "the first reconcile")
        await eventually(lambda: idle(c), "the workers idle")
        c.record_write("default/cm", c.primary, sim.resource_version + 1)  # not written yet
        queued = loop.time()
        c.queue.add("default/cm")
        await eventually(lambda: len(asked) >= 2, "two timeouts", timeout=60, interval=0.5)
        assert gaps([queued, *asked[:2]]) == [5.0, 5.001]  # 5 s each, 1 ms of backoff between
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

    def answer(key: str, n: int) -> None:
        running = current_reconcile()
        assert running is not None
        if n == 1:
            running.controller.expectations.expect_creations(key, 1)

    rec = Reconciles(answer)

    def wire(f: InformerFactory) -> Mapping[str, Any]:
        return {"owns": [f.informer("v1", "pods")]}

    async with running(api, rec, resource=(gv, plural), kind="PodSet", wire=wire) as c:
        await eventually(lambda: rec.count("default/web") == 1, "the first reconcile")
        assert c.expectations.pending("default/web") == (1, 0)
        c.queue.add("default/web")
        await eventually(lambda: c.statistics().stale_reads_avoided == 1, "the held reconcile")
        assert rec.count("default/web") == 1
        assert sample(c, "stale_reads_avoided_total", reason="expectations") == 1
        sim.create("pods", owned_pod("web-0", web), "default")  # the expected creation
        await eventually(lambda: rec.count("default/web") == 2, "the reconcile once observed")
        assert c.expectations.satisfied("default/web")


async def test_unobserved_expectations_expire_after_their_ttl(sim: KubeSim, api: Any) -> None:
    """An expected creation never observed (its event lost) holds the key back for
    ``expectations_ttl`` (checked again every second), then the key is reconciled."""
    sim.create("configmaps", configmap("cm"), "default")
    rec = Reconciles()
    async with running(api, rec, expectations_ttl=300.0) as c:
        await eventually(lambda: rec.count("default/cm") == 1, "the first reconcile")
        await eventually(lambda: idle(c), "the workers idle")
        expected = asyncio.get_running_loop().time()
        c.expectations.expect_creations("default/cm", 1)  # never to be observed
        c.queue.add("default/cm")
        await eventually(
            lambda: rec.count("default/cm") == 2, "the reconcile", timeout=FAR, interval=1.0
        )
        # held at every check until the ttl had passed: at 0, 1, ..., 300 s; taken at 301 s
        assert gaps([expected, rec.at("default/cm")[1]]) == [301.0]
        assert c.statistics().stale_reads_avoided == 301


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


async def test_a_stop_lets_the_running_reconcile_finish_and_the_controller_runs_again(
    sim: KubeSim, api: Any
) -> None:
    """Cancelling run() (leaving ``async with``) stops taking keys, drops the queued ones
    and waits for the running reconcile; the controller may run again, and its new run
    reconciles every cached object first. It runs once at a time."""
    loop = asyncio.get_running_loop()
    sim.create("configmaps", configmap("a"), "default")
    rec = Reconciles()
    rec.gate = asyncio.Event()
    factory = InformerFactory(api, "default", pipeline="loop", clock=loop.time)
    c = controller(factory, rec)
    async with factory:
        await factory.wait_for_sync(timeout=30)
        async with contextlib.AsyncExitStack() as running_c:
            await running_c.enter_async_context(c)
            assert c.running
            with pytest.raises(ConfigError, match="already running"):
                await c.run()
            await eventually(lambda: rec.running == 1, "the first reconcile")
            sim.patch("configmaps", "a", {"data": {"v": "2"}}, "default")
            await eventually(lambda: c.queue.statistics().depth == 1, "a change queued")
            stopping = asyncio.create_task(running_c.aclose())
            await eventually(lambda: c.queue.shutting_down, "the stop to begin")
            assert not stopping.done()  # it waits for the running reconcile
            rec.gate.set()
            await stopping
        assert rec.calls == ["default/a"]  # the queued change was dropped
        assert not c.running and c.statistics().queue.shutting_down
        async with c:  # again: every cached object first, then the changes
            assert not c.queue.shutting_down
            await eventually(lambda: rec.count("default/a") == 2, "a at the new start")
            sim.patch("configmaps", "a", {"data": {"v": "3"}}, "default")
            await eventually(lambda: rec.count("default/a") == 3, "a change after it")


async def test_a_stop_cancels_reconciles_still_running_shortly_before_shutdown_timeout(
    sim: KubeSim, api: Any
) -> None:
    """A stop returns within ``shutdown_timeout`` (30 s) whatever the reconciles do: they
    may finish until ``min(1 s, shutdown_timeout / 4)`` before it, then they are
    cancelled; one that ignores its cancellation is abandoned when the time is up."""
    loop = asyncio.get_running_loop()
    sim.create("configmaps", configmap("stuck"), "default")
    sim.create("configmaps", configmap("stubborn"), "default")
    cancelled: dict[str, float] = {}
    let_go = asyncio.Event()

    async def reconcile(key: str) -> None:
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            cancelled[key] = loop.time()
            if key != "default/stubborn":
                raise
        await let_go.wait()  # the stubborn one goes on regardless

    factory = InformerFactory(api, "default", pipeline="loop", clock=loop.time)
    c = controller(factory, reconcile, concurrency=2, shutdown_timeout=30.0)
    async with factory:
        await factory.wait_for_sync(timeout=30)
        async with c:
            await eventually(lambda: c.statistics().in_flight == 2, "both reconciling")
            stopping = loop.time()
        stopped = loop.time()
        assert cancelled == {"default/stuck": stopping + 29.0, "default/stubborn": stopping + 29.0}
        assert stopped - stopping == pytest.approx(30.0)
        assert c.statistics().in_flight == 1  # the stubborn one, abandoned
        let_go.set()
        await eventually(lambda: c.statistics().in_flight == 0, "the stubborn one to end")


async def test_a_lock_based_informer_works_as_the_primary(sim: KubeSim, api: Any) -> None:
    """The benchmarks' baseline (a LockedFactory's informers, reads under the read lock
    across awaits) runs a controller as the snapshot store does."""
    sim.create("configmaps", configmap("a"), "default")
    seen: list[str] = []
    factory = LockedFactory(api, "default", clock=asyncio.get_running_loop().time)

    async def reconcile(key: str) -> None:
        assert isinstance(c.primary, LockedInformer)
        async with c.primary.read() as view:
            obj = view.get(key)
            seen.append(f"{key}={obj.field('data.v') if obj is not None else None}")

    c = controller(factory, reconcile)
    async with factory:
        await factory.wait_for_sync(timeout=30)
        async with c:
            await eventually(lambda: seen == ["default/a=1"], "the first reconcile")
            made = sim.patch("configmaps", "a", {"data": {"v": "2"}}, "default")
            c.record_write("default/a", c.primary, made["metadata"]["resourceVersion"])
            await eventually(lambda: seen[-1:] == ["default/a=2"], "the change, read fresh")

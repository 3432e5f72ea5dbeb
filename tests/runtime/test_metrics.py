"""Metrics: informer and handler series read from ``statistics()`` at scrape time, the work
queue's events through the adapter (on a fake clock: exact durations), a private registry
per Metrics, and ``/metrics`` served over HTTP on 127.0.0.1 (a port in use: one clear error)."""

from __future__ import annotations

import aiohttp
import pytest

from aioinformer import ConfigError, InformerStatistics, Metrics, SubscriptionStatistics, WorkQueue
from aioinformer._runtime.metrics import WorkQueueMetricsAdapter
from tests.support import FakeClock, FixedLimiter


def informer_stats(name: str, objects: int, **fields: object) -> InformerStatistics:
    base: dict[str, object] = dict(
        resource_version=42, seq=3, has_synced=True, fifo_depth=2,
        fifo_peak=9, staleness=0.25, deltas_per_second=0.0, applied_total=10, batches=3,
        in_place_batches=3, relists=1, watch_restarts=4, decode_errors=5,
    )  # fmt: skip
    return InformerStatistics(name=name, objects=objects, **{**base, **fields})  # type: ignore[arg-type]


def value(metrics: Metrics, series: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(f"aioinformer_{series}", labels)


def test_informer_and_handler_series_are_read_at_each_scrape() -> None:
    metrics = Metrics()
    sub = SubscriptionStatistics("pods/h", 3, 7, 11, 1, 0, True, True)
    current = [informer_stats("pods", 5, handlers=(sub,))]
    metrics.add_informer_source(lambda: current)
    assert value(metrics, "informer_objects", informer="pods") == 5
    assert value(metrics, "informer_fifo_depth", informer="pods") == 2
    assert value(metrics, "informer_staleness_seconds", informer="pods") == 0.25
    assert value(metrics, "informer_relists_total", informer="pods") == 1
    assert value(metrics, "informer_decode_errors_total", informer="pods") == 5
    assert value(metrics, "handler_queue_depth", informer="pods", subscriber="pods/h") == 3
    assert value(metrics, "handler_handled_total", informer="pods", subscriber="pods/h") == 11
    current[:] = [informer_stats("pods", 6)]  # the next scrape sees the new numbers
    assert value(metrics, "informer_objects", informer="pods") == 6
    assert b'aioinformer_informer_objects{informer="pods"} 6.0' in metrics.render()
    assert Metrics().render().count(b"aioinformer_informer_objects{") == 0  # its own registry


async def test_the_work_queue_adapter_feeds_the_queue_series() -> None:
    metrics = Metrics()
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(
        "q",
        metrics=WorkQueueMetricsAdapter(metrics, "q"),
        clock=clock,
        rate_limiter=FixedLimiter(0.0),
    )
    q.add("a")
    q.add("b")
    clock.advance(2.0)
    key = q.get_nowait()
    clock.advance(0.5)
    q.done(key)
    q.add_rate_limited("c")
    assert value(metrics, "workqueue_adds_total", name="q") == 3
    assert value(metrics, "workqueue_retries_total", name="q") == 1
    assert value(metrics, "workqueue_depth", name="q") == 2
    assert value(metrics, "workqueue_queue_duration_seconds_sum", name="q") == 2.0
    assert value(metrics, "workqueue_work_duration_seconds_sum", name="q") == 0.5
    assert value(metrics, "workqueue_longest_running_processor_seconds", name="q") == 0.0
    await q.shutdown(drain=False)


async def test_metrics_are_served_on_loopback() -> None:
    metrics = Metrics()
    metrics.add_informer_source(lambda: [informer_stats("cms", 1)])
    runner, port = await metrics.serve()
    try:
        assert [a[0] for a in runner.addresses] == ["127.0.0.1"] and port > 0
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
                assert resp.status == 200
                assert resp.headers["Content-Type"].startswith("text/plain")
                assert 'aioinformer_informer_objects{informer="cms"} 1.0' in await resp.text()
    finally:
        await runner.cleanup()


async def test_a_port_that_cannot_be_bound_is_a_config_error() -> None:
    taken = Metrics()
    runner, port = await taken.serve()
    try:
        with pytest.raises(ConfigError) as caught:
            await Metrics().serve("127.0.0.1", port)
        assert (
            str(caught.value)
            == f"cannot serve /metrics on 127.0.0.1:{port}: Address already in use"
        )
    finally:
        await runner.cleanup()


def test_sharded_informers_show_their_mode_ranges_and_kept_and_dropped_counts() -> None:
    metrics = Metrics()
    text = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
    sharded = informer_stats(
        "pods", 5, shard_mode="client", shard_selector=text,
        objects_received=12, objects_kept=5, objects_dropped=7,
    )  # fmt: skip
    metrics.add_informer_source(lambda: [sharded, informer_stats("nodes", 2)])
    assert value(metrics, "informer_objects_dropped_total", informer="pods") == 7
    assert value(metrics, "informer_objects_kept_total", informer="pods") == 5
    assert value(metrics, "informer_objects_received_total", informer="pods") == 12
    labels = {"informer": "pods", "mode": "client", "selector": text}
    assert value(metrics, "informer_shard_info", **labels) == 1
    assert b'informer_shard_info{informer="nodes"' not in metrics.render()

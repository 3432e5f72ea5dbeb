"""Prometheus metrics for informers, work queues, reconciles, leader election and shards.

Each :class:`Metrics` has its own ``CollectorRegistry`` (no process-global state), so two
managers in one process do not collide. Informer series are read from ``informer.statistics()``
at scrape time; the rest are updated as things happen. ``serve(host, port)`` exposes
``/metrics`` in the Prometheus text format on an aiohttp server.

Series (all prefixed ``aioinformer_``): ``informer_objects``, ``informer_fifo_depth``,
``informer_fifo_peak_depth``, ``informer_staleness_seconds``, ``informer_resource_version``,
``informer_cached_bytes``, ``informer_plain_bytes`` (``InformerStatistics.cached_bytes`` and
``plain_bytes``: the bodies' bytes as held, and uncompressed), ``informer_parked`` (1 while
parked: :meth:`~aioinformer.Informer.park`), ``informer_relists_total``,
``informer_watch_restarts_total``,
``informer_decode_errors_total``, ``informer_objects_received_total``,
``informer_objects_kept_total``, ``informer_objects_dropped_total`` (objects outside a
sharded informer's ranges) (label ``informer``); ``informer_shard_info`` (1 per sharded
informer, labels ``informer``, ``mode``: ``server`` or ``client``, and ``selector``: its
ranges as sent); ``handler_queue_depth``,
``handler_queue_peak_depth``, ``handler_coalescing`` (1 while merging per key),
``handler_handled_total``, ``handler_errors_total``, ``handler_overflows_total`` (labels
``informer``, ``subscriber``: a stuck subscriber's backlog, see :mod:`._handlers`);
``workqueue_depth``,
``workqueue_adds_total``, ``workqueue_retries_total``, ``workqueue_queue_duration_seconds``,
``workqueue_work_duration_seconds``, ``workqueue_longest_running_processor_seconds``
(label ``name``); ``reconcile_total`` (labels ``controller``, ``result``),
``reconcile_errors_total`` (labels ``controller``, ``error``: the exception's type name,
or ``timeout``), ``reconcile_duration_seconds``, ``stale_reads_avoided_total`` (labels
``controller``, ``reason``: ``freshness``, ``expectations`` or ``unsettled``: a write
whose outcome is unknown not learned yet); ``leader`` (1 while this replica acts as the
leader: with leader election, while it leads; without election or sharding, while it runs),
``shards_owned``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from aioinformer._cache.handlers import SubscriptionStatistics
from aioinformer._cache.informer import InformerStatistics
from aioinformer._core.errors import ConfigError

__all__ = ["Metrics", "ShardState", "WorkQueueMetricsAdapter"]

T = TypeVar("T")

_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


_Specs = dict[str, tuple[str, Callable[[T], float]]]  # series name -> (help, value of a row)


def _families(
    prefix: str, labels: list[str], rows: list[tuple[list[str], T]],
    gauges: _Specs[T], counters: _Specs[T],
) -> Iterator[Any]:  # fmt: skip
    """One gauge or counter family per spec, one sample per row (label values, item)."""
    for family, specs in ((GaugeMetricFamily, gauges), (CounterMetricFamily, counters)):
        for name, (doc, get) in specs.items():
            f = family(f"{prefix}{name}", doc, labels=labels)
            for values, item in rows:
                f.add_metric(values, float(get(item)))
            yield f


class _InformerCollector:
    def __init__(self, sources: Callable[[], Iterable[InformerStatistics]]) -> None:
        self._sources = sources

    def collect(self) -> Iterator[Any]:
        gauges: _Specs[InformerStatistics] = {
            "objects": ("Objects in the informer's store.", lambda s: s.objects),
            "fifo_depth": ("Deltas waiting in the FIFO.", lambda s: s.fifo_depth),
            "fifo_peak_depth": ("Largest FIFO depth seen.", lambda s: s.fifo_peak),
            "staleness_seconds": (
                "Age of the oldest unapplied delta (0 when caught up).",
                lambda s: s.staleness,
            ),
            "resource_version": ("RV of the last published state.", lambda s: s.resource_version),
            "cached_bytes": (
                "Bytes of JSON the cached objects hold besides their metadata (bodies as "
                "held, compressed in compact mode, plus managedFields).",
                lambda s: s.cached_bytes,
            ),
            "plain_bytes": (
                "cached_bytes with every body uncompressed (equal without compact mode).",
                lambda s: s.plain_bytes,
            ),
            "parked": (
                "1 while the informer is parked (an empty scope: no request, nothing cached).",
                lambda s: int(s.parked),
            ),
        }
        counters: _Specs[InformerStatistics] = {
            "relists": ("Relists after a 410 or a restart.", lambda s: s.relists),
            "watch_restarts": ("Watches re-established.", lambda s: s.watch_restarts),
            "decode_errors": ("Lines skipped as undecodable.", lambda s: s.decode_errors),
            "objects_received": (
                "List items and watch events received.",
                lambda s: s.objects_received,
            ),
            "objects_kept": ("Objects received in the shard ranges.", lambda s: s.objects_kept),
            "objects_dropped": (
                "Objects received outside the shard ranges (never built or cached).",
                lambda s: s.objects_dropped,
            ),
            "bytes_received": (
                "Bytes of list bodies and watch lines received.",
                lambda s: s.bytes_received,
            ),
        }
        stats = list(self._sources())
        rows = [([s.name], s) for s in stats]
        yield from _families("aioinformer_informer_", ["informer"], rows, gauges, counters)
        info = GaugeMetricFamily(
            "aioinformer_informer_shard_info",
            "1 per sharded informer: who filters (mode) and its ranges (selector).",
            labels=["informer", "mode", "selector"],
        )
        for s in stats:
            if s.shard_mode is not None:
                info.add_metric([s.name, s.shard_mode, s.shard_selector], 1.0)
        yield info
        handler_gauges: _Specs[SubscriptionStatistics] = {
            "queue_depth": ("Changes queued for the subscriber.", lambda h: h.depth),
            "queue_peak_depth": ("Largest queue depth seen.", lambda h: h.peak_depth),
            "coalescing": ("1 while changes are merged per key.", lambda h: h.coalescing),
        }
        handler_counters: _Specs[SubscriptionStatistics] = {
            "handled": ("Changes handled.", lambda h: h.handled_total),
            "errors": ("Handler calls that raised.", lambda h: h.errors_total),
            "overflows": ("Times the backlog exceeded max_queue.", lambda h: h.overflows),
        }
        subs = [([s.name, h.name], h) for s in stats for h in s.handlers]
        labels = ["informer", "subscriber"]
        yield from _families("aioinformer_handler_", labels, subs, handler_gauges, handler_counters)


@dataclass(frozen=True, slots=True)
class ShardState:
    """One shard as this replica sees it (the ``shard_*`` series)."""

    shard: int
    owned: bool
    """This replica holds its Lease."""
    ready: bool
    """Held, and its caches synced and caught up: its keys are reconciled here."""
    buckets: str
    """The label buckets it covers (``"00-3f"``; "" with full caches)."""


class _ShardCollector:
    def __init__(self, source: Callable[[], Iterable[ShardState]]) -> None:
        self._source = source

    def collect(self) -> Iterator[Any]:
        states = list(self._source())
        gauges: _Specs[ShardState] = {
            "owned": ("1 while this replica holds the shard's Lease.", lambda s: s.owned),
            "ready": (
                "1 while the shard is ready here: held, its caches synced and caught up.",
                lambda s: s.ready,
            ),
        }
        rows = [([str(s.shard)], s) for s in states]
        yield from _families("aioinformer_shard_", ["shard"], rows, gauges, {})
        info = GaugeMetricFamily(
            "aioinformer_shard_info",
            "1 per shard this replica holds, with the label buckets it covers.",
            labels=["shard", "buckets"],
        )
        for s in states:
            if s.owned:
                info.add_metric([str(s.shard), s.buckets], 1.0)
        yield info


class Metrics:
    """The metrics of one manager: a private registry plus the series listed above."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._informer_sources: list[Callable[[], Iterable[InformerStatistics]]] = []
        self._shard_sources: list[Callable[[], Iterable[ShardState]]] = []
        self.registry.register(_InformerCollector(self._all_informer_stats))
        self.registry.register(_ShardCollector(self._all_shard_states))
        r = self.registry
        self.wq_depth = Gauge("aioinformer_workqueue_depth", "Keys waiting.", ["name"], registry=r)
        self.wq_adds = Counter("aioinformer_workqueue_adds", "Keys added.", ["name"], registry=r)
        self.wq_retries = Counter(
            "aioinformer_workqueue_retries", "Rate-limited re-adds.", ["name"], registry=r
        )
        self.wq_queue_latency = Histogram(
            "aioinformer_workqueue_queue_duration_seconds",
            "Time from add to get.",
            ["name"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.wq_work_duration = Histogram(
            "aioinformer_workqueue_work_duration_seconds",
            "Time from get to done.",
            ["name"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.wq_longest = Gauge(
            "aioinformer_workqueue_longest_running_processor_seconds",
            "How long the longest running key has been processed.",
            ["name"],
            registry=r,
        )
        self.wq_unfinished = Gauge(
            "aioinformer_workqueue_unfinished_work_seconds",
            "Seconds of work in progress that has not been done.",
            ["name"],
            registry=r,
        )
        self.reconciles = Counter(
            "aioinformer_reconcile", "Reconciles by result.", ["controller", "result"], registry=r
        )
        self.reconcile_errors = Counter(
            "aioinformer_reconcile_errors",
            "Reconciles that raised or timed out, by error type.",
            ["controller", "error"],
            registry=r,
        )
        self.reconcile_duration = Histogram(
            "aioinformer_reconcile_duration_seconds",
            "Reconcile duration.",
            ["controller"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.stale_reads_avoided = Counter(
            "aioinformer_stale_reads_avoided",
            "Reconciles held back because the cache had not seen the controller's own writes.",
            ["controller", "reason"],
            registry=r,
        )
        self.leader = Gauge(
            "aioinformer_leader",
            "1 while this replica acts as the leader (always, without leader election "
            "or sharding).",
            registry=r,
        )
        self.shards_owned = Gauge(
            "aioinformer_shards_owned", "Shards this replica owns.", registry=r
        )

    def add_informer_source(self, source: Callable[[], Iterable[InformerStatistics]]) -> None:
        """Report the informers ``source()`` returns (called at every scrape)."""
        self._informer_sources.append(source)

    def add_shard_source(self, source: Callable[[], Iterable[ShardState]]) -> None:
        """Report the shards ``source()`` returns (called at every scrape)."""
        self._shard_sources.append(source)

    def _all_shard_states(self) -> Iterator[ShardState]:
        for source in self._shard_sources:
            yield from source()

    def _all_informer_stats(self) -> Iterator[InformerStatistics]:
        for source in self._informer_sources:
            yield from source()

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)

    async def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        routes: Callable[[web.Application], None] | None = None,
    ) -> tuple[web.AppRunner, int]:
        """Serve ``/metrics`` on ``host:port`` (and what ``routes`` adds to the app);
        returns the runner (to clean up) and the bound port. A port that cannot be bound
        (in use, not allowed) is a :class:`~aioinformer.ConfigError` naming it."""

        async def handle(_request: web.Request) -> web.Response:
            return web.Response(
                body=self.render(), headers={"Content-Type": "text/plain; version=0.0.4"}
            )

        app = web.Application()
        app.router.add_get("/metrics", handle)
        if routes is not None:
            routes(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise ConfigError(f"cannot serve /metrics on {host}:{port}: {reason}") from None
        sockets: Any = getattr(site._server, "sockets", None)
        bound = int(sockets[0].getsockname()[1]) if sockets else port
        return runner, bound


class WorkQueueMetricsAdapter:
    """Feeds a work queue's events into :class:`Metrics` (the queue's metrics hook)."""

    def __init__(self, metrics: Metrics, name: str) -> None:
        self._m = metrics
        self._name = name

    def add(self, depth: int) -> None:
        self._m.wq_adds.labels(self._name).inc()
        self._m.wq_depth.labels(self._name).set(depth)

    def get(self, depth: int, queued_for: float) -> None:
        self._m.wq_depth.labels(self._name).set(depth)
        self._m.wq_queue_latency.labels(self._name).observe(queued_for)

    def done(self, worked_for: float) -> None:
        self._m.wq_work_duration.labels(self._name).observe(worked_for)

    def retry(self) -> None:
        self._m.wq_retries.labels(self._name).inc()

    def longest_running(self, seconds: float) -> None:
        self._m.wq_longest.labels(self._name).set(seconds)

    def unfinished_work(self, seconds: float) -> None:
        self._m.wq_unfinished.labels(self._name).set(seconds)

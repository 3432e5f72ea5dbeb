"""Manager: owns the InformerFactory, the controllers, the metrics endpoint and leader
election (or sharding), and runs them with one ``await manager.run()``.

    manager = Manager(api_client, metrics_port=8080, leader_election=LeaderElection(...))
    podsets = manager.informer("example.aioinformer.dev/v1", "podsets")
    pods = manager.informer("v1", "pods")
    ctl = manager.controller("podset", reconcile, primary=podsets, primary_kind="PodSet",
                             owns=[pods], concurrency=4)
    await manager.run()              # or aioinformer.run(manager.run()) to get uvloop

With leader election, informers sync on every replica (a warm standby) but controllers run
only while this replica leads; when leadership is lost they are stopped before another
replica can acquire the lease (the renew deadline is shorter than the lease duration), so
no reconcile runs on two replicas at once. With sharding, every replica runs its
controllers and each reconciles only the keys of the shards it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from aioinformer._cache.factory import FACTORY_NAMESPACE, InformerFactory, NamespaceDefault
from aioinformer._cache.index import IndexFunc
from aioinformer._cache.informer import Informer
from aioinformer._cache.store import StoreKind
from aioinformer._cache.watcher import WatchOptions
from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import Transform
from aioinformer._runtime.controller import Controller, Mapper, Predicate, Reconciler
from aioinformer._runtime.metrics import Metrics
from aioinformer._runtime.ratelimit import RateLimiter

if TYPE_CHECKING:
    from aioinformer._coordination.leader import LeaderElector
    from aioinformer._coordination.sharding import ShardManager

__all__ = ["LeaderElection", "Manager", "Sharding", "run"]

log = logging.getLogger("aioinformer.manager")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """Lease-based leader election settings (client-go's defaults)."""

    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True, slots=True)
class Sharding:
    """Key sharding across replicas through per-shard Leases."""

    name: str
    namespace: str
    identity: str
    shards: int = 32
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class Manager:
    """Runs informers, controllers, metrics and leader election/sharding together.

    Args:
        api_client: a kubernetes_asyncio ``ApiClient``.
        namespace: the default namespace of the informers (None: all namespaces).
        store: the informers' store kind: "snapshot" (default) or "locked" (the
            lock-based baseline; controllers run on it too).
        metrics_port: serve ``/metrics`` on this port (None: no endpoint; 0: any free port,
            see :attr:`bound_metrics_port`).
        metrics_host: the address the metrics endpoint binds.
        leader_election: run the controllers only while this replica leads.
        sharding: split the keys across replicas by per-shard Leases.
        watch_options: how the informers list, watch and recover.
        watcher_options: the same as a mapping (older form).
        cache_sync_timeout: seconds :meth:`run` waits for every informer's initial sync
            before it gives up with :class:`~aioinformer.FreshnessTimeout` naming the
            informers still waiting and their last error (controller-runtime's
            CacheSyncTimeout, 2 min): a missing CRD or RBAC rule fails the start visibly
            instead of blocking every controller. None: no limit.
        clock: the informers' clock.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        namespace: str | None = None,
        store: StoreKind = "snapshot",
        metrics_port: int | None = None,
        metrics_host: str = "127.0.0.1",
        leader_election: LeaderElection | None = None,
        sharding: Sharding | None = None,
        watch_options: WatchOptions | None = None,
        watcher_options: Mapping[str, Any] | None = None,
        cache_sync_timeout: float | None = 120.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if leader_election is not None and sharding is not None:
            raise ConfigError("choose leader_election or sharding, not both")
        self.api_client = api_client
        self.cache_sync_timeout = cache_sync_timeout
        self.factory = InformerFactory(
            api_client,
            namespace,
            store=store,
            watch_options=watch_options,
            watcher_options=watcher_options,
            clock=clock,
        )
        self.metrics = Metrics()
        self.metrics.add_informer_source(lambda: [i.statistics() for i in self.factory.informers])
        self.metrics_port = metrics_port
        self.metrics_host = metrics_host
        self.bound_metrics_port: int | None = None
        self.controllers: list[Controller] = []
        self.elector: LeaderElector | None = None
        if leader_election is not None:
            from aioinformer._coordination.leader import LeaderElector

            self.elector = LeaderElector(api_client, **asdict(leader_election))
        self.shards: ShardManager | None = None
        if sharding is not None:
            from aioinformer._coordination.sharding import ShardManager

            self.shards = ShardManager(api_client, **asdict(sharding))
        self._running_controllers = False

    def informer(
        self,
        group_version: str,
        plural: str,
        *,
        namespace: str | Literal[NamespaceDefault.FACTORY] | None = FACTORY_NAMESPACE,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        store: StoreKind | None = None,
        streaming_list: bool = False,
    ) -> Informer:
        """A shared informer from the manager's factory; the parameters are
        :meth:`InformerFactory.informer`'s."""
        return self.factory.informer(
            group_version,
            plural,
            namespace=namespace,
            indexers=indexers,
            transform=transform,
            label_selector=label_selector,
            field_selector=field_selector,
            metadata_only=metadata_only,
            store=store,
            streaming_list=streaming_list,
        )

    def controller(
        self,
        name: str,
        reconcile: Reconciler,
        *,
        primary: Informer,
        primary_kind: str,
        owns: Sequence[Informer] = (),
        watches: Sequence[tuple[Informer, Mapper]] = (),
        predicates: Sequence[Predicate] = (),
        concurrency: int = 1,
        rate_limiter: RateLimiter[str] | None = None,
        freshness: bool = True,
        freshness_timeout: float = 5.0,
        expectations: bool = True,
        expectations_ttl: float = 300.0,
        shutdown_timeout: float = 30.0,
    ) -> Controller:
        """Create a controller the manager will run; the parameters are
        :class:`Controller`'s (the manager supplies its metrics and, with sharding, the
        key ownership check)."""
        shards = self.shards
        ctl = Controller(
            name,
            reconcile,
            primary=primary,
            primary_kind=primary_kind,
            owns=owns,
            watches=watches,
            predicates=predicates,
            concurrency=concurrency,
            rate_limiter=rate_limiter,
            freshness=freshness,
            freshness_timeout=freshness_timeout,
            expectations=expectations,
            expectations_ttl=expectations_ttl,
            metrics=self.metrics,
            owns_key=shards.owns if shards is not None else None,
            shutdown_timeout=shutdown_timeout,
        )
        self.controllers.append(ctl)
        return ctl

    async def run(self) -> None:
        """Run until cancelled: metrics endpoint, informers, then controllers (while
        leading, with leader election). Cancelling it stops everything in order:
        controllers (in-flight reconciles finish), then informers, then the rest. Raises
        :class:`FreshnessTimeout` if the informers do not sync within
        ``cache_sync_timeout``."""
        runner = None
        if self.metrics_port is not None:
            runner, self.bound_metrics_port = await self.metrics.serve(
                self.metrics_host, self.metrics_port
            )
        try:
            async with self.factory:
                try:
                    await self.factory.wait_for_sync(self.cache_sync_timeout)
                    async with asyncio.TaskGroup() as tg:
                        if self.elector is not None:
                            tg.create_task(self._lead(), name="manager-leader")
                        else:
                            if self.shards is not None:
                                tg.create_task(self._shard(), name="manager-shards")
                            self._start_controllers()
                            await asyncio.Event().wait()
                finally:  # controllers first, while their informers still run
                    await self._stop_controllers()
        finally:
            if runner is not None:
                await runner.cleanup()

    async def _lead(self) -> None:
        elector = self.elector
        assert elector is not None
        task = asyncio.create_task(elector.run(), name="leader-elector")
        try:
            while True:
                await elector.wait_leader()
                self.metrics.leader.set(1)
                log.info("leading: starting controllers")
                self._start_controllers()
                await elector.wait_not_leader()
                self.metrics.leader.set(0)
                log.warning("leadership lost: stopping controllers")
                await self._stop_controllers()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _shard(self) -> None:
        shards = self.shards
        assert shards is not None

        def requeue(_owned: frozenset[int]) -> None:
            self.metrics.shards_owned.set(len(shards.owned_shards()))
            for ctl in self.controllers:
                for obj in ctl.primary.reader.list_now():
                    if shards.owns(obj.key):
                        ctl.queue.add(obj.key)

        shards.on_change.append(requeue)
        await shards.run()

    def _start_controllers(self) -> None:
        if self._running_controllers:
            return
        self._running_controllers = True
        for ctl in self.controllers:
            ctl.restart()
            for obj in ctl.primary.reader.list_now():
                ctl.queue.add(obj.key)

    async def _stop_controllers(self) -> None:
        if not self._running_controllers:
            return
        self._running_controllers = False
        await asyncio.gather(*(ctl.stop() for ctl in self.controllers))


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, on uvloop when installed (``pip install aioinformer[uvloop]``)."""
    try:
        import uvloop  # an optional extra: typed as Any where it is not installed
    except ImportError:
        uvloop = None
    if uvloop is None:  # (outside the except block: no ImportError chained to the run's errors)
        return asyncio.run(main)
    result: T = uvloop.run(main)
    return result

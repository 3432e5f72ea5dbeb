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
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from aioinformer._cache.factory import InformerFactory
from aioinformer._cache.informer import Informer, StoreKind
from aioinformer._runtime.controller import Controller, Mapper, Predicate, Result
from aioinformer._runtime.metrics import Metrics

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
    """Runs informers, controllers, metrics and leader election/sharding together."""

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
        watcher_options: Mapping[str, Any] | None = None,
        cache_sync_timeout: float | None = 120.0,
    ) -> None:
        self.api_client = api_client
        self.cache_sync_timeout = cache_sync_timeout
        """Seconds :meth:`run` waits for every informer's initial sync before it gives up
        with :class:`FreshnessTimeout` naming the informers still waiting and their last
        error (controller-runtime's CacheSyncTimeout, 2 min): a missing CRD or RBAC rule
        fails the start visibly instead of blocking every controller. None: no limit."""
        self.factory = InformerFactory(
            api_client, namespace, store=store, watcher_options=watcher_options
        )
        self.metrics = Metrics()
        self.metrics.add_informer_source(lambda: [i.stats() for i in self.factory.informers])
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

    def informer(self, group_version: str, plural: str, **options: Any) -> Informer:
        """A shared informer from the manager's factory (see InformerFactory.informer)."""
        return self.factory.informer(group_version, plural, **options)

    def controller(
        self,
        name: str,
        reconcile: Callable[[str], Awaitable[Result | None]],
        *,
        primary: Informer,
        primary_kind: str,
        owns: Sequence[Informer] = (),
        watches: Sequence[tuple[Informer, Mapper]] = (),
        predicates: Sequence[Predicate] = (),
        concurrency: int = 1,
        **options: Any,
    ) -> Controller:
        """Create a controller the manager will run (see :class:`Controller`)."""
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
            metrics=self.metrics,
            owns_key=shards.owns if shards is not None else None,
            **options,
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
                for obj in ctl.primary.snapshot().list():
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
            for obj in ctl.primary.snapshot().list():
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
        return asyncio.run(main)
    result: T = uvloop.run(main)
    return result

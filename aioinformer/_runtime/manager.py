"""Manager: owns the InformerFactory, the write client, the controllers, the metrics
endpoint and leader election (or sharding), and runs them with one ``await manager.run()``.

    manager = Manager(api_client, metrics_port=8080, leader_election=LeaderElection(...))
    podsets = manager.informer("example.aioinformer.dev/v1", "podsets")
    pods = manager.informer("v1", "pods")
    ctl = manager.controller("podset", reconcile, primary=podsets, owns=[pods])
    await manager.run()              # or aioinformer.run(manager.run()) to get uvloop

Two replicas never act on the same key at once. With leader election, informers sync on
every replica (a warm standby) but controllers run only while this replica leads; with
sharding, each replica reconciles only the keys of the shards it holds. A replica acts on a
key only while its Lease for it was renewed less than ``renew_deadline`` ago by its own
clock (others may take it over only ``lease_duration`` after they last saw it change):

* right before each reconcile starts, and right before each write of :attr:`Manager.client`
  (a frozen-then-resumed replica cannot write: its clock moved on);
* losing a Lease cancels the running reconciles of its keys at once (checked every 0.1 s
  and whenever the elector notices), a shard handed over to another replica has its
  reconciles cancelled before its Lease is released;
* a shutdown stops the controllers first (bounded by ``shutdown_timeout``) while the
  Leases are still renewed, then releases the Leases, then stops the informers.
"""

from __future__ import annotations

import asyncio
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
from aioinformer._client.client import Client
from aioinformer._client.discovery import Discovery
from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import Transform
from aioinformer._runtime.bookkeeping import ControllerWrites
from aioinformer._runtime.controller import Controller, Mapper, Predicate, Reconciler
from aioinformer._runtime.events import EventRecorder
from aioinformer._runtime.health import Health
from aioinformer._runtime.loopwatch import LoopWatchdog
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
    """Lease-based leader election settings (client-go's defaults); see
    :class:`~aioinformer.LeaderElector` for what each one means."""

    name: str
    """The Lease's name, the same for every replica."""
    namespace: str
    """The Lease's namespace."""
    identity: str
    """This replica's identity, unique among live replicas (the pod's name)."""
    lease_duration: float = 15.0
    """Seconds others wait, from the Lease's last change, before they may take it."""
    renew_deadline: float = 10.0
    """Seconds after its last successful renewal's start that the leader still leads."""
    retry_period: float = 2.0
    """Seconds between two renewals or tries to acquire."""


@dataclass(frozen=True, slots=True)
class Sharding:
    """Key sharding across replicas through per-shard Leases; see
    :class:`~aioinformer.ShardManager` for what each setting means."""

    name: str
    """The prefix of the Lease names, the same for every replica."""
    namespace: str
    """The Leases' namespace, the same for every replica."""
    identity: str
    """This replica's identity, unique among live replicas (a DNS-1123 name)."""
    shards: int = 32
    """How many shards keys are hashed into, the same for every replica."""
    lease_duration: float = 15.0
    """Seconds others wait, from a Lease's last change, before they may take it."""
    renew_deadline: float = 10.0
    """Seconds after its last successful renewal's start that a shard is still owned."""
    retry_period: float = 2.0
    """Seconds between two renewals or balancing rounds."""


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
        watcher_options: deprecated (a DeprecationWarning): the same as a mapping of
            :class:`~aioinformer.WatchOptions` field names.
        cache_sync_timeout: seconds :meth:`run` waits for every informer's initial sync
            before it gives up with :class:`~aioinformer.FreshnessTimeout` naming the
            informers still waiting and their last error (controller-runtime's
            CacheSyncTimeout, 2 min): a missing CRD or RBAC rule fails the start visibly
            instead of blocking every controller. None: no limit.
        field_manager: the ``fieldManager`` of the client's writes.
        discovery_timeout: seconds :meth:`run` waits for a resource that is not served
            yet (a CRD just created) before it gives up.
        blocked_loop_threshold: seconds the event loop may be blocked before a WARNING
            names the task that blocks it (and ``/healthz`` fails while it lasts).
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
        field_manager: str = "aioinformer",
        discovery_timeout: float = 10.0,
        blocked_loop_threshold: float = 1.0,
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
        self.discovery = Discovery(self.factory.rest, wait=discovery_timeout)
        """What the server serves (resources resolved when :meth:`run` starts)."""
        self.client = Client(
            self.factory.rest,
            field_manager=field_manager,
            discovery=self.discovery,
            hooks=[ControllerWrites(lambda: self.factory.informers)],
        )
        """The write client: inside a reconcile, every write is fenced and keeps the
        controller's expectations and read-your-writes (see
        :mod:`~aioinformer._runtime.bookkeeping`); outside, a plain client."""
        self.metrics = Metrics()
        self.metrics.add_informer_source(lambda: [i.statistics() for i in self.factory.informers])
        self.watchdog = LoopWatchdog(threshold=blocked_loop_threshold)
        """Warns (naming the task) when the event loop is blocked, while :meth:`run` runs."""
        self.health = Health()
        """``/healthz`` and ``/readyz`` on the metrics port: add checks with
        ``health.add_liveness_check`` / ``add_readiness_check``."""
        self.health.add_liveness_check("loop", self._loop_check)
        self.health.add_readiness_check("informers", self._informers_check)
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
        self._recorders: list[EventRecorder] = []
        self.required_permissions: list[tuple[str, str, tuple[str, ...], str | None]] = []
        """What :meth:`require_permission` declared: (group, resource, verbs, namespace)."""

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
        """A shared informer from the manager's factory, started by :meth:`run`.

        The parameters are :meth:`InformerFactory.informer
        <aioinformer.InformerFactory.informer>`'s: ``group_version`` and ``plural`` name the
        resource; ``namespace`` defaults to the manager's; ``indexers``, ``transform``,
        ``label_selector``, ``field_selector``, ``metadata_only``, ``store`` and
        ``streaming_list`` shape the cache.
        """
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
        primary_kind: str | None = None,
        owns: Sequence[Informer] = (),
        watches: Sequence[tuple[Informer, Mapper]] = (),
        predicates: Sequence[Predicate] = (),
        concurrency: int = 1,
        rate_limiter: RateLimiter[str] | None = None,
        freshness: bool = True,
        freshness_timeout: float = 5.0,
        expectations: bool = True,
        expectations_ttl: float = 300.0,
        reconcile_timeout: float | None = None,
        resync_period: float | None = None,
        shutdown_timeout: float = 30.0,
    ) -> Controller:
        """Create a controller the manager will run once every informer has synced.

        The parameters are :class:`~aioinformer.Controller`'s, which documents each one;
        the manager supplies ``metrics`` and ``may_act`` (the check that this replica holds
        the key: its leader Lease, or the key's shard). In short:

        Args:
            name: the controller's name (logs, metrics, work queue).
            reconcile: ``async def reconcile(key) -> Result | None``.
            primary: the informer of the objects it reconciles.
            primary_kind: their kind (default: from discovery).
            owns: informers of objects the primary controls (by controller reference).
            watches: ``(informer, mapper)`` pairs mapping other objects to primary keys.
            predicates: ``predicate(old, new)`` filters on primary updates.
            concurrency: keys reconciled at once (never one key twice).
            rate_limiter: per-key retry delays (default: client-go's).
            freshness: a reconcile waits until the informers have seen the controller's
                own writes for its key (read-your-writes).
            freshness_timeout: seconds that wait may take before the key is requeued.
            expectations: a key waits while its recorded creations and deletions are
                unobserved.
            expectations_ttl: seconds after which an expectation is given up as lost.
            reconcile_timeout: seconds one reconcile may run (None: no limit).
            resync_period: seconds between two reconciles of every cached primary
                (None: never).
            shutdown_timeout: seconds the controller's stop may take before running
                reconciles are cancelled.
        """
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
            may_act=self._may_act,
            reconcile_timeout=reconcile_timeout,
            resync_period=resync_period,
            shutdown_timeout=shutdown_timeout,
        )
        self.controllers.append(ctl)
        return ctl

    def require_permission(
        self, group: str, resource: str, verbs: Sequence[str], namespace: str | None = None
    ) -> None:
        """Declare an RBAC permission the operator needs beyond what its informers,
        controllers and event recorders show (e.g. writes made with another client), for
        ``python -m aioinformer rbac``; ``namespace`` None: in every namespace."""
        self.required_permissions.append((group, resource, tuple(verbs), namespace))

    @property
    def event_recorders(self) -> list[EventRecorder]:
        """The recorders :meth:`event_recorder` made."""
        return list(self._recorders)

    def event_recorder(self, component: str) -> EventRecorder:
        """An :class:`~aioinformer.EventRecorder` writing through :attr:`client` as
        ``component``; flushed and closed when :meth:`run` ends."""
        recorder = EventRecorder(self.client, component)
        self._recorders.append(recorder)
        return recorder

    async def run(self) -> None:
        """Run until cancelled: the metrics endpoint, discovery, the informers, then the
        controllers (while leading, with leader election; each on the keys of its shards,
        with sharding).

        Raises :class:`~aioinformer.ConfigError` when a resource is not served (naming what
        is), :class:`~aioinformer.FreshnessTimeout` if the informers do not sync within
        ``cache_sync_timeout``. Cancelling it stops everything in order: the controllers
        (running reconciles get until ``shutdown_timeout``, bounded whatever they do), then
        the Leases are released, then the informers stop.
        """
        runner = None
        if self.metrics_port is not None:
            runner, self.bound_metrics_port = await self.metrics.serve(
                self.metrics_host, self.metrics_port, self.health.routes
            )
            log.info("serving /metrics, /healthz, /readyz on %s:%d", self.metrics_host,
                     self.bound_metrics_port)  # fmt: skip
        self.watchdog.start()
        try:
            await self.resolve()
            async with self.factory:
                await self.factory.wait_for_sync(self.cache_sync_timeout)
                if self.elector is not None:
                    await self._lead(self.elector)
                elif self.shards is not None:
                    await self._shard(self.shards)
                else:
                    await self._serve()
        finally:
            for recorder in self._recorders:
                await recorder.aclose()
            self.watchdog.stop()
            if runner is not None:
                await runner.cleanup()

    async def resolve(self) -> None:
        """Look every informer's resource up in discovery (once): a wrong version or plural
        is a :class:`~aioinformer.ConfigError` saying what the server serves; a resource
        not served yet (a CRD just created) is waited for, up to ``discovery_timeout``.
        Controllers learn their primary's kind."""
        for inf in self.factory.informers:
            if inf.api_resource is None:
                gv = f"{inf.group}/{inf.version}" if inf.group else inf.version
                inf.api_resource = await self.discovery.resolve(gv, inf.plural)
        for ctl in self.controllers:
            if ctl.primary.api_resource is not None:
                ctl.resolved(ctl.primary.api_resource)

    # -- health ----------------------------------------------------------------------------------

    def _loop_check(self) -> str | None:
        if self.watchdog.blocked_since is not None:
            return f"the event loop is blocked ({self.watchdog.lag:.1f} s)"
        return None

    def _informers_check(self) -> str | None:
        waiting = [i.name for i in self.factory.informers if not i.has_synced]
        return f"not synced: {', '.join(waiting)}" if waiting else None

    # -- who may act -----------------------------------------------------------------------------

    def _may_act(self, key: str) -> bool:
        """Whether this replica holds ``key`` now (by the local clock)."""
        if self.elector is not None:
            return self.elector.is_leader
        if self.shards is not None:
            return self.shards.owns(key)
        return True

    # -- the three ways to run the controllers --------------------------------------------------

    async def _serve(self) -> None:
        self._start_controllers()
        try:
            await asyncio.Event().wait()
        finally:
            await self._stop_controllers()

    async def _lead(self, elector: LeaderElector) -> None:
        """Controllers while leading. Lost leadership (a renewal past ``renew_deadline``,
        or the Lease taken) cancels the reconciles at once; a shutdown stops them
        gracefully while the Lease is still renewed, and releases it only after."""
        electing = asyncio.create_task(elector.run(), name="leader-elector")
        try:
            while True:
                await _first(elector.leading.wait(), electing)
                self.metrics.leader.set(1)
                log.info("leading: starting controllers")
                self._start_controllers()
                await _first(self._until(lambda: not elector.is_leader), electing)
                self.metrics.leader.set(0)
                log.warning("leadership lost: cancelling the reconciles")
                await self._stop_controllers(timeout=0.0)
        finally:
            await self._stop_controllers(valid=lambda _key: elector.is_leader)
            self.metrics.leader.set(0)
            electing.cancel()
            await asyncio.wait([electing])

    async def _shard(self, shards: ShardManager) -> None:
        """Controllers on the keys of the shards held. A shard lost or handed over has its
        running reconciles cancelled before its Lease is released (or as soon as its
        renewal is past ``renew_deadline``); a shutdown stops the controllers gracefully
        while the shard Leases are still renewed, and releases them only after."""

        def requeue(_owned: frozenset[int]) -> None:
            self.metrics.shards_owned.set(len(shards.owned_shards()))
            for ctl in self.controllers:
                for obj in ctl.primary.reader.list_now():
                    if shards.owns(obj.key):
                        ctl.queue.add(obj.key)

        async def hand_over(released: frozenset[int]) -> None:
            # their writes in flight are answered before the Leases go (the client settles
            # a cancelled write), within the handover's bound
            for ctl in self.controllers:
                await ctl.cancel_reconciles(
                    lambda k: shards.shard_for(k) in released, timeout=shards.renew_deadline
                )

        shards.on_change.append(requeue)
        shards.on_release.append(hand_over)
        sharding = asyncio.create_task(shards.run(), name="manager-shards")
        self._start_controllers()
        fencing = asyncio.create_task(self._fence(shards.owns), name="manager-fence")
        try:
            await _first(asyncio.Event().wait(), sharding)
        finally:
            fencing.cancel()
            await self._stop_controllers(valid=shards.owns)
            sharding.cancel()
            await asyncio.wait([sharding, fencing])

    async def _until(self, done: Callable[[], bool]) -> None:
        """Return once ``done()`` holds, checked every :data:`_FENCE_INTERVAL`."""
        while not done():  # noqa: ASYNC110  (a deadline of the clock: no event announces it)
            await asyncio.sleep(_FENCE_INTERVAL)

    async def _fence(self, owns: Callable[[str], bool]) -> None:
        """Cancel, as soon as it shows, every running reconcile of a key no longer held."""
        while True:
            await asyncio.sleep(_FENCE_INTERVAL)
            for ctl in self.controllers:
                await ctl.cancel_reconciles(lambda k: not owns(k), timeout=0.0)

    def _start_controllers(self) -> None:
        if self._running_controllers:
            return
        self._running_controllers = True
        for ctl in self.controllers:
            ctl.restart()
            for obj in ctl.primary.reader.list_now():
                ctl.queue.add(obj.key)

    async def _stop_controllers(
        self, timeout: float | None = None, valid: Callable[[str], bool] | None = None
    ) -> None:
        """Stop every controller (each bounded by ``timeout``, default its own
        ``shutdown_timeout``); with ``valid``, a reconcile whose key stops being valid
        meanwhile is cancelled at once."""
        if not self._running_controllers:
            return
        self._running_controllers = False
        fencing = asyncio.create_task(self._fence(valid)) if valid is not None else None
        try:
            await asyncio.gather(*(ctl.stop(timeout) for ctl in self.controllers))
        finally:
            if fencing is not None:
                fencing.cancel()
                await asyncio.wait([fencing])


_FENCE_INTERVAL = 0.1
"""Seconds between two checks that this replica still holds the keys it reconciles."""


async def _first(waiting: Coroutine[Any, Any, Any], background: asyncio.Task[Any]) -> None:
    """Await ``waiting``; if ``background`` ends first, raise what it raised (or return)."""
    task = asyncio.ensure_future(waiting)
    try:
        await asyncio.wait([task, background], return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait([task])
    if task.done() and not task.cancelled():
        task.result()
        return
    if background.done() and not background.cancelled():
        background.result()
        raise RuntimeError(f"{background.get_name()} ended")


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, on uvloop when installed (``pip install aioinformer[uvloop]``).

    Args:
        main: the coroutine to run, e.g. ``manager.run()``.

    Returns:
        What ``main`` returns.
    """
    try:
        import uvloop  # an optional extra: typed as Any where it is not installed
    except ImportError:
        uvloop = None
    if uvloop is None:  # (outside the except block: no ImportError chained to the run's errors)
        return asyncio.run(main)
    result: T = uvloop.run(main)
    return result

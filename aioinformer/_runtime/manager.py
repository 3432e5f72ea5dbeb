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
* losing a Lease cancels the running reconciles of its keys at once: the elector sets
  ``leadership_lost`` (and the shard manager calls ``on_change``) the moment a renewal
  misses its deadline or finds the Lease taken, with no polling; a shard handed over to
  another replica has its reconciles cancelled, and waited for up to ``min(1 s,
  renew_deadline / 4)``, before its Lease is released;
* a shutdown stops the controllers first (bounded by ``shutdown_timeout``) while the
  Leases are still renewed, then releases the Leases, then stops the informers.

With ``Sharding`` (``caches="sharded"``, its default) each replica also caches only its
shards' objects
(:mod:`~aioinformer._runtime.shardcaches`): a key is its only once its shard's caches are
ready, besides its Lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Unpack

from aioinformer._cache.factory import (
    FACTORY_NAMESPACE,
    InformerFactory,
    InformerOptions,
    NamespaceDefault,
)
from aioinformer._cache.handle import InformerHandle
from aioinformer._cache.informer import Informer, Pipeline
from aioinformer._cache.process import ProcessSettings
from aioinformer._cache.watcher import WatchOptions
from aioinformer._client.client import Client
from aioinformer._client.discovery import Discovery
from aioinformer._client.rest import ApiClientLike
from aioinformer._core import logs
from aioinformer._core.errors import ConfigError
from aioinformer._core.loops import new_event_loop
from aioinformer._core.service import Service, wait_ended
from aioinformer._runtime.bookkeeping import ControllerWrites
from aioinformer._runtime.catchup import catch_up
from aioinformer._runtime.controller import (
    Controller,
    ControllerOptions,
    Mapper,
    Predicate,
    Reconciler,
    Source,
)
from aioinformer._runtime.events import EventRecorder
from aioinformer._runtime.health import Health
from aioinformer._runtime.loopwatch import LoopWatchdog
from aioinformer._runtime.metrics import Metrics, ShardState
from aioinformer._runtime.rbac import UndeclaredWrites
from aioinformer._runtime.shardcaches import ShardedCaches, labeled_resources

if TYPE_CHECKING:
    from aioinformer._coordination.labeler import ShardLabeler
    from aioinformer._coordination.leader import LeaderElector
    from aioinformer._coordination.sharding import ShardManager

__all__ = ["LeaderElection", "Manager", "Sharding", "run"]

log = logs.logger("aioinformer.manager")

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
    """This replica's identity, unique among live replicas (the pod's name): a second live
    replica with the same one is detected (ERROR) and does not lead."""
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
    """This replica's identity, unique among live replicas (a DNS-1123 name): a second
    live replica with the same one is detected (ERROR) and takes no shard."""
    shards: int = 32
    """How many shards keys are hashed into, the same for every replica."""
    lease_duration: float = 15.0
    """Seconds others wait, from a Lease's last change, before they may take it."""
    renew_deadline: float = 10.0
    """Seconds after its last successful renewal's start that a shard is still owned."""
    retry_period: float = 2.0
    """Seconds between two renewals or balancing rounds."""
    caches: Literal["full", "sharded"] = "sharded"
    """"sharded" (the default): each replica caches, decodes and reconciles only its
    shards' objects (at most 256 shards, cut along the label buckets): the controllers'
    primary informers are scoped by uid, their owned informers by the bucket label,
    re-scoped as shards move; an informer that cannot be sharded stays full, and the
    manager says at start which are sharded and how (see docs/running.md, "Scaling out").
    "full": every replica caches every object and reconciles the keys of its shards (keys
    hashed by :func:`~aioinformer.shard_of`); needed for more than 256 shards."""


class Manager(Service):
    """Runs informers, controllers, metrics and leader election/sharding together.

    Args:
        api_client: a kubernetes_asyncio ``ApiClient``.
        namespace: the default namespace of the informers (None: all namespaces).
        metrics_port: serve ``/metrics`` on this port (None: no endpoint; 0: any free port,
            see :attr:`bound_metrics_port`).
        metrics_host: the address the metrics endpoint binds.
        leader_election: run the controllers only while this replica leads.
        sharding: split the keys across replicas by per-shard Leases.
        watch_options: how the informers list, watch and recover.
        cache_sync_timeout: seconds :meth:`run` waits for every informer's initial sync
            before it gives up with :class:`~aioinformer.FreshnessTimeout` naming the
            informers still waiting and their last error (controller-runtime's
            CacheSyncTimeout, 2 min): a missing CRD or RBAC rule fails the start visibly
            instead of blocking every controller. None: no limit.
        field_manager: the ``fieldManager`` of the client's writes.
        discovery_timeout: seconds :meth:`run` waits for a resource that is not served
            yet (a CRD just created) before it gives up.
        blocked_loop_threshold: seconds the event loop may be blocked before a WARNING
            names the task that blocks it (and ``/healthz`` fails while it lasts); the
            watchdog is a thread of the manager's. None: no watchdog (no thread).
        clock: the clock every part of the manager measures durations by: the informers'
            receive times and staleness, the Leases' deadlines (leader election, sharding),
            the controllers' queues, expectations and rate limits, the event recorders'
            aggregation (``time.monotonic``; on a virtual-time loop, its ``loop.time``).
        pipeline: where the informers' watchers and writers run: "thread" (one thread
            for all of them, the default) or "loop" (see
            :class:`~aioinformer.InformerFactory`).
        compact: the informers' default for ``compact`` (bodies kept compressed).
        process: the process-wide effects the manager may have
            (:class:`~aioinformer.ProcessSettings`).
    """

    _factory_class: type[InformerFactory] = InformerFactory

    def __init__(
        self,
        api_client: ApiClientLike,
        *,
        namespace: str | None = None,
        metrics_port: int | None = None,
        metrics_host: str = "127.0.0.1",
        leader_election: LeaderElection | None = None,
        sharding: Sharding | None = None,
        watch_options: WatchOptions | None = None,
        cache_sync_timeout: float | None = 120.0,
        field_manager: str = "aioinformer",
        discovery_timeout: float = 10.0,
        blocked_loop_threshold: float | None = 1.0,
        clock: Callable[[], float] = time.monotonic,
        pipeline: Pipeline = "thread",
        compact: bool = False,
        process: ProcessSettings | None = None,
    ) -> None:
        if leader_election is not None and sharding is not None:
            raise ConfigError("choose leader_election or sharding, not both")
        self.api_client = api_client
        self.cache_sync_timeout = cache_sync_timeout
        self.clock = clock
        """What every part of the manager measures durations by."""
        self.factory = self._factory_class(
            api_client,
            namespace,
            watch_options=watch_options,
            clock=clock,
            pipeline=pipeline,
            compact=compact,
            process=process,
        )
        """The informer factory the manager runs (one pipeline thread, one HTTP session)."""
        self.discovery = Discovery(self.factory.rest, wait=discovery_timeout)
        """What the server serves (resources resolved when :meth:`run` starts)."""
        self.client = Client(
            self.factory.rest,
            field_manager=field_manager,
            discovery=self.discovery,
            hooks=[
                ControllerWrites(lambda: self.factory.informers, self.factory.rest),
                UndeclaredWrites(lambda: self),
            ],
        )
        """The write client: inside a reconcile, every write is fenced and keeps the
        controller's expectations and read-your-writes (see
        :mod:`~aioinformer._runtime.bookkeeping`); outside, a plain client. A write the
        RBAC ``python -m aioinformer rbac`` generates would not grant is logged once
        (WARNING) with the :meth:`require_permission` call to add."""
        self.metrics = Metrics()
        self.metrics.add_informer_source(lambda: [i.statistics() for i in self.factory.informers])
        self.watchdog: LoopWatchdog | None = (
            LoopWatchdog(threshold=blocked_loop_threshold)
            if blocked_loop_threshold is not None
            else None
        )
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

            self.elector = LeaderElector(api_client, **asdict(leader_election), clock=clock)
        self.shards: ShardManager | None = None
        self.sharded_caches: ShardedCaches | None = None
        """With ``Sharding(caches="sharded")``: the scope of the sharded informers."""
        if sharding is not None:
            from aioinformer._coordination.sharding import ShardManager

            settings = asdict(sharding)
            caches = settings.pop("caches")
            if caches not in ("full", "sharded"):
                raise ConfigError(f'Sharding.caches must be "full" or "sharded", not {caches!r}')
            self.shards = ShardManager(api_client, **settings, clock=clock)
            self.shards.is_ready = self._shard_ready
            if caches == "sharded":
                self.sharded_caches = ShardedCaches(self.factory, sharding.shards)
                self.shards.buckets_text = self.sharded_caches.buckets_text
                self.client.uid_preconditions = True  # (ownership is by object)
            self.metrics.add_shard_source(self._shard_states)
        self._group: asyncio.TaskGroup | None = None  # while running: the recorders'
        self._catching_up: dict[int, int] = {}  # shard -> the Lease RV its caches wait for
        self._recorders: list[EventRecorder] = []
        self._labelers: list[ShardLabeler] = []
        self.required_permissions: list[tuple[str, str, tuple[str, ...], str | None]] = []
        """What :meth:`require_permission` declared: (group, resource, verbs, namespace)."""

    def informer(
        self, group_version: str, plural: str, **options: Unpack[InformerOptions]
    ) -> Informer:
        """A shared informer of the manager's factory (:meth:`InformerFactory.informer
        <aioinformer.InformerFactory.informer>`, the same :class:`~aioinformer.InformerOptions`),
        started by the manager.

        Args:
            group_version: ``"v1"`` for the core group, else ``"GROUP/VERSION"``.
            plural: the resource's plural name (``"pods"``).
        """
        return self.factory.informer(group_version, plural, **options)

    def acquire(
        self, group_version: str, plural: str, **options: Unpack[InformerOptions]
    ) -> InformerHandle:
        """A hold on a shared informer of the manager's factory
        (:meth:`InformerFactory.acquire <aioinformer.InformerFactory.acquire>`): started at
        once if the manager runs, stopped when its last hold is released and nobody pinned
        it with :meth:`informer`. The manager's ``/readyz``, ``/metrics`` and start-up
        sync follow the informers it runs now. A controller can follow it while it runs
        (:meth:`Controller.add_owns <aioinformer.Controller.add_owns>`,
        :meth:`~aioinformer.Controller.add_watches`). Its resource is not looked up in
        discovery (a wrong plural shows as the informer's list errors, not as a
        ConfigError), and ``python -m aioinformer rbac`` does not see an informer acquired
        while the manager runs: declare it with :meth:`require_permission`.

        Args:
            group_version: ``"v1"`` for the core group, else ``"GROUP/VERSION"``.
            plural: the resource's plural name (``"pods"``).
        """
        return self.factory.acquire(group_version, plural, **options)

    def controller(
        self,
        name: str,
        reconcile: Reconciler,
        *,
        primary: Informer,
        primary_kind: str | None = None,
        owns: Sequence[Source] = (),
        watches: Sequence[tuple[Source, Mapper]] = (),
        predicates: Sequence[Predicate] = (),
        options: ControllerOptions | None = None,
    ) -> Controller:
        """A :class:`~aioinformer.Controller` the manager runs once every informer has
        synced (while this replica leads, with leader election; on the keys of its shards,
        with sharding). The arguments are the Controller's, which documents each one; the
        manager supplies ``metrics``, ``may_act`` (whether this replica holds the key:
        its leader Lease, or the key's shard) and, unless ``options.error_events`` is
        False, ``events``: its :meth:`event_recorder` named after the controller (the
        one already made with that name, if any).

        Args:
            name: the controller's name (logs, metrics, work queue).
            reconcile: ``async def reconcile(key) -> Result | None``.
            primary: the informer of the objects it reconciles.
            primary_kind: their kind (default: from discovery).
            owns: informers (or :class:`~aioinformer.InformerHandle` s) of objects the
                primary controls (by controller reference).
            watches: ``(informer, mapper)`` pairs (or ``(handle, mapper)``) mapping other
                objects to primary keys.
            predicates: ``predicate(old, new)`` filters on primary updates.
            options: how it reconciles (:class:`~aioinformer.ControllerOptions`).
        """
        if self.sharded_caches is not None:  # (its key map follows it from the start)
            self.sharded_caches.key_map(primary)
        ctl = Controller(
            name,
            reconcile,
            primary=primary,
            primary_kind=primary_kind,
            owns=owns,
            watches=watches,
            predicates=predicates,
            options=options,
            metrics=self.metrics,
            may_act=functools.partial(self._may_act_on, primary),
            clock=self.clock,
            events=self._recorder(name) if (options or ControllerOptions()).error_events else None,
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
        ``component``, run by the manager (flushed when it stops, after the controllers)."""
        recorder = EventRecorder(self.client, component, clock=self.clock)
        self._recorders.append(recorder)
        if self._group is not None:
            self._group.create_task(recorder.run(), name=f"event-recorder:{component}")
        return recorder

    def shard_labeler(
        self,
        resources: Sequence[tuple[str, str]],
        *,
        namespace: str | NamespaceDefault | None = FACTORY_NAMESPACE,
        concurrency: int = 16,
        owns_bucket: Callable[[int], bool] | None = None,
    ) -> ShardLabeler:
        """A :class:`~aioinformer.ShardLabeler` of ``resources`` on the manager's factory
        and :attr:`client`, run by the manager once its informers have synced (on every
        replica, leading or not: its patches are idempotent), stopped with it. Declares
        the ``patch`` permission it needs (:meth:`require_permission`).

        Args:
            resources: the owned resources to label, as ``(group_version, plural)``.
            namespace: label only in this namespace (default: the manager's; None: all).
            concurrency: how many objects it places at once.
            owns_bucket: whether this replica labels the children of a bucket (None: all;
                see :class:`~aioinformer.ShardLabeler`).
        """
        from aioinformer._coordination.labeler import ShardLabeler

        ns = self.factory.namespace if namespace is FACTORY_NAMESPACE else namespace
        labeler = ShardLabeler(
            self.client,
            resources,
            factory=self.factory,
            namespace=ns,
            concurrency=concurrency,
            owns_bucket=owns_bucket,
        )
        for gv, plural in labeler.resources:
            group = gv.rpartition("/")[0]
            self.require_permission(group, plural, ["patch"], ns)
        self._labelers.append(labeler)
        if self._group is not None:
            self._group.create_task(labeler.run(), name="shard-labeler")
        return labeler

    @property
    def shard_labelers(self) -> list[ShardLabeler]:
        """The labelers :meth:`shard_labeler` made."""
        return list(self._labelers)

    def _recorder(self, component: str) -> EventRecorder:
        """The recorder named ``component``: the one made already, or a new one."""
        made = [r for r in self._recorders if r.component == component]
        return made[0] if made else self.event_recorder(component)

    def _service_name(self) -> str:
        return "aioinformer-manager"

    async def run(self) -> None:
        """Run until cancelled: the metrics endpoint, discovery, the informers, then the
        controllers (while leading, with leader election; each on the keys of its shards,
        with sharding). ``async with manager:`` runs it in a task of its own and enters
        once the informers have synced, as ``/readyz`` turns ready then: with leader
        election that is before this replica leads (a warm standby is ready too).

        Raises :class:`~aioinformer.ConfigError` when a resource is not served (naming what
        is), :class:`~aioinformer.FreshnessTimeout` if the informers do not sync within
        ``cache_sync_timeout``. Cancelling it stops everything in order: the controllers
        (running reconciles get until their ``shutdown_timeout``, bounded whatever they
        do) while the Leases are still renewed, then the Leases are released, then the
        event recorders are flushed, then the informers stop.
        """
        self._begin()
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.metrics_port is not None:
                    runner, self.bound_metrics_port = await self.metrics.serve(
                        self.metrics_host, self.metrics_port, self.health.routes
                    )
                    stack.push_async_callback(runner.cleanup)
                    log.info("serving /metrics, /healthz, /readyz on %s:%d", self.metrics_host,
                             self.bound_metrics_port)  # fmt: skip
                if self.watchdog is not None:
                    self.watchdog.start()
                    stack.callback(self.watchdog.stop)
                await self.resolve()
                if self.sharded_caches is not None:
                    self._shard_caches(self.sharded_caches)
                await stack.enter_async_context(self.factory)
                await self.factory.wait_for_sync(self.cache_sync_timeout)
                group = self._group = await stack.enter_async_context(asyncio.TaskGroup())
                for recorder in self._recorders:
                    group.create_task(recorder.run(), name=f"event-recorder:{recorder.component}")
                for labeler in self._labelers:
                    group.create_task(labeler.run(), name="shard-labeler")
                self._ready()
                if self.elector is not None:
                    await self._lead(self.elector)
                elif self.shards is not None and self.sharded_caches is not None:
                    await self._shard_cached(self.shards, self.sharded_caches)
                elif self.shards is not None:
                    await self._shard(self.shards)
                else:
                    await self._act_alone()
        finally:
            self._group = None
            self._end()

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
        watchdog = self.watchdog
        if watchdog is not None and watchdog.blocked_since is not None:
            return f"the event loop is blocked ({watchdog.lag:.1f} s)"
        return None

    def _informers_check(self) -> str | None:
        waiting = [
            i.name
            for i in self.factory.informers
            if not i.has_synced and not self.factory.is_deferred(i)
        ]
        return f"not synced: {', '.join(waiting)}" if waiting else None

    # -- shards, as /metrics and the shard Leases show them ----------------------------------------

    def _shard_ready(self, shard: int) -> bool:
        """Whether ``shard`` is ready here: held, and its caches synced and caught up with
        the Lease write that took it (with sharded caches: scoped to it too), so its keys
        are reconciled."""
        shards = self.shards
        if shards is None or not shards.owns_shard(shard):
            return False
        if self.sharded_caches is not None:
            return shard in self.sharded_caches.ready
        return self._group is not None and shard not in self._catching_up

    def _shard_states(self) -> list[ShardState]:
        shards, sharded = self.shards, self.sharded_caches
        if shards is None:
            return []
        return [
            ShardState(
                s,
                shards.owns_shard(s),
                self._shard_ready(s),
                sharded.buckets_text(s) if sharded is not None else "",
            )
            for s in range(shards.shards)
        ]

    # -- who may act -----------------------------------------------------------------------------

    def _may_act_on(self, primary: Informer, key: str) -> bool:
        """Whether this replica holds ``key`` (of the controller of ``primary``) now."""
        if self.sharded_caches is not None and self.shards is not None:
            return self.sharded_caches.may_act(self.shards, primary, key)
        return self._may_act(key)

    def _may_act(self, key: str) -> bool:
        """Whether this replica holds ``key`` now (by the local clock)."""
        if self.elector is not None:
            return self.elector.is_leader
        if self.shards is not None:
            shards = self.shards
            return shards.owns(key) and shards.shard_for(key) not in self._catching_up
        return True

    # -- the three ways to run the controllers --------------------------------------------------

    async def _run_controllers(self, until: asyncio.Event | None) -> None:
        """Every controller, until ``until`` is set (or until cancelled): then each stops
        (gracefully when cancelled; its reconciles were aborted first when ``until``
        fired because a Lease was lost)."""
        async with asyncio.TaskGroup() as tg:
            runs = [
                tg.create_task(ctl.run(), name=f"controller:{ctl.name}") for ctl in self.controllers
            ]
            if until is None:
                await asyncio.get_running_loop().create_future()  # until cancelled
            else:
                await until.wait()
            for run in runs:
                run.cancel()

    async def _act_alone(self) -> None:
        """Controllers on every key (no leader election, no sharding): this replica is
        the one that acts, so ``aioinformer_leader`` reads 1 while they run."""
        self.metrics.leader.set(1)
        try:
            await self._run_controllers(None)
        finally:
            self.metrics.leader.set(0)

    async def _lead(self, elector: LeaderElector) -> None:
        """Controllers while leading. Lost leadership (a renewal past ``renew_deadline``,
        or the Lease taken) aborts the running reconciles at once and stops the
        controllers; a shutdown stops them gracefully while the Lease is still renewed,
        and releases it only after (the elector stops last)."""
        async with asyncio.TaskGroup() as outer:
            electing = outer.create_task(elector.run(), name=elector._service_name())
            outer.create_task(self._fence_elected(elector))
            while True:
                await _first(elector.leading.wait(), electing)
                if not await self._catch_up_leading(elector, electing):
                    continue  # lost while catching up
                self.metrics.leader.set(1)
                log.info("leading: starting controllers")
                try:
                    await self._run_controllers(elector.leadership_lost)
                finally:
                    self.metrics.leader.set(0)
                log.warning("leadership lost: the controllers stopped")

    async def _catch_up_leading(self, elector: LeaderElector, electing: asyncio.Task[Any]) -> bool:
        """Wait, bounded by ``renew_deadline``, until the informers caught up with the
        Lease write that made this replica leader (:mod:`~aioinformer._runtime.catchup`);
        False if leadership was lost meanwhile."""
        rv = elector.lease_version
        if rv is None:
            return True
        what = f"lease {elector.namespace}/{elector.name}"
        catching = asyncio.ensure_future(
            catch_up(self.factory.informers, rv, self.factory.rest, what=what,
                     timeout=elector.renew_deadline)
        )  # fmt: skip
        lost = asyncio.ensure_future(elector.leadership_lost.wait())
        try:
            await asyncio.wait([catching, lost, electing], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (catching, lost):
                task.cancel()
            await asyncio.wait([catching, lost])
        if electing.done():
            electing.result()
            raise RuntimeError("the leader elector ended")
        return catching.done() and not catching.cancelled() and elector.leading.is_set()

    async def _fence_elected(self, elector: LeaderElector) -> None:
        """Each time leadership ends, abort every running reconcile at once (also while
        the controllers drain during a shutdown)."""
        while True:
            await elector.leading.wait()
            await elector.leadership_lost.wait()
            for ctl in self.controllers:
                ctl.abort_reconciles()

    async def _shard(self, shards: ShardManager) -> None:
        """Controllers on the keys of the shards held. A shard lost (its renewal past
        ``renew_deadline``) has its running reconciles aborted the moment the shard
        manager says so; a shard handed over has them cancelled, and waited for up to
        ``min(1 s, renew_deadline / 4)`` (a timed-out reconcile's grace), before its Lease
        is released; a shutdown stops the controllers gracefully while the shard Leases are
        still renewed, and releases them only after (the shard manager stops last)."""

        def lost(key: str) -> bool:  # (a shard handed over is hand_over's to cancel)
            return not shards.owns(key) and shards.shard_for(key) not in shards.handing_over

        catching: set[asyncio.Task[None]] = set()
        previous: list[frozenset[int]] = [frozenset()]

        def owned_changed(owned: frozenset[int]) -> None:
            self.metrics.shards_owned.set(len(shards.owned_shards()))
            taken = owned - previous[0]
            previous[0] = owned
            for s in set(self._catching_up) - owned:
                del self._catching_up[s]
            versions = {s: rv for s in taken if (rv := shards.lease_version(s)) is not None}
            if versions:  # their keys wait until the caches caught up with those writes
                self._catching_up.update(versions)
                task = asyncio.ensure_future(self._catch_up_shards(shards, versions))
                catching.add(task)
                task.add_done_callback(catching.discard)
            for ctl in self.controllers:
                ctl.abort_reconciles(lost)
                for obj in ctl.primary.snapshot().list():
                    if shards.owns(obj.key):
                        ctl.queue.add(obj.key)

        async def hand_over(released: frozenset[int]) -> None:
            # cancelled once, their cleanups and writes in flight get the grace a timed-out
            # reconcile gets (the client settles a cancelled write) before the Leases go
            grace = min(1.0, shards.renew_deadline / 4)
            for ctl in self.controllers:
                await ctl.cancel_reconciles(lambda k: shards.shard_for(k) in released, grace)

        shards.on_change.append(owned_changed)
        shards.on_release.append(hand_over)
        try:
            async with asyncio.TaskGroup() as outer:
                sharding = outer.create_task(shards.run(), name=shards._service_name())
                await _first(self._run_controllers(None), sharding)
        finally:
            shards.on_change.remove(owned_changed)
            shards.on_release.remove(hand_over)
            for task in list(catching):
                task.cancel()
            if catching:
                await asyncio.wait(catching)
            self._catching_up.clear()

    def _shard_caches(self, sharded: ShardedCaches) -> None:
        """Before the informers start: scope the controllers' informers by shard, and
        label the owned resources' children of the buckets this replica gets ready."""
        sharded.configure(self.controllers)
        for namespace, resources in labeled_resources(self.controllers).items():
            sharded.labelers.append(
                self.shard_labeler(resources, namespace=namespace, owns_bucket=self._labels_bucket)
            )

    def _labels_bucket(self, bucket: int) -> bool:
        """Whether this replica labels the children of ``bucket``: its informers are scoped
        to the bucket's shard, and it holds that shard."""
        sharded, shards = self.sharded_caches, self.shards
        if sharded is None or shards is None:
            return True
        shard = sharded.shard_of_bucket(bucket)
        return shard in sharded.scoped and shards.owns_shard(shard)

    async def _shard_cached(self, shards: ShardManager, sharded: ShardedCaches) -> None:
        """Controllers on the keys of the shards held whose caches are ready (see
        :mod:`~aioinformer._runtime.shardcaches`): a shard gained is reconciled once its
        informers were widened, synced and caught up with its Lease; a shard lost is fenced
        as in :meth:`_shard` and then leaves the caches."""

        def shard_of(ctl: Controller, key: str) -> int | None:
            return sharded.shard_of(ctl.primary, key)

        def key_shard(key: str) -> int | None:  # (ShardManager.owns: any controller's key)
            for ctl in self.controllers:
                if (shard := shard_of(ctl, key)) is not None:
                    return shard
            return None

        def owned_changed(owned: frozenset[int]) -> None:
            self.metrics.shards_owned.set(len(shards.owned_shards()))
            keep = owned | shards.handing_over
            sharded.want(keep)
            for ctl in self.controllers:
                ctl.abort_reconciles(
                    lambda k, ctl=ctl: shard_of(ctl, k) not in keep  # type: ignore[misc]
                )

        def ready(gained: frozenset[int]) -> None:
            for ctl in self.controllers:
                # expectations from an earlier hold of these shards wait for events this
                # replica did not see while it held them not (their objects left its caches
                # silently, and a relist reports no deletion): the caches are the truth now
                for owner in ctl.expectations.owners():
                    shard = shard_of(ctl, owner)
                    if shard is None or shard in gained:
                        ctl.expectations.forget(owner)
                for obj in ctl.primary.snapshot().list():
                    if shard_of(ctl, obj.key) in gained:
                        ctl.queue.add(obj.key)

        async def hand_over(released: frozenset[int]) -> None:
            grace = min(1.0, shards.renew_deadline / 4)
            for ctl in self.controllers:
                await ctl.cancel_reconciles(
                    lambda k, ctl=ctl: shard_of(ctl, k) in released,  # type: ignore[misc]
                    grace,
                )
            sharded.want(shards.owned_shards())  # fenced: their objects leave the caches

        shards.on_change.append(owned_changed)
        shards.on_release.append(hand_over)
        sharded.on_ready.append(ready)
        shards.key_shard = key_shard
        try:
            async with asyncio.TaskGroup() as outer:
                sharding = outer.create_task(shards.run(), name=shards._service_name())
                scoping = outer.create_task(sharded.run(shards, self.cache_sync_timeout))
                try:
                    await _first(self._run_controllers(None), sharding)
                finally:
                    scoping.cancel()
        finally:
            shards.on_change.remove(owned_changed)
            shards.on_release.remove(hand_over)
            sharded.on_ready.remove(ready)

    async def _catch_up_shards(self, shards: ShardManager, versions: dict[int, int]) -> None:
        """Wait, bounded by ``renew_deadline``, until the informers caught up with the
        Lease writes that took the shards ``versions`` names, then let their keys be
        reconciled (:mod:`~aioinformer._runtime.catchup`)."""
        rv = max(versions.values())
        what = f"shards {sorted(versions)} of {shards.namespace}/{shards.name}"
        await catch_up(self.factory.informers, rv, self.factory.rest, what=what,
                       timeout=shards.renew_deadline)  # fmt: skip
        ready = {s for s, v in versions.items() if self._catching_up.get(s) == v}
        for s in ready:
            del self._catching_up[s]
        for ctl in self.controllers:
            for obj in ctl.primary.snapshot().list():
                if shards.shard_for(obj.key) in ready and shards.owns(obj.key):
                    ctl.queue.add(obj.key)


async def _first(waiting: Coroutine[Any, Any, Any], background: asyncio.Task[Any]) -> None:
    """Await ``waiting``; if ``background`` ends first, raise what it raised (or a
    RuntimeError if it returned). Cancelled, it cancels ``waiting`` and returns only once
    that has ended (a controller's graceful stop runs to its end)."""
    task = asyncio.ensure_future(waiting)
    try:
        await asyncio.wait([task, background], return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
            await wait_ended(task)
    if not task.cancelled():
        task.result()
        return
    background.result()
    raise RuntimeError(f"{background.get_name()} ended")


def run(main: Coroutine[Any, Any, T], *, uvloop: bool | None = None) -> T:
    """``asyncio.run(main)`` on a new event loop: uvloop's when installed (``pip install
    aioinformer[uvloop]``) or when ``uvloop`` is True, asyncio's when it is False. No event
    loop policy is installed; the informers' pipeline thread runs on the same kind of loop.

    Args:
        main: the coroutine to run, e.g. ``manager.run()``.
        uvloop: True: uvloop (a ConfigError if it is not installed); False: asyncio's loop;
            None: uvloop if installed.

    Returns:
        What ``main`` returns.
    """
    try:
        loop = new_event_loop(uvloop)
    except BaseException:
        main.close()  # (never run: no "never awaited" warning on top of the error)
        raise
    with asyncio.Runner(loop_factory=lambda: loop) as runner:
        return runner.run(main)

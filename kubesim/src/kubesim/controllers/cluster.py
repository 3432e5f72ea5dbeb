"""The scheduler and kubelets of a simulated cluster, so watch traffic looks real.

:class:`ClusterEmulator` drives pods through the writes a real cluster makes, through the
in-process :class:`~kubesim.registry.store.Api` (each write is one atomic step and one watch event):

* **scheduler**: a pod of the default-scheduler without ``spec.nodeName`` and not
  terminating is bound round-robin over the Ready, schedulable nodes (``pods/binding``),
  at most ``schedule_rate`` per second. No such node: it stays Pending.
* **kubelet**: ``start_delay`` seconds after a pod is bound to a known node, a status
  strategic-merge-patch by manager ``kubelet`` makes it Running (conditions, hostIP, a
  unique podIP, startTime, containerStatuses), at most ``start_rate`` per second.
* **graceful deletion**: a bound pod with a deletionTimestamp is force-deleted
  (gracePeriodSeconds 0) after ``min(deletionGracePeriodSeconds, delete_grace_cap)`` s.
* **pod GC**: when a node goes (:meth:`ClusterEmulator.remove_node`, or a Node deleted
  through the API while running), its pods are force-deleted.
* **Events** (``events=True``): the scheduler's ``Scheduled`` and the kubelet's
  ``Pulling``/``Pulled``/``Created``/``Started`` per container, as core/v1 Events
  (:mod:`kubesim.controllers.pod_events`), so ``kubectl describe pod`` shows them.

The emulation is off until :meth:`ClusterEmulator.start`. It learns about pods from the
pods store's history (never by scanning every pod per tick), so it costs little beside the
writes it makes even with 200k pods; it rescans once when the history it needs was
evicted (e.g. after a bulk load). Pods that vanish or change between two steps are skipped.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import OrderedDict

from kubesim.apis.core.pod.binding import bind
from kubesim.controllers.kubelet import PodStatuses, node_body
from kubesim.controllers.pacing import TICK, Timers, TokenBucket
from kubesim.controllers.pod_events import PodEvents
from kubesim.encoding.timefmt import now_micro
from kubesim.errors import KubeSimApiError
from kubesim.fieldmanager.patching import STRATEGIC_PATCH
from kubesim.registry.store import Api
from kubesim.storage.mvcc import Stored

HEARTBEAT_INTERVAL = 10.0

__all__ = ["ClusterEmulator"]

log = logging.getLogger("kubesim.cluster")

_MAX_DELETES = 1000  # graceful deletions finished per step (the rest on the next step)


class ClusterEmulator:
    """Scheduler, kubelets and pod GC over an :class:`Api` (see the module docstring).

    Use: :meth:`add_nodes` (works without a loop), :meth:`configure`, :meth:`start` (in a
    running loop), :meth:`idle` to wait until nothing is pending, :meth:`stop`.
    """

    def __init__(self, api: Api) -> None:
        self._api = api
        pods_rt = api.registry.lookup("", "v1", "pods")
        nodes_rt = api.registry.lookup("", "v1", "nodes")
        assert pods_rt is not None and nodes_rt is not None
        self._pods_rt, self._nodes_rt = pods_rt, nodes_rt
        self._pods, self._nodes = api.store(pods_rt), api.store(nodes_rt)
        self._recorder = PodEvents(api)
        self.configure()
        self._task: asyncio.Task[None] | None = None
        self._futs: list[asyncio.Future[None]] = []
        self._stepped = asyncio.Event()  # set after each step of the loop, and at its end
        self._pod_seq = self._node_seq = 0
        self._node_ip: dict[str, str] = {}  # every known node -> its InternalIP
        self._ready: list[str] = []  # the Ready, schedulable nodes, in round-robin order
        self._rr = self._next_node = 0
        # pending work, keys "namespace/name": pods to bind, to start, to finish deleting
        self._unbound: OrderedDict[str, None] = OrderedDict()
        self._starting, self._deleting = Timers(), Timers()
        self._bound = self._started = self._deleted = 0
        self._statuses = PodStatuses()
        self._next_heartbeat = 0.0
        self.heartbeats = 0

    def configure(
        self,
        *,
        schedule_rate: float = 200.0,
        start_delay: float = 1.0,
        start_rate: float = 200.0,
        node_prefix: str = "node-",
        delete_grace_cap: float = 1.0,
        events: bool = True,
    ) -> None:
        """Set the binds and starts per second (> 0), the seconds from bind to Running,
        the node name prefix, the longest wait of a graceful deletion and whether the
        scheduler and kubelets write Events. Effective at once."""
        for rate in (schedule_rate, start_rate):
            if not (rate > 0 and math.isfinite(rate)):
                raise ValueError(f"rates must be positive and finite, not {rate!r}")
        self._binds, self._starts = (
            TokenBucket(float(schedule_rate)),
            TokenBucket(float(start_rate)),
        )
        self.start_delay = max(0.0, float(start_delay))
        self.node_prefix = node_prefix
        self.delete_grace_cap = max(0.0, float(delete_grace_cap))
        self.events = bool(events)

    # -- nodes -----------------------------------------------------------------------------

    def add_nodes(self, n: int) -> list[str]:
        """Create ``n`` Ready nodes named ``{node_prefix}{i}``, numbering on from the last
        call (from 0; names taken already are skipped); returns their names."""
        names: list[str] = []
        while len(names) < n:
            i, self._next_node = self._next_node, self._next_node + 1
            name, ip = f"{self.node_prefix}{i}", f"10.0.{i // 250 % 256}.{i % 250 + 2}"
            body = node_body(name, ip)
            try:
                self._api.create(self._nodes_rt, None, body, manager="kubelet", keep_status=True)
            except KubeSimApiError as exc:
                if exc.code != 409:
                    raise
                continue
            self._set_node(name, ip, True)
            names.append(name)
        return names

    def remove_node(self, name: str) -> None:
        """Delete the Node ``name``; its pods are force-deleted as the pod GC would."""
        try:
            self._api.delete(self._nodes_rt, None, name)
        except KubeSimApiError as exc:
            if exc.code != 404:
                raise
        self._drop_node(name)

    def _set_node(self, name: str, ip: str, schedulable: bool) -> None:
        self._node_ip[name] = ip
        if schedulable and name not in self._ready:
            self._ready.append(name)
        elif not schedulable and name in self._ready:
            self._ready.remove(name)

    def _drop_node(self, name: str) -> None:
        self._node_ip.pop(name, None)
        if name in self._ready:
            self._ready.remove(name)
        objs = self._pods.objects.values()
        for key in [s.key for s in objs if s.fields.get("spec.nodeName") == name]:
            self._forget(key)
            self._deleted += self._force_delete(key)

    def _observe_node(self, name: str, stored: Stored | None) -> None:
        if stored is None:
            if name in self._node_ip:
                self._drop_node(name)
            return
        obj = stored.decode()
        status = obj.get("status") or {}
        conds = status.get("conditions") or ()
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
        addrs = status.get("addresses") or ()
        ips = [a.get("address", "") for a in addrs if a.get("type") == "InternalIP"]
        schedulable = ready and not (obj.get("spec") or {}).get("unschedulable")
        self._set_node(name, ips[0] if ips else "", schedulable)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the emulation as one task of the running loop (no-op if running)."""
        if self._task is not None and not self._task.done():
            return
        self._resync_nodes()
        self._resync_pods()
        self._stepped = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="kubesim-cluster")
        self._task.add_done_callback(lambda _: self._stepped.set())

    async def stop(self) -> None:
        """Cancel the task and wait for it to end. Idempotent; fine if never started."""
        task, self._task = self._task, None
        for fut in self._futs:
            fut.cancel()
        self._futs = []
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
            if not task.cancelled() and task.exception() is not None:
                log.error("the cluster emulation had failed", exc_info=task.exception())

    async def idle(self) -> None:
        """Return once nothing is pending: every pod event seen, no unbound pod while a
        Ready node exists, no pod waiting to start, no graceful deletion waiting. Returns
        at once when the emulation is not running; raises what made it fail."""
        while (task := self._task) is not None and not task.done() and self._busy():
            self._stepped.clear()
            await self._stepped.wait()
        if task is not None and task.done():
            task.result()

    def _busy(self) -> bool:
        if self._pods.next_seq != self._pod_seq or self._nodes.next_seq != self._node_seq:
            return True  # writes not looked at yet
        return bool((self._unbound and self._ready) or self._starting.due or self._deleting.due)

    def stats(self) -> dict[str, int]:
        """Counts so far: ``bound``, ``started``, ``deleted`` (graceful deletions finished
        and pods of removed nodes), and what is pending (``unscheduled``, ``starting``,
        ``terminating``)."""
        return {
            "bound": self._bound,
            "started": self._started,
            "deleted": self._deleted,
            "unscheduled": len(self._unbound),
            "starting": len(self._starting.due),
            "terminating": len(self._deleting.due),
        }

    # -- the loop: learn what changed, act, sleep --------------------------------------------

    async def _run(self) -> None:
        while True:
            began = time.monotonic()
            self._catch_up()
            self._step(time.monotonic())
            self._catch_up()  # our own writes: they change nothing, but idle() counts them
            if not self._futs:  # woken by a pod or node write, or when work is due
                self._futs = [self._pods.changed(), self._nodes.changed()]
            for i, ts in enumerate((self._pods, self._nodes)):
                if self._futs[i].done():  # kept while pending: waiters would pile up
                    self._futs[i] = ts.changed()
            self._stepped.set()
            delay = self._next_delay(time.monotonic())
            await asyncio.wait(self._futs, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
            if (rest := began + TICK - time.monotonic()) > 0:
                await asyncio.sleep(rest)

    def _catch_up(self) -> None:
        node_events = self._nodes.events_since(self._node_seq)
        if node_events is None:
            self._resync_nodes()
        else:
            self._node_seq = self._nodes.next_seq
            for ev in node_events:
                self._observe_node(ev.key, None if ev.type == "DELETED" else ev.obj)
        pod_events = self._pods.events_since(self._pod_seq)
        if pod_events is None:
            self._resync_pods()
            return
        self._pod_seq = self._pods.next_seq
        for ev in pod_events:
            if ev.type == "DELETED":
                self._forget(ev.key)
            else:
                self._observe(ev.key, ev.obj)

    def _resync_nodes(self) -> None:
        self._node_seq = self._nodes.next_seq
        for name in [n for n in self._node_ip if n not in self._nodes.objects]:
            self._drop_node(name)
        for name, stored in list(self._nodes.objects.items()):
            self._observe_node(name, stored)

    def _resync_pods(self) -> None:
        """Rebuild the pending work from every pod (at start, and if history was lost)."""
        self._pod_seq = self._pods.next_seq
        objects = self._pods.objects
        self._unbound.clear()
        for timers in (self._starting, self._deleting):
            timers.due = {k: at for k, at in timers.due.items() if k in objects}
        for key, stored in objects.items():
            self._observe(key, stored)

    def _forget(self, key: str) -> None:
        self._unbound.pop(key, None)
        self._starting.due.pop(key, None)
        self._deleting.due.pop(key, None)

    def _observe(self, key: str, stored: Stored) -> None:
        """File a pod under the work its latest state calls for (cheap: no decoding)."""
        node = stored.fields.get("spec.nodeName", "")
        if b'"deletionTimestamp"' in stored.raw:
            self._unbound.pop(key, None)
            self._starting.due.pop(key, None)
            if node and key not in self._deleting.due:
                grace = stored.decode()["metadata"].get("deletionGracePeriodSeconds") or 0
                self._deleting.add(key, min(float(grace), self.delete_grace_cap))
        elif not node:
            if stored.fields.get("spec.schedulerName") in ("", "default-scheduler", None):
                self._unbound[key] = None
        else:
            self._unbound.pop(key, None)
            if stored.fields.get("status.phase", "") not in ("", "Pending"):
                self._starting.due.pop(key, None)
            elif node in self._node_ip and key not in self._starting.due:
                self._starting.add(key, self.start_delay)

    def _step(self, now: float) -> None:
        if now >= self._next_heartbeat:
            self._heartbeat()
            self._next_heartbeat = now + HEARTBEAT_INTERVAL
        self._binds.refill(now)
        self._starts.refill(now)
        for _ in range(_MAX_DELETES):
            if (due := self._deleting.head()) is None or due > now:
                break
            self._deleted += self._force_delete(self._deleting.pop())
        while self._starts.tokens >= 1 and (due := self._starting.head()) is not None:
            if due > now:
                break
            self._starts.tokens -= self._start(self._starting.pop())
        while self._ready and self._binds.tokens >= 1 and self._unbound:
            key = self._unbound.popitem(last=False)[0]
            node = self._ready[self._rr % len(self._ready)]
            self._rr += 1
            ns, name = key.split("/", 1)
            try:
                bound = bind(self._api, ns, name, node)
            except KubeSimApiError as exc:
                _skip(exc, key)
                continue
            if self.events:
                self._recorder.scheduled(bound.decode(), node)
            self._binds.tokens -= 1
            self._bound += 1
            self._starting.add(key, self.start_delay)

    def _next_delay(self, now: float) -> float | None:
        """Seconds until the next step has something to do (None: only a write can)."""
        delays: list[float] = []
        if self._unbound and self._ready:
            delays.append(self._binds.wait())
        if (start_due := self._starting.head()) is not None:
            delays.append(max(start_due - now, self._starts.wait()))
        if (delete_due := self._deleting.head()) is not None:
            delays.append(delete_due - now)
        if self._node_ip:
            delays.append(self._next_heartbeat - now)
        return max(0.0, min(delays)) if delays else None

    def _heartbeat(self) -> None:
        """Each kubelet renews its Lease in kube-node-lease (every 10 s, as kubelets do):
        the resourceVersion of a live cluster keeps moving, so watches get bookmarks."""
        rt = self._api.registry.lookup("coordination.k8s.io", "v1", "leases")
        if rt is None:
            return
        store = self._api.store(rt)
        for node in list(self._node_ip):
            spec = {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now_micro()}
            try:
                if store.get(f"kube-node-lease/{node}") is None:
                    body = {"metadata": {"name": node}, "spec": spec}
                    self._api.create(rt, "kube-node-lease", body, manager="kubelet")
                else:
                    self._api.patch(
                        rt,
                        "kube-node-lease",
                        node,
                        "application/merge-patch+json",
                        {"spec": spec},
                        manager="kubelet",
                    )
                self.heartbeats += 1
            except KubeSimApiError as exc:
                _skip(exc, f"kube-node-lease/{node}")

    # -- writes ----------------------------------------------------------------------------

    def _force_delete(self, key: str) -> bool:
        """DELETE with gracePeriodSeconds 0; whether the pod is gone (finalizers keep it)."""
        ns, name = key.split("/", 1)
        try:
            self._api.delete(self._pods_rt, ns, name, {"gracePeriodSeconds": 0})
        except KubeSimApiError as exc:
            _skip(exc, key)
            return False
        return self._pods.get(key) is None

    def _start(self, key: str) -> bool:
        """The kubelet's status patch that makes a bound, Pending pod Running."""
        ns, name = key.split("/", 1)
        try:
            obj = self._api.get(self._pods_rt, ns, name).decode()  # the kubelet's pod spec
            node = (obj.get("spec") or {}).get("nodeName")
            phase = (obj.get("status") or {}).get("phase", "Pending")
            if "deletionTimestamp" in obj["metadata"] or node not in self._node_ip:
                return False
            if phase != "Pending":
                return False
            patch = self._statuses.running(obj, self._node_ip[node])
            rt = self._pods_rt
            self._api.patch(
                rt, ns, name, STRATEGIC_PATCH, patch, subresource="status", manager="kubelet"
            )
        except KubeSimApiError as exc:
            _skip(exc, key)
            return False
        if self.events:
            self._recorder.started(obj, node, self.start_delay)
        self._started += 1
        return True


def _skip(exc: KubeSimApiError, key: str) -> None:
    """A pod that went away or changed under us is skipped; anything else is logged."""
    if exc.code in (404, 409):
        log.debug("skipping pod %s: %s", key, exc)
    else:
        log.warning("cluster emulation: a write to pod %s failed: %s", key, exc)

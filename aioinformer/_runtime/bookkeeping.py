"""The write hook of a manager's client: fencing, expectations and read-your-writes, kept by
every write a reconcile makes, so that none can be forgotten.

Installed on :attr:`aioinformer.Manager.client`. For a write made inside a reconcile
(:data:`~aioinformer._runtime.context.current`), against the running controller and key:

* **Fencing.** Right before the request is sent, the replica must still hold the key (its
  leader Lease, or the key's shard, renewed within ``renew_deadline`` by the local clock):
  otherwise :class:`~aioinformer.NotOwner` is raised and nothing is sent. A replica that
  lost its Lease, was frozen past it or is handing a shard over cannot write.
* **Expectations.** A create of an object the primary controls (a controller
  ownerReference to it), of a resource the controller ``owns``, raises the key's expected
  creations before it is sent, and lowers them again if the server refused it; a delete of
  such an object expects its deletion (client-go's ControllerExpectations): until the
  owned informers saw them, the key is not reconciled again.
* **Read-your-writes.** Once the server accepted a write, every informer of the manager
  that will see the object (same resource, its namespace or all namespaces, no selectors)
  has the object's new resourceVersion recorded against the key (the next reconcile of the
  key waits until they saw it), and the write returns only when they did, bounded by the
  controller's ``freshness_timeout`` (then it returns anyway; the next reconcile still
  waits): a reconcile that writes and then reads the cache sees its own write. A delete
  that removed the object at once returns when those informers no longer hold it.

A write made outside any reconcile passes through untouched. Controllers built with
``freshness=False`` / ``expectations=False`` skip that part (the demo's unprotected
operators).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from aioinformer._cache.informer import Informer
from aioinformer._client.client import WriteRequest
from aioinformer._core.errors import AlreadyExists, ClosedError, FreshnessTimeout, NotOwner
from aioinformer._core.objects import KubeObject
from aioinformer._runtime import context

__all__ = ["ControllerWrites"]

log = logging.getLogger("aioinformer.controller")


@dataclass(slots=True)
class _Booked:
    """What ``before`` raised for one write, for ``after``/``failed`` to settle."""

    running: context.Reconciling
    creation: bool = False
    deletion: str | None = None


class ControllerWrites:
    """The :class:`~aioinformer._client.client.WriteHook` of a manager's client (see the
    module docstring). ``informers`` gives the manager's informers at the time of a write."""

    def __init__(self, informers: Callable[[], Iterable[Informer]]) -> None:
        self._informers = informers

    async def before(self, request: WriteRequest) -> object:
        running = context.current.get()
        if running is None:
            return None
        ctl, key = running.controller, running.key
        if not ctl.may_act(key):
            raise NotOwner(
                f"{ctl.name}: not sending {request.verb} {request.resource.qualified} "
                f"{request.name or ''!s}: this replica no longer holds {key}",
                key,
            )
        booked = _Booked(running)
        if ctl.use_expectations and ctl.owns_resource(request.resource, request.namespace):
            if request.verb == "create" and ctl.controls(request.controller_refs, key):
                ctl.expectations.expect_creations(key, 1)
                booked.creation = True
            elif request.verb == "delete" and request.name:
                ns, name = request.namespace, request.name
                dependent = f"{ns}/{name}" if ns else name
                if ctl.is_dependent(dependent, key):
                    ctl.expectations.expect_deletions(key, [dependent])
                    booked.deletion = dependent
        return booked

    async def after(self, request: WriteRequest, result: KubeObject | None, token: object) -> None:
        if not isinstance(token, _Booked):
            return
        ctl, key = token.running.controller, token.running.key
        if not ctl.freshness:
            return
        namespace = result.namespace if result is not None else (request.namespace or "")
        watching = [inf for inf in self._informers() if _sees(inf, request, namespace)]
        try:
            if result is None:  # deleted at once: its deletion's RV is not known, its absence is
                dependent = f"{namespace}/{request.name}" if namespace else str(request.name)
                for inf in watching:
                    await inf.wait_gone(dependent, request.uid, timeout=ctl.freshness_timeout)
                return
            for inf in watching:
                ctl.record_write(key, inf, result.rv)
            for inf in watching:
                await inf.wait_fresh(result.rv, timeout=ctl.freshness_timeout)
        except (FreshnessTimeout, ClosedError) as exc:
            log.debug("%s: %s: the cache has not seen the write yet: %s", ctl.name, key, exc)

    def failed(self, request: WriteRequest, error: BaseException, token: object) -> None:
        if not isinstance(token, _Booked):
            return
        ctl, key = token.running.controller, token.running.key
        if token.creation:  # never created (an AlreadyExists was not ours either)
            ctl.expectations.creation_observed(key)
        if token.deletion is not None:
            ctl.expectations.deletion_observed(key, token.deletion)
        if isinstance(error, AlreadyExists):
            log.info("%s: %s: %s exists already", ctl.name, key, request.name)


def _sees(inf: Informer, request: WriteRequest, namespace: str) -> bool:
    """Whether ``inf`` follows the object ``request`` wrote (in ``namespace``)."""
    res = request.resource
    if (inf.group, inf.version, inf.plural) != (res.group, res.version, res.plural):
        return False
    if inf.selective:
        return False
    return inf.namespace is None or inf.namespace == namespace

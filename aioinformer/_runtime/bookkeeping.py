"""The write hook of a manager's client: fencing, expectations and read-your-writes, kept by
every write a reconcile makes, so that none can be forgotten.

Installed on :attr:`aioinformer.Manager.client`. For a write made inside a reconcile
(:data:`~aioinformer._runtime.context.current`), against the running controller and key:

* **Fencing.** When the write is built, and again right before its first byte goes out to
  the connection (no await in between), the replica must still hold the key (its leader
  Lease, or the key's shard, renewed within ``renew_deadline`` by the local clock):
  otherwise :class:`~aioinformer.NotOwner` is raised and nothing is sent. A replica that
  lost its Lease, was frozen past it (even between the two checks) or is handing a shard
  over cannot write.
* **Expectations.** A create of an object the primary controls (a controller
  ownerReference to it), that an informer the controller ``owns`` will see (its resource,
  namespace and label selector), raises the key's expected creations before it is sent,
  and lowers them again if the server refused it, or if the object was deleted before any
  owned informer saw it (found gone once they caught up with its creation); a delete of
  such an object, cached by an owned informer of its resource, expects its deletion
  (client-go's ControllerExpectations): until the owned informers saw them, the key is not
  reconciled again. A delete answered NotFound keeps its expectation too: the object is
  gone, and the informers will see it go.
* **Unknown outcomes.** A write that was sent and got no usable answer (connection cut,
  answer lost, timeout, cancelled in flight, a gateway's 502/504, a server Timeout, a 2xx
  that is not the object written), or whose answer came to a resend of it (aiohttp resends
  a PUT or DELETE once when the connection closed: a 409 Conflict or 404 then may answer
  the first attempt's own effect), may have been applied: it is *maybe done*, never "not
  done". Its expectations stay, and before the key is reconciled again what the server
  holds under its name is learned (:mod:`~aioinformer._runtime.outcomes`).
* **Read-your-writes.** Once the server accepted a write, every informer of the manager
  that will see the object (same resource, its namespace or all namespaces, a label
  selector that matches the object as written, no field selector) has the object's new
  resourceVersion recorded against the key (the next reconcile of the key waits until
  they saw it), and the write returns only when they did, bounded by the controller's
  ``freshness_timeout`` (then it returns anyway; the next reconcile still waits): a
  reconcile that writes and then reads the cache sees its own write. A delete that removed
  the object at once returns when those informers no longer hold it.

A write made outside any reconcile passes through untouched. Controllers built with
``freshness=False`` / ``expectations=False`` skip that part (the demo's unprotected
operators).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from aioinformer._cache.informer import Informer
from aioinformer._client.client import WriteRequest
from aioinformer._client.rest import RestClient
from aioinformer._core import logs
from aioinformer._core.errors import (
    AlreadyExists,
    ClosedError,
    FreshnessTimeout,
    NotFound,
    NotOwner,
)
from aioinformer._core.objects import KubeObject
from aioinformer._runtime import context
from aioinformer._runtime.outcomes import Settlement, outcome_unknown

__all__ = ["ControllerWrites"]

log = logs.logger("aioinformer.controller")


@dataclass(slots=True)
class _Booked:
    """What ``before`` raised for one write, for ``after``/``failed`` to settle."""

    running: context.Reconciling
    creation: bool = False
    deletion: str | None = None
    sent: bool = False
    """``check`` let it go: its first byte may have reached the server."""
    resent: bool = False
    """``check`` ran again: the HTTP client resent it (aiohttp resends a PUT or DELETE
    once when the connection closed without an answer), so the answer that came is the
    resent request's, and what the first one did is not known."""


class ControllerWrites:
    """The :class:`~aioinformer._client.client.WriteHook` of a manager's client (see the
    module docstring). ``informers`` gives the manager's informers at the time of a write;
    ``rest`` reads what a write whose outcome is unknown did."""

    def __init__(self, informers: Callable[[], Iterable[Informer]], rest: RestClient) -> None:
        self._informers = informers
        self._rest = rest

    async def before(self, request: WriteRequest) -> object:
        running = context.current.get()
        if running is None:
            return None
        _fence(running, request)
        ctl, key = running.controller, running.key
        booked = _Booked(running)
        if ctl.options.expectations and request.verb == "create":
            labels = _labels(request.body)
            if ctl.owns_resource(request.resource, request.namespace, labels) and ctl.controls(
                request.controller_refs, key
            ):
                ctl.expectations.expect_creations(key, 1)
                booked.creation = True
        elif ctl.options.expectations and request.verb == "delete" and request.name:
            ns, name = request.namespace, request.name
            dependent = f"{ns}/{name}" if ns else name
            if ctl.is_dependent(dependent, key, request.resource):
                ctl.expectations.expect_deletions(key, [dependent])
                booked.deletion = dependent
        return booked

    def check(self, request: WriteRequest, token: object) -> None:
        if isinstance(token, _Booked):
            token.resent = token.sent
            _fence(token.running, request)
            token.sent = True

    async def after(self, request: WriteRequest, result: KubeObject | None, token: object) -> None:
        if not isinstance(token, _Booked):
            return
        ctl, key = token.running.controller, token.running.key
        if not _answers(request, result):
            log.warning("%s: %s: the server answered %s %s to a %s of %s %s: its outcome is not "
                        "known", ctl.name, key, result.kind if result else "a Status",
                        result.key if result else "", request.verb,
                        request.resource.qualified, request.name)  # fmt: skip
            self._unsettled(request, token)
            return
        if not ctl.options.freshness:
            return
        namespace = result.namespace if result is not None else (request.namespace or "")
        written = f"{namespace}/{request.name}" if namespace else str(request.name)
        watching = [i for i in self._informers() if _sees(i, request, result, written)]
        try:
            if result is None:  # deleted at once: its deletion's RV is not known, its absence is
                for inf in watching:
                    await inf.wait_gone(written, request.uid, timeout=ctl.options.freshness_timeout)
                return
            for inf in watching:
                ctl.record_write(key, inf, result.rv)
            for inf in watching:
                await inf.wait_fresh(result.rv, timeout=ctl.options.freshness_timeout)
        except (FreshnessTimeout, ClosedError) as exc:
            log.debug("%s: %s: the cache has not seen the write yet: %s", ctl.name, key, exc)
            return
        if (
            token.creation
            and result.uid
            and watching
            and not any(_holds(i, written, result.uid) for i in watching)
        ):
            # caught up with the creation, and the object is not there: deleted before any
            # owned informer saw it (e.g. across a relist), so none will
            ctl.expectations.creation_observed(key, result.uid)

    def failed(self, request: WriteRequest, error: BaseException, token: object) -> None:
        if not isinstance(token, _Booked):
            return
        ctl, key = token.running.controller, token.running.key
        if token.sent and (token.resent or outcome_unknown(error)):
            log.warning("%s: %s: %s %s %s: %s; it may have been done: what it did is read "
                        "before %s is reconciled again", ctl.name, key, request.verb,
                        request.resource.qualified, request.name or "(generateName)",
                        type(error).__name__, key)  # fmt: skip
            self._unsettled(request, token)
            return
        if token.creation:  # never created (an AlreadyExists was not ours either)
            ctl.expectations.creation_observed(key)
        if token.deletion is not None and not isinstance(error, NotFound):
            ctl.expectations.deletion_observed(key, token.deletion)  # (NotFound: gone)
        if isinstance(error, AlreadyExists):
            log.info("%s: %s: %s exists already", ctl.name, key, request.name)

    def _unsettled(self, request: WriteRequest, token: _Booked) -> None:
        """Keep the write's expectations; learn what it did before the next reconcile."""
        ctl = token.running.controller
        if not (ctl.options.expectations or ctl.options.freshness):
            return
        settlement = Settlement(
            request, ctl, token.running.key, self._rest, self._informers, _sees,
            creation=token.creation, deletion=token.deletion,
        )  # fmt: skip
        ctl.settle_first(token.running.key, settlement)


def _fence(running: context.Reconciling, request: WriteRequest) -> None:
    """:class:`~aioinformer.NotOwner` unless this replica holds the running reconcile's key."""
    ctl, key = running.controller, running.key
    if not ctl.may_act(key):
        raise NotOwner(
            f"{ctl.name}: not sending {request.verb} {request.resource.qualified} "
            f"{request.name or ''!s}: this replica no longer holds {key}",
            key,
        )


def _answers(request: WriteRequest, result: KubeObject | None) -> bool:
    """Whether ``result`` is the object ``request`` wrote (its namespace, name, and kind
    unless a subresource other than status answered), or a Status for a delete."""
    if result is None:
        return request.verb == "delete"
    if (result.namespace or None) != request.namespace:
        return False
    if request.name is not None and result.name != request.name:
        return False
    if request.subresource in (None, "status") and result.kind != request.resource.kind:
        return False
    return True


def _holds(inf: Informer, key: str, uid: str) -> bool:
    """Whether ``inf`` caches the object ``key`` with ``uid`` now."""
    obj = inf.snapshot().get(key)
    return obj is not None and obj.uid == uid


def _sees(inf: Informer, request: WriteRequest, result: KubeObject | None, key: str) -> bool:
    """Whether ``inf`` follows the object ``key`` that ``request`` wrote: the object as the
    server answered (``result``) is one it caches (namespace, label selector); an object
    deleted at once (None) is followed by the informers that hold it, or would."""
    res = request.resource
    if (inf.group, inf.version, inf.plural) != (res.group, res.version, res.plural):
        return False
    namespace = key.rpartition("/")[0]
    if result is None:
        return inf.follows(namespace, None) or inf.snapshot().get(key) is not None
    return inf.follows(namespace, result.labels, result.uid)


def _labels(body: object) -> Mapping[str, str] | None:
    """The labels of an object body (None when it is not one)."""
    meta = body.get("metadata") if isinstance(body, Mapping) else None
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else ({} if isinstance(meta, Mapping) else None)

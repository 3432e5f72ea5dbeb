"""Writes whose outcome is unknown: "maybe done", never "not done".

A write that was sent and got no usable answer (the connection was cut after the request
went out, the answer was lost or timed out, the reconcile was cancelled while it was in
flight, a gateway answered 502/504, the server answered Timeout, or a 2xx whose body could
not be read), or whose answer came to a resend of it (aiohttp resends a PUT or DELETE once
when its connection closed without an answer: the resend's 409 Conflict or 404 may be the
first attempt's own doing) may have been applied. Treating it as a failure is how a
controller creates a second pod for one owner: the next reconcile, on a cache that does not
show the first one yet, creates again. So, as client-go's controllers do for a server Timeout (the
ReplicaSet controller keeps the expectation of a create that timed out: "the informer will
observe the creation"):

* a create keeps its expectation until an owned informer shows the object (or the
  expectation's ttl passes), and a delete keeps its expectation until the informers saw
  the object go;
* what the server holds under the write's name is then learned (:class:`Settlement`: a GET
  of that name) before the key is reconciled again: a create found missing (or held by an
  object the owner does not control) was not done and its expectation is lowered; a
  delete that finds the same object still there and not being deleted was not done; then
  the informers that follow the object must have seen it as found (its resourceVersion),
  or gone from them and at the resourceVersion of a consistent read of the collection
  made after the GET, if it was not found (bounded by ``freshness_timeout`` per try), so the
  next reconcile never reads a cache older than what the lost write may have done (an
  update, a status write, a finalizer removal that let the object go).

A create by ``generateName`` has no name to look up: its expectation stays until an owned
informer shows a new object of that owner, or the ttl. A write whose request was never sent
(the connection failed before its first byte, or the fence refused it), or that the server
refused with a definite answer (4xx; 500 InternalError: admission webhooks refuse with it)
was not done.

Bound: while the server does not tell (the reads fail too), the key is requeued with backoff
and not reconciled, for at most ``expectations_ttl`` seconds (default 300, client-go's
expectations TTL) plus one backoff; then it is reconciled anyway, with a WARNING, as a lost
expectation is: a server that never answers stalls that key, not the controller.

Limit: a request the server is still processing when the GET comes (a server slower than
the connection that broke) can land after the GET said "not there"; for a named create that
lands later, the name is then taken and a second create of it is refused (AlreadyExists),
so no object is made twice by this.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aioinformer._cache.informer import Informer
from aioinformer._client.client import WriteRequest
from aioinformer._client.rest import Request, RestClient
from aioinformer._core import logs
from aioinformer._core.errors import (
    AioinformerError,
    DecodeError,
    FreshnessTimeout,
    NotFound,
    ServerTimeout,
    StatusError,
    TransportError,
)
from aioinformer._core.objects import KubeObject, decode_object, parse_resource_version
from aioinformer._runtime.catchup import caught_up

if TYPE_CHECKING:
    from aioinformer._runtime.controller import Controller

__all__ = ["Settlement", "outcome_unknown"]

log = logs.logger("aioinformer.controller")

_GATEWAY = (502, 504)


def outcome_unknown(error: BaseException) -> bool:
    """Whether a write that was *sent* and failed with ``error`` may have been applied
    (see the module docstring)."""
    if isinstance(error, TransportError | DecodeError | asyncio.CancelledError | TimeoutError):
        return True
    return isinstance(error, StatusError) and (
        isinstance(error, ServerTimeout)
        or error.code in _GATEWAY
        or error.reason in ("Timeout", "ServerTimeout")
    )


@dataclass(slots=True)
class Settlement:
    """Learns what a write whose outcome is unknown did (see the module docstring):
    ``await settlement()`` is True once settled, False to try again later (the server did
    not answer, or the caches have not caught up yet)."""

    request: WriteRequest
    controller: Controller
    key: str
    """The primary key whose reconcile made the write."""
    rest: RestClient
    informers: Callable[[], Iterable[Informer]]
    sees: Callable[[Informer, WriteRequest, KubeObject | None, str], bool]
    """Whether an informer follows the object written (bookkeeping's rule)."""
    creation: bool = False
    """The write raised an expected creation of ``key``."""
    deletion: str | None = None
    """The write raised an expected deletion of that dependent of ``key``."""
    _learned: bool = field(default=False, init=False)
    _gone: list[Informer] = field(default_factory=list, init=False)
    _fresh: list[tuple[Informer, int]] = field(default_factory=list, init=False)
    _absent_at: int | None = field(default=None, init=False)
    """When the object was not found: the collection's resourceVersion read after (a
    delete's, or a create's and then a delete's, resourceVersions are at most this)."""

    @property
    def written(self) -> str:
        """The key of the object written ("ns/name", or "name")."""
        ns, name = self.request.namespace, self.request.name
        return f"{ns}/{name}" if ns else str(name)

    async def __call__(self) -> bool:
        if not self._learned:
            try:
                if self.request.name is None:  # generateName: nothing to look up by name
                    self._learn_unnamed(await self._collection_version())
                    self._learned = True
                    return await self._caught_up()
                found = await self._read()
            except AioinformerError as exc:
                log.info("%s: %s: what %s did is not known yet: %s", self.controller.name,
                         self.key, self.written, exc)  # fmt: skip
                return False
            self._learn(found)
            self._learned = True
        return await self._caught_up()

    async def _caught_up(self) -> bool:
        timeout = self.controller.options.freshness_timeout
        try:
            for inf in list(self._gone):
                await inf.wait_gone(self.written, None, timeout=timeout)
                self._gone.remove(inf)
            for inf, rv in list(self._fresh):
                if rv == self._absent_at:  # a collection's RV: a quiet resource never gets
                    if not await caught_up(inf, rv, self.rest, timeout):  # there by itself
                        return False
                else:
                    await inf.wait_fresh(rv, timeout=timeout)
                self._fresh.remove((inf, rv))
        except FreshnessTimeout:
            return False
        return True

    def _learn(self, found: KubeObject | None) -> None:
        ctl, key = self.controller, self.key
        if self.creation and (found is None or ctl.owner_of(found) != key):
            ctl.expectations.creation_observed(key)  # not created
        if self.deletion is not None and found is not None and found.deletion_timestamp is None:
            if self.request.uid is None or found.uid == self.request.uid:
                ctl.expectations.deletion_observed(key, self.deletion)  # not deleted
        if not ctl.options.freshness:
            return
        watching = [i for i in self.informers() if self.sees(i, self.request, found, self.written)]
        if found is None:
            self._gone = watching  # they must not show it any more
            if self._absent_at is not None:  # nor be older than what made it so
                self._fresh = [(inf, self._absent_at) for inf in watching]
        else:
            self._fresh = [(inf, found.rv) for inf in watching]  # they must see this state

    def _learn_unnamed(self, rv: int) -> None:
        """A ``generateName`` create: its expectation stays (an owned informer shows the
        new object, or the ttl); the informers that would cache it must reach the
        collection's resourceVersion read after it (at least the create's, if it was
        made), so the next reconcile's caches are not older than it."""
        self._absent_at = rv
        if not self.controller.options.freshness:
            return
        res, ns = self.request.resource, self.request.namespace or ""
        labels = _body_labels(self.request.body)
        self._fresh = [
            (inf, rv)
            for inf in self.informers()
            if (inf.group, inf.version, inf.plural) == (res.group, res.version, res.plural)
            and inf.follows(ns, labels)
        ]

    async def _read(self) -> KubeObject | None:
        """The object under the write's name on the server (None: not there)."""
        res, ns, name = self.request.resource, self.request.namespace, self.request.name
        about = Request("get", res.qualified, ns, name)
        try:
            answer = await self.rest.request("GET", res.path(ns, name), about)
        except NotFound:
            self._absent_at = await self._collection_version()
            return None
        obj = decode_object(answer.body)
        if (obj.name, obj.namespace or None) != (name, ns) or obj.kind != res.kind:
            raise DecodeError(
                f"{about.where()}: the server answered {obj.kind} {obj.key}, not that object"
            )
        return obj

    async def _collection_version(self) -> int:
        """The resourceVersion of a consistent (quorum) read of the written object's
        collection, made now: one item at most, selected by the name, so it costs what a
        GET does. A lost delete's resourceVersion (and a lost create's before it) is at
        most this: an informer that reached it shows their effects."""
        res, ns, name = self.request.resource, self.request.namespace, self.request.name
        about = Request("list", res.qualified, ns, None)
        query = [("limit", "1")]
        if name is not None:
            query.append(("fieldSelector", f"metadata.name={name}"))
        data = await self.rest.request_json("GET", res.path(ns), about, query=query)
        meta = data.get("metadata")
        rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if not isinstance(rv, str):
            raise DecodeError(f"{about.where()}: the list has no resourceVersion")
        return parse_resource_version(rv)


def _body_labels(body: object) -> Mapping[str, str]:
    """The labels of a request body (none when it has none)."""
    meta = body.get("metadata") if isinstance(body, Mapping) else None
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}

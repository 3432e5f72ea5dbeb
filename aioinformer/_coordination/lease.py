"""Leases (``coordination.k8s.io/v1``): the records leader election and sharding keep.

:class:`LeaseClient` reads and writes the Leases of one namespace through the client layer
(:class:`~aioinformer._client.rest.RestClient`): objects are plain dicts as the server sent
them, errors the error tree's (a lost race is :class:`~aioinformer.Conflict` or
:class:`~aioinformer.AlreadyExists`). :class:`LeaseRecord` is the election record in a Lease's
spec (client-go's LeaderElectionRecord); times are MicroTime (:func:`micro_time`).

Every answer is checked to be the Lease asked for before anything is decided on it: a 2xx
whose body is not a ``coordination.k8s.io/v1`` Lease of that name in this namespace with a
resourceVersion (a proxy's page, another object, a misrouted request) is a
:class:`~aioinformer.TransportError`, and so is the answer to a write that does not carry
what was written (its holder, renew time and instance) under a new resourceVersion: a
renewal counts only when the server stored it.

The holder's *instance* (:data:`INSTANCE_ANNOTATION`) tells apart two candidates that use
the same identity: each elector or shard manager writes a token of its own next to its
``holderIdentity``, so a Lease naming this identity but another instance is another
candidate's (a duplicate, or this identity's previous process), never this one's.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from aioinformer._client.rest import ApiClientLike, Request, RestClient
from aioinformer._core.errors import Conflict, NotFound, TransportError

__all__ = [
    "INSTANCE_ANNOTATION",
    "Absence",
    "LeaseClient",
    "LeaseRecord",
    "micro_time",
    "new_instance",
]

_RESOURCE = "leases.coordination.k8s.io"
_API_VERSION = "coordination.k8s.io/v1"
INSTANCE_ANNOTATION = "coordination.aioinformer.dev/instance"
"""The annotation a Lease's holder writes its instance token in (see the module docstring)."""


def new_instance() -> str:
    """A fresh instance token: unique to one elector or shard manager object."""
    return secrets.token_hex(8)


def micro_time() -> str:
    """Now as a metav1.MicroTime: RFC 3339, exactly 6 fractional digits, ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The election record a Lease's spec carries (client-go's LeaderElectionRecord)."""

    holder: str
    """``holderIdentity``; empty when released."""
    duration_s: int
    """``leaseDurationSeconds``: how long others wait after observing a change."""
    acquire_time: str | None
    """``acquireTime`` (MicroTime) of the current holder."""
    renew_time: str | None
    """``renewTime`` (MicroTime) of the last write."""
    transitions: int
    """``leaseTransitions``: how many times the lease changed hands."""
    instance: str = ""
    """The holder's instance token (:data:`INSTANCE_ANNOTATION`; empty when not written,
    e.g. by client-go)."""

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaseRecord:
        """The record in a Lease object (missing fields read as empty/zero)."""
        spec = lease.get("spec") or {}
        annotations = (lease.get("metadata") or {}).get("annotations") or {}
        return cls(
            holder=spec.get("holderIdentity") or "",
            duration_s=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
            instance=str(annotations.get(INSTANCE_ANNOTATION) or ""),
        )

    def held_by(self, identity: str, instance: str) -> bool:
        """Whether this record names that candidate: its identity *and* its instance."""
        return self.holder == identity and self.instance == instance

    def to_spec(self) -> dict[str, Any]:
        """The Lease ``spec`` for this record."""
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration_s,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


@dataclass(slots=True)
class Absence:
    """How long one candidate has seen a Lease missing, by its own clock.

    A deleted Lease says nothing about who holds it: its holder may count on it until its
    next renewal finds it gone (and creates it again). So a candidate that does not hold it
    may create a missing Lease only once it has seen it missing for ``duration`` seconds
    (:meth:`long_enough`), looking at least every ``max_gap`` seconds: a longer gap between
    two looks (the process was paused, its requests stalled) starts the count again, since
    the Lease may have been created, held and deleted again meanwhile. (What a count
    cannot see, a Lease created and deleted again between two looks, the creator's wait
    covers: it leads only ``renew_deadline`` after its create.)
    """

    duration: float
    """Seconds the Lease must be seen missing (the Lease duration)."""
    max_gap: float
    """Seconds between two looks beyond which the count starts again."""
    since: float | None = None
    """clock() when the answer that started the count came (None: not seen missing)."""
    last_sent: float = -math.inf
    """clock() when the last request that found it missing was sent."""

    def missing(self, sent: float, answered: float) -> None:
        """A request sent at ``sent`` found the Lease missing; its answer came at
        ``answered`` (the Lease was missing at some instant in between)."""
        if self.since is None or answered - self.last_sent > self.max_gap:
            self.since = answered
        self.last_sent = sent

    def present(self) -> None:
        """The Lease was seen (the count ends)."""
        self.since = None
        self.last_sent = -math.inf

    def long_enough(self) -> bool:
        """Whether it has been seen missing for ``duration`` seconds without a gap, up to
        the last request that found it missing."""
        return self.since is not None and self.last_sent - self.since >= self.duration


class LeaseClient:
    """Lease get/create/update/list/release/delete in one namespace.

    ``client`` is a :class:`~aioinformer._client.rest.RestClient` or a kubernetes_asyncio
    ``ApiClient``. A non-2xx answer raises the error tree's class (``get`` returns None for
    a missing Lease); a 2xx that is not the Lease asked for (or, for a write, not the
    Lease as written) raises :class:`~aioinformer.TransportError` (see the module
    docstring).
    """

    def __init__(self, client: RestClient | ApiClientLike, namespace: str) -> None:
        self.rest = client if isinstance(client, RestClient) else RestClient(client)
        self.namespace = namespace
        """The namespace every call goes to."""
        self._base = f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace, safe='')}/leases"

    def _about(self, verb: str, name: str | None = None) -> Request:
        return Request(verb, _RESOURCE, self.namespace, name)

    async def get(self, name: str) -> dict[str, Any] | None:
        """The Lease, or None when it does not exist."""
        about = self._about("get", name)
        try:
            body = await self.rest.request_json(
                "GET", f"{self._base}/{quote(name, safe='')}", about
            )
        except NotFound:
            return None
        return self._checked(body, about)

    async def list(self) -> list[dict[str, Any]]:
        """Every Lease in the namespace."""
        about = self._about("list")
        body = await self.rest.request_json("GET", self._base, about)
        items = body.get("items")
        if (
            body.get("kind") != "LeaseList"
            or body.get("apiVersion") != _API_VERSION
            or not isinstance(items, list)
        ):
            raise self._wrong(about, f"a {_kind(body)}, not a LeaseList")
        # (a list's items carry no kind or apiVersion of their own: the list's say it)
        lease = {"apiVersion": _API_VERSION, "kind": "Lease"}
        return [self._checked({**lease, **item} if isinstance(item, dict) else item, about)
                for item in items]  # fmt: skip

    async def create(self, name: str, record: LeaseRecord) -> dict[str, Any]:
        """Create the Lease with ``record``; :class:`~aioinformer.AlreadyExists` if it
        exists."""
        body = {
            "apiVersion": _API_VERSION,
            "kind": "Lease",
            "metadata": _with_instance({"name": name, "namespace": self.namespace}, record),
            "spec": record.to_spec(),
        }
        about = self._about("create", name)
        answer = await self.rest.request_json("POST", self._base, about, body=body)
        return self._stored(answer, about, record, None)

    async def update(self, lease: dict[str, Any], record: LeaseRecord) -> dict[str, Any]:
        """Replace ``lease``'s spec with ``record``, conditional on its resourceVersion
        (:class:`~aioinformer.Conflict` if it changed)."""
        body = {**lease, "apiVersion": _API_VERSION, "kind": "Lease"}
        body["metadata"] = _with_instance(dict(lease["metadata"]), record)
        body["spec"] = {**(lease.get("spec") or {}), **record.to_spec()}
        name = lease["metadata"]["name"]
        about = self._about("update", name)
        answer = await self.rest.request_json(
            "PUT", f"{self._base}/{quote(name, safe='')}", about, body=body
        )
        return self._stored(answer, about, record, lease)

    async def release(
        self,
        name: str,
        lease: dict[str, Any] | None,
        identity: str,
        instance: str,
        *,
        retry: bool = True,
    ) -> LeaseRecord:
        """Release the hold of ``identity``'s ``instance``: ``holderIdentity: ""``,
        ``leaseDurationSeconds: 1``, conditional on the resourceVersion of ``lease`` (read
        first when None). On a conflict (a reply lost to cancellation leaves ``lease``
        stale) it re-reads once (``retry``) and releases only if that instance still holds
        it. Returns the record now stored."""
        if lease is None:
            lease = await self.get(name)
        current = LeaseRecord.from_lease(lease or {})
        if lease is None or not current.held_by(identity, instance):
            return current
        now = micro_time()
        record = LeaseRecord("", 1, now, now, current.transitions, instance)
        try:
            await self.update(lease, record)
        except Conflict:
            if not retry:
                raise
            return await self.release(name, None, identity, instance, retry=False)
        return record

    async def delete(self, lease: dict[str, Any]) -> bool:
        """Delete ``lease``, conditional on its uid and resourceVersion (a Lease written
        since is left alone). Returns whether it was deleted: False when it changed or
        was gone already."""
        meta = lease["metadata"]
        name = meta["name"]
        preconditions = {"resourceVersion": meta["resourceVersion"]}
        if meta.get("uid"):
            preconditions["uid"] = meta["uid"]
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions}
        about = self._about("delete", name)
        try:
            await self.rest.request_json(
                "DELETE", f"{self._base}/{quote(name, safe='')}", about, body=body
            )
        except (NotFound, Conflict):
            return False
        return True

    # -- checking what the server answered --------------------------------------------------------

    def _checked(self, body: Any, about: Request) -> dict[str, Any]:
        """``body`` if it is a Lease of this namespace (named ``about.name`` when that is
        set) with a resourceVersion and a readable record; else a TransportError."""
        if not isinstance(body, dict) or body.get("kind") != "Lease":
            raise self._wrong(about, f"a {_kind(body)}, not a Lease")
        if body.get("apiVersion") != _API_VERSION:
            raise self._wrong(about, f"a Lease of {body.get('apiVersion')!r}, not {_API_VERSION}")
        meta = body.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise self._wrong(about, "a Lease without a name")
        name, namespace = meta["name"], meta.get("namespace")
        if (about.name is not None and name != about.name) or namespace != self.namespace:
            raise self._wrong(about, f"the Lease {namespace}/{name}")
        if not isinstance(meta.get("resourceVersion"), str) or not meta["resourceVersion"]:
            raise self._wrong(about, f"the Lease {name} without a resourceVersion")
        try:
            LeaseRecord.from_lease(body)
        except (TypeError, ValueError, AttributeError) as exc:
            raise self._wrong(about, f"the Lease {name} with an unreadable spec ({exc})") from None
        return body

    def _stored(
        self,
        body: Any,
        about: Request,
        record: LeaseRecord,
        before: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """``body`` if it is the Lease as written (``record``), stored under a new
        resourceVersion (and, for an update, the same object as ``before``)."""
        lease = self._checked(body, about)
        stored = LeaseRecord.from_lease(lease)
        if (stored.holder, stored.renew_time, stored.instance) != (
            record.holder,
            record.renew_time,
            record.instance,
        ):
            raise self._wrong(about, f"a record other than the one written ({stored})")
        if before is not None:
            old = before.get("metadata") or {}
            if lease["metadata"]["resourceVersion"] == old.get("resourceVersion"):
                raise self._wrong(about, "the Lease at the resourceVersion it had (not stored)")
            if old.get("uid") and lease["metadata"].get("uid") != old.get("uid"):
                raise self._wrong(about, "another Lease of that name (another uid)")
        return lease

    def _wrong(self, about: Request, what: str) -> TransportError:
        return TransportError(
            f"{about.where()}: the server answered {what}",
            verb=about.verb,
            resource=about.resource,
            namespace=about.namespace,
        )


def _kind(body: Any) -> str:
    kind = body.get("kind") if isinstance(body, dict) else None
    return repr(kind)[:60] if kind else type(body).__name__ + " without a kind"


def _with_instance(metadata: dict[str, Any], record: LeaseRecord) -> dict[str, Any]:
    """``metadata`` with the annotation of ``record``'s instance (removed when empty)."""
    annotations = {
        k: v for k, v in (metadata.get("annotations") or {}).items() if k != INSTANCE_ANNOTATION
    }
    if record.instance:
        annotations[INSTANCE_ANNOTATION] = record.instance
    metadata["annotations"] = annotations
    return metadata

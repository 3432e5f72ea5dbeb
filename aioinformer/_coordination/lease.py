"""Leases (``coordination.k8s.io/v1``): the records leader election and sharding keep.

:class:`LeaseClient` reads and writes the Leases of one namespace through the client layer
(:class:`~aioinformer._client.rest.RestClient`): objects are plain dicts as the server sent
them, errors the error tree's (a lost race is :class:`~aioinformer.Conflict` or
:class:`~aioinformer.AlreadyExists`). :class:`LeaseRecord` is the election record in a Lease's
spec (client-go's LeaderElectionRecord); times are MicroTime (:func:`micro_time`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from aioinformer._client.rest import ApiClientLike, Request, RestClient
from aioinformer._core.errors import Conflict, NotFound

__all__ = ["LeaseClient", "LeaseRecord", "micro_time"]

_RESOURCE = "leases.coordination.k8s.io"


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

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaseRecord:
        """The record in a Lease object (missing fields read as empty/zero)."""
        spec = lease.get("spec") or {}
        return cls(
            holder=spec.get("holderIdentity") or "",
            duration_s=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        """The Lease ``spec`` for this record."""
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration_s,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


class LeaseClient:
    """Lease get/create/update/list/release in one namespace.

    ``client`` is a :class:`~aioinformer._client.rest.RestClient` or a kubernetes_asyncio
    ``ApiClient``. A non-2xx answer raises the error tree's class (``get`` returns None for
    a missing Lease).
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
        try:
            return await self.rest.request_json(
                "GET", f"{self._base}/{quote(name, safe='')}", self._about("get", name)
            )
        except NotFound:
            return None

    async def list(self) -> list[dict[str, Any]]:
        """Every Lease in the namespace."""
        body = await self.rest.request_json("GET", self._base, self._about("list"))
        return list(body.get("items") or [])

    async def create(self, name: str, record: LeaseRecord) -> dict[str, Any]:
        """Create the Lease with ``record``; :class:`~aioinformer.AlreadyExists` if it
        exists."""
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        return await self.rest.request_json(
            "POST", self._base, self._about("create", name), body=body
        )

    async def update(self, lease: dict[str, Any], record: LeaseRecord) -> dict[str, Any]:
        """Replace ``lease``'s spec with ``record``, conditional on its resourceVersion
        (:class:`~aioinformer.Conflict` if it changed)."""
        body = {**lease, "apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}
        body["spec"] = {**(lease.get("spec") or {}), **record.to_spec()}
        name = lease["metadata"]["name"]
        return await self.rest.request_json(
            "PUT", f"{self._base}/{quote(name, safe='')}", self._about("update", name), body=body
        )

    async def release(
        self, name: str, lease: dict[str, Any] | None, identity: str, *, retry: bool = True
    ) -> LeaseRecord:
        """Release ``identity``'s hold: ``holderIdentity: ""``, ``leaseDurationSeconds: 1``,
        conditional on the resourceVersion of ``lease`` (read first when None). On a conflict
        (a reply lost to cancellation leaves ``lease`` stale) it re-reads once (``retry``)
        and releases only if ``identity`` still holds it. Returns the record now stored."""
        if lease is None:
            lease = await self.get(name)
        current = LeaseRecord.from_lease(lease or {})
        if lease is None or current.holder != identity:
            return current
        now = micro_time()
        record = LeaseRecord("", 1, now, now, current.transitions)
        try:
            await self.update(lease, record)
        except Conflict:
            if not retry:
                raise
            return await self.release(name, None, identity, retry=False)
        return record

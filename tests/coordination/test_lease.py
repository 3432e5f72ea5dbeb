"""The Lease client checks every answer is the Lease asked for (over real HTTP against
KubeSim, which answers the next request with the bytes given): a 2xx with another kind,
another name, another namespace, another holder, no resourceVersion, the old
resourceVersion, another uid, a record it cannot read or not JSON is a TransportError for
get, list, create, update and release alike, never a Lease to decide on."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from aioinformer import TransportError
from aioinformer._coordination.lease import (
    INSTANCE_ANNOTATION,
    Absence,
    LeaseClient,
    LeaseRecord,
    micro_time,
)
from aioinformer.testing import KubeSim

NS = "default"


def record(holder: str = "a", instance: str = "i-a") -> LeaseRecord:
    now = micro_time()
    return LeaseRecord(holder, 15, now, now, 0, instance)


def tampered(lease: dict[str, Any], change: str) -> bytes:
    """``lease`` (as stored) changed as ``change`` says."""
    body = orjson.loads(orjson.dumps(lease))
    meta, spec = body["metadata"], body["spec"]
    if change == "another kind":
        body["kind"], body["apiVersion"] = "ConfigMap", "v1"
    elif change == "another name":
        meta["name"] = "other"
    elif change == "another namespace":
        meta["namespace"] = "elsewhere"
    elif change == "another holder":
        spec["holderIdentity"] = "someone-else"
    elif change == "another instance":
        meta["annotations"][INSTANCE_ANNOTATION] = "i-other"
    elif change == "no resourceVersion":
        del meta["resourceVersion"]
    elif change == "another uid":
        meta["uid"] = "not-the-same"
    elif change == "an unreadable record":
        spec["leaseDurationSeconds"] = "fifteen"
    elif change == "not JSON":
        return b"<html>OK</html>"
    elif change == "the old resourceVersion":
        pass  # the Lease as it was before the write: not stored
    return orjson.dumps(body)


READ = ["another kind", "another name", "another namespace", "no resourceVersion",
        "an unreadable record", "not JSON"]  # fmt: skip
WRITTEN = [*READ, "another holder", "another instance", "the old resourceVersion", "another uid"]


def answer_next(sim: KubeSim, body: bytes, verb: str) -> None:
    ctype = "text/html" if body.startswith(b"<") else "application/json"
    sim.faults.respond_next(1, body, status=200, content_type=ctype, verbs=[verb],
                            path_contains="/leases")  # fmt: skip


@pytest.mark.parametrize("change", READ)
async def test_a_read_answered_with_something_else_fails(sim: KubeSim, change: str) -> None:
    async with sim.api_client() as api:
        leases = LeaseClient(api, NS)
        stored = await leases.create("l", record())
        answer_next(sim, tampered(stored, change), "get")
        with pytest.raises(TransportError, match="the server answered"):
            await leases.get("l")
        assert await leases.get("l") == stored  # the next answer is the server's
        listed = {"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseList",
                  "metadata": {"resourceVersion": "1"}}  # fmt: skip
        if change != "another name":  # (a list holds Leases of any name)
            item = orjson.loads(tampered(stored, change)) if change != "not JSON" else "x"
            answer_next(sim, orjson.dumps({**listed, "items": [item]}), "list")
            with pytest.raises(TransportError, match="the server answered"):
                await leases.list()
        answer_next(sim, orjson.dumps({**listed, "kind": "ConfigMapList", "items": []}), "list")
        with pytest.raises(TransportError, match="not a LeaseList"):
            await leases.list()
        assert [i["metadata"]["name"] for i in await leases.list()] == ["l"]


@pytest.mark.parametrize("change", WRITTEN)
async def test_a_write_answered_with_something_else_fails(sim: KubeSim, change: str) -> None:
    """An update (a renewal), a create and a release answered 200 with something that is
    not the Lease as written fail; the server's copy is what it was (KubeSim did not apply
    the write it answered for)."""
    async with sim.api_client() as api:
        leases = LeaseClient(api, NS)
        stored = await leases.create("l", record())
        answer_next(sim, tampered(stored, change), "update")
        with pytest.raises(TransportError, match="the server answered"):
            await leases.update(stored, record())
        answer_next(sim, tampered(stored, change), "update")
        with pytest.raises(TransportError, match="the server answered"):
            await leases.release("l", stored, "a", "i-a")
        if change not in ("the old resourceVersion", "another uid"):
            answer_next(sim, tampered({**stored, "metadata": {**stored["metadata"], "name": "m"}},
                                      change), "create")  # fmt: skip
            with pytest.raises(TransportError, match="the server answered"):
                await leases.create("m", record())
        assert await leases.get("l") == stored
        renewed = await leases.update(stored, record())
        assert LeaseRecord.from_lease(renewed).held_by("a", "i-a")


async def test_the_instance_is_written_and_read_back(sim: KubeSim) -> None:
    async with sim.api_client() as api:
        leases = LeaseClient(api, NS)
        stored = await leases.create("l", record("a", "i-1"))
        assert stored["metadata"]["annotations"][INSTANCE_ANNOTATION] == "i-1"
        taken = await leases.update(stored, record("a", "i-2"))
        read = LeaseRecord.from_lease(taken)
        assert read.held_by("a", "i-2") and not read.held_by("a", "i-1")
        # a release by another instance of the same identity leaves the Lease alone
        assert (await leases.release("l", None, "a", "i-1")).held_by("a", "i-2")
        released = await leases.release("l", None, "a", "i-2")
        assert (
            released.holder == ""
            and LeaseRecord.from_lease(await leases.get("l") or {}).holder == ""
        )


def test_a_lease_counts_as_missing_long_enough_only_without_a_gap() -> None:
    """A missing Lease may be created by a non-holder once seen missing for the whole
    duration, by looks no more than ``max_gap`` apart: a longer gap (a pause) starts the
    count again, and a sighting ends it."""
    absence = Absence(duration=15.0, max_gap=6.4)
    assert not absence.long_enough()
    for t in (0.0, 4.0, 8.0, 12.0):
        absence.missing(t, t + 0.01)
        assert not absence.long_enough()
    absence.missing(15.0, 15.01)
    assert not absence.long_enough()  # (counted from the first answer, 0.01)
    absence.missing(16.0, 16.01)
    assert absence.long_enough()
    absence.missing(30.0, 30.01)  # 14 s after the last look: the count starts again
    assert not absence.long_enough()
    for t in (34.0, 38.0, 42.0):
        absence.missing(t, t + 0.01)
    absence.missing(45.02, 45.03)
    assert absence.long_enough()
    absence.present()
    absence.missing(46.0, 46.01)
    assert not absence.long_enough()

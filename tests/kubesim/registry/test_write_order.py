"""Which refusal a write gets when several apply, and the texts, as kube-apiserver v1.28.0
answered them (11m, 11n and the cases below, checked against the same server): admission
before validation on a create; a PUT's uid as a storage precondition before NotFound and the
resourceVersion; ObjectMeta's update rules checked by the store and by the kind."""

from __future__ import annotations

from typing import Any

import aiohttp

from aioinformer.testing import KubeSim
from tests.kubesim.registry.test_listing import make_ns
from tests.kubesim.registry.test_store import call

BAD = "0badc0de-0000-4000-8000-000000000026"


def precondition(resource: str, name: str, key: str, actual: str) -> str:
    return (
        f'Operation cannot be fulfilled on {resource} "{name}": StorageError: invalid object, '
        f"Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
        f"UID in precondition: {BAD}, UID in object meta: {actual}"
    )


def immutable_uid(kind: str, name: str) -> dict[str, Any]:
    cause = {
        "reason": "FieldValueInvalid",
        "message": f'Invalid value: "{BAD}": field is immutable',
        "field": "metadata.uid",
    }
    return {
        "message": f'{kind} "{name}" is invalid: metadata.uid: {cause["message"]}',
        "causes": [cause, cause],
    }


async def test_a_terminating_namespace_refuses_before_validation(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    make_ns(sim, "term")
    sim.create("configmaps", {"metadata": {"name": "keep", "finalizers": ["x/y"]}}, "term")
    sim.delete("namespaces", "term")
    status, body = await call(
        http, "POST", "/api/v1/namespaces/term/configmaps", {"metadata": {"name": "Bad_Name"}}
    )
    assert status == 403, body
    assert body["message"] == (
        'configmaps "Bad_Name" is forbidden: unable to create new content in namespace term '
        "because it is being terminated"
    )


async def test_the_uid_precondition_names_the_etcd_key(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """Keys under the prefixes kube-apiserver gives some resources (services/specs, minions)
    and under the group for custom resources and CRDs."""
    make_ns(sim, "keys")
    svc = sim.create(
        "services", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}, "keys"
    )
    node = sim.create("nodes", {"metadata": {"name": "n1"}})
    cases = [
        ("/api/v1/namespaces/keys/services/s", svc, "services", "/registry/services/specs/keys/s"),
        ("/api/v1/nodes/n1", node, "nodes", "/registry/minions/n1"),
    ]
    for path, obj, resource, key in cases:
        sent = {**obj, "metadata": {**obj["metadata"], "uid": BAD}}
        status, body = await call(http, "PUT", path, sent)
        assert status == 409, body
        name = obj["metadata"]["name"]
        assert body["message"] == precondition(resource, name, key, obj["metadata"]["uid"])


async def test_uid_changes_through_status(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """A built-in kind's status write refuses another uid (the cause twice); ObjectMeta's
    other update rules are listed twice too (a finalizer added while deleting)."""
    make_ns(sim, "st")
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    sim.create("pods", pod, "st")
    status, body = await call(
        http,
        "PATCH",
        "/api/v1/namespaces/st/pods/p/status",
        {"metadata": {"uid": BAD}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert status == 422, body
    want = immutable_uid("Pod", "p")
    assert (body["message"], body["details"]["causes"]) == (want["message"], want["causes"])

    sim.create("configmaps", {"metadata": {"name": "f", "finalizers": ["a/b"]}}, "st")
    sim.delete("configmaps", "f", "st")
    status, body = await call(
        http,
        "PATCH",
        "/api/v1/namespaces/st/configmaps/f",
        {"metadata": {"finalizers": ["a/b", "c/d"]}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert status == 422, body
    causes = body["details"]["causes"]
    assert len(causes) == 2 and causes[0] == causes[1], causes
    assert causes[0]["field"] == "metadata.finalizers"

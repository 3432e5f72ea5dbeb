"""The apiserver side of namespace deletion (kubesim.apis.core.namespace, kubesim.registry.admission), replayed from 18c and
19a on a KubeSim without controllers, as the recordings had none."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from aioinformer.testing import KubeSim
from tests.kubesim.replay import Replayer, masked, recorder
from tests.kubesim.server.test_watch import WatchReader
from tests.support import transcript


@pytest_asyncio.fixture
async def apiserver() -> AsyncIterator[KubeSim]:
    async with KubeSim(controllers=False) as sim:
        yield sim


async def test_delete_marks_the_namespace_terminating(apiserver: KubeSim) -> None:
    """18c: DELETE answers the Namespace with a deletionTimestamp (and no grace field), phase
    Terminating and spec.finalizers [kubernetes]; a GET and a repeated DELETE answer the same
    object with the same RV: nothing else happens without a namespace controller."""
    rec = transcript("18c")
    async with recorder(apiserver) as http:
        replayer = Replayer(http)
        create = transcript("18a")["setup"][0]
        assert (await replayer.send(create))[0] == 201
        first = await replayer.check(rec)
        assert "deletionGracePeriodSeconds" not in first["metadata"]
        for exchange in rec["more_exchanges"]:
            again = await replayer.check(exchange)
            assert again == first


async def test_namespace_deletion_as_recorded(apiserver: KubeSim) -> None:
    """19a, with the recorded watch: the DELETE is one MODIFIED (Terminating); creating a
    ConfigMap or a Pod inside is the NamespaceTerminating 403, re-creating the namespace the
    409 'object is being deleted', a patch of existing content works; after the content is
    deleted by hand, PUT /finalize with no finalizers answers the namespace with its
    Terminating RV (labels from the body) and the watch shows DELETED with the last stored
    state; the namespace is then 404."""
    rec = transcript("19a")
    async with recorder(apiserver) as http:
        replayer = Replayer(http)
        for exchange in rec["setup"]:
            assert (await replayer.send(exchange))[0] == 201
        rv = str(apiserver.resource_version)
        query = {**rec["request"]["query"], "resourceVersion": rv, "timeoutSeconds": "1"}
        async with http.get(rec["request"]["path"], params=query) as watch:
            answers = [await replayer.check(write) for write in rec["writes"]]
            events = await WatchReader(watch).events_until_eof()
    deleted, finalized = answers[0], answers[-2]
    assert finalized["metadata"]["resourceVersion"] == deleted["metadata"]["resourceVersion"]
    want = [e["line"] for e in rec["response"]["events"] if e["line"]["type"] != "BOOKMARK"]
    assert [e["type"] for e in events] == [e["type"] for e in want]
    assert [masked(e["object"]) for e in events] == [masked(e["object"]) for e in want]
    assert events[1]["object"]["spec"]["finalizers"] == ["kubernetes"]
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(
        deleted["metadata"]["resourceVersion"]
    )


async def test_finalize_keeps_a_namespace_with_metadata_finalizers(apiserver: KubeSim) -> None:
    """/finalize with [] deletes only a namespace no metadata finalizer holds: one deleted
    with propagationPolicy=Orphan whose /finalize body keeps the orphan finalizer stays until
    it is removed; a plain update cannot change spec.finalizers; a bad finalizer is 422."""
    apiserver.create("namespaces", {"metadata": {"name": "held"}})
    async with recorder(apiserver) as http:
        replayer = Replayer(http)

        def exchange(
            method: str, path: str, body: object, ctype: str = "application/json"
        ) -> dict[str, object]:
            return {
                "request": {
                    "method": method,
                    "path": path,
                    "query": {},
                    "headers": [["Content-Type", ctype]],
                    "body": body,
                },
                "response": {},
            }

        status, ns, _ = await replayer.send(
            exchange("DELETE", "/api/v1/namespaces/held", {"propagationPolicy": "Orphan"})
        )
        assert status == 200 and ns["metadata"]["finalizers"] == ["orphan"]
        status, ns, _ = await replayer.send(
            exchange(
                "PATCH",
                "/api/v1/namespaces/held",
                {"spec": {"finalizers": []}},
                "application/merge-patch+json",
            )
        )
        assert status == 200 and ns["spec"]["finalizers"] == ["kubernetes"]
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "held", "finalizers": ["orphan"]},
            "spec": {"finalizers": []},
        }
        status, ns, _ = await replayer.send(
            exchange("PUT", "/api/v1/namespaces/held/finalize", body)
        )
        assert status == 200 and ns["spec"] == {}
        assert apiserver.get("namespaces", "held")["metadata"]["finalizers"] == ["orphan"]
        status, gone, _ = await replayer.send(
            exchange(
                "PATCH",
                "/api/v1/namespaces/held",
                {"metadata": {"finalizers": None}},
                "application/merge-patch+json",
            )
        )
        assert status == 200 and "finalizers" not in gone["metadata"]
        status, _, _ = await replayer.send(exchange("GET", "/api/v1/namespaces/held", None))
        assert status == 404
        status, body, _ = await replayer.send(
            exchange(
                "PUT",
                "/api/v1/namespaces/default/finalize",
                {"metadata": {"name": "default"}, "spec": {"finalizers": ["Not Valid"]}},
            )
        )
        assert status == 422 and body["details"]["causes"][0]["field"] == "spec.finalizers[0]"


async def test_malformed_finalize_bodies_are_400(apiserver: KubeSim) -> None:
    """A /finalize body whose spec or finalizers has the wrong JSON type is the decoder's
    400, never a 500; the namespace keeps its finalizers."""
    async with recorder(apiserver) as http:
        for spec in (["kubernetes"], {"finalizers": "kubernetes"}, {"finalizers": [1]}):
            body = {"metadata": {"name": "default"}, "spec": spec}
            async with http.put("/api/v1/namespaces/default/finalize", json=body) as r:
                answer = await r.json()
            assert r.status == 400 and answer["reason"] == "BadRequest", spec
            assert answer["message"].startswith('Namespace in version "v1" cannot be handled')
    assert apiserver.get("namespaces", "default")["spec"]["finalizers"] == ["kubernetes"]

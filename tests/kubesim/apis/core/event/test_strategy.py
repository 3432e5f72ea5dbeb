"""events.k8s.io/v1 beside core/v1 Events (kubesim.apis.core.event, kubesim.controllers.event_expiry):
the 26a recording replayed, one storage seen through both APIs (reads, lists, watches,
field selectors), validation per API, RBAC, Table output, patch/apply/dry-run, expiry
after ``event_ttl``, and real clients (the official ``kubernetes`` client's EventsV1Api,
kubectl)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from aioinformer.testing import KubeSim
from kubesim.registry.resource import storage_version_hash
from tests.kubesim.kubectl import kubectl_sim
from tests.kubesim.replay import Replayer, exchanges, masked, recorder, send
from tests.kubesim.server.test_watch import WatchReader, watch_params
from tests.support import transcript

CORE = "/api/v1/namespaces/default/events"
V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


def _pod_ref(uid: str = "u-1", name: str = "web") -> dict[str, str]:
    return {"kind": "Pod", "namespace": "default", "name": name, "uid": uid, "apiVersion": "v1"}


def v1_event(name: str, **fields: Any) -> dict[str, Any]:
    """A valid events.k8s.io/v1 Event about pod ``web`` in ``default``."""
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-12-01T12:50:01.123456Z",
        "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Pulling",
        "reason": "Pulling",
        "regarding": _pod_ref(),
        "note": 'Pulling image "busybox:1.36"',
        "type": "Normal",
    }
    body.update(fields)
    return body


def core_event(name: str, **fields: Any) -> dict[str, Any]:
    """A valid core/v1 Event (no eventTime, as the legacy recorder writes it)."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": _pod_ref(),
        "reason": "Scheduled",
        "message": "Successfully assigned default/web to node-0",
        "source": {"component": "default-scheduler"},
        "firstTimestamp": "2026-12-01T12:50:00Z",
        "lastTimestamp": "2026-12-01T12:50:00Z",
        "count": 1,
        "type": "Normal",
    }
    body.update(fields)
    return body


@pytest.fixture
async def admin(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    async with recorder(sim) as http:
        yield http


# -- the recording ------------------------------------------------------------------------------


async def test_26a_replayed_exchange_by_exchange() -> None:
    """Every exchange of 26a (creates through both APIs, the two 422s, each Event read back
    through both APIs, the lists, the field selectors of both APIs and the 400 for
    ``involvedObject.*`` on events.k8s.io) answers the recorded status and body; Status
    bodies byte for byte in length. A KubeSim without controllers, as recorded."""
    rec = transcript("26a")
    async with KubeSim(controllers=False) as sim, recorder(sim) as http:
        replayer = Replayer(http)
        for ex in rec["setup"]:
            assert (await replayer.send(ex))[0] == 201, ex["label"]
        for ex in exchanges("26a"):
            # the recorded field selectors name the recorded pod's uid: point them at ours
            req = {**ex["request"], "query": replayer.ours(ex["request"]["query"])}
            ex = {**ex, "request": req}
            status, got, raw = await replayer.send(ex)
            want = ex["response"]
            label = ex.get("label", "POST core/v1 Event")
            assert status == want["status"], (label, got)
            assert masked(got) == masked(replayer.ours(want["body"])), label
            if want["body"].get("kind") == "Status":
                assert len(raw) == want["body_raw_len"], label


# -- one storage, two views ---------------------------------------------------------------------


async def test_discovery_lists_events_k8s_io(sim: KubeSim, admin: aiohttp.ClientSession) -> None:
    """/apis lists events.k8s.io where 15c has it (after apps), with its group and version
    documents; the resource has core events' storage version hash; aggregated discovery and
    the OpenAPI v3 index have it too."""
    _, groups, _ = await send(admin, "GET", "/apis")
    names = [g["name"] for g in groups["groups"]]
    recorded = [g["name"] for g in transcript("15c")["response"]["body"]["groups"]]
    assert names.index("events.k8s.io") == names.index("apps") + 1
    assert recorded.index("events.k8s.io") == recorded.index("apps") + 1
    want = next(
        g for g in transcript("15c")["response"]["body"]["groups"] if g["name"] == "events.k8s.io"
    )
    assert next(g for g in groups["groups"] if g["name"] == "events.k8s.io") == want
    status, group, _ = await send(admin, "GET", "/apis/events.k8s.io")
    assert status == 200 and group == {"kind": "APIGroup", "apiVersion": "v1", **want}
    _, resources, _ = await send(admin, "GET", "/apis/events.k8s.io/v1")
    _, core, _ = await send(admin, "GET", "/api/v1")
    [entry] = resources["resources"]
    [core_entry] = [r for r in core["resources"] if r["name"] == "events"]
    assert entry == core_entry
    assert entry["storageVersionHash"] == storage_version_hash("", "v1", "Event")
    accept = {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"}
    _, aggregated, _ = await send(admin, "GET", "/apis", headers=accept)
    item = next(i for i in aggregated["items"] if i["metadata"]["name"] == "events.k8s.io")
    assert [r["resource"] for r in item["versions"][0]["resources"]] == ["events"]
    _, index, _ = await send(admin, "GET", "/openapi/v3")
    status, doc, _ = await send(admin, "GET", "/openapi/v3/apis/events.k8s.io/v1")
    assert "apis/events.k8s.io/v1" in index["paths"]
    assert status == 200 and "io.k8s.api.events.v1.Event" in doc["components"]["schemas"]


async def test_a_write_through_either_api_is_one_object(
    sim: KubeSim, admin: aiohttp.ClientSession
) -> None:
    """Created through events.k8s.io, an Event is the same object (uid, resourceVersion)
    through core/v1; a core/v1 update is seen through events.k8s.io; deleted through
    core/v1 it is gone from both; managedFields name the API each write came through."""
    status, created, _ = await send(admin, "POST", V1, v1_event("e1"))
    assert status == 201
    _, as_core, _ = await send(admin, "GET", f"{CORE}/e1")
    assert as_core["metadata"]["uid"] == created["metadata"]["uid"]
    assert as_core["message"] == created["note"] and as_core["involvedObject"] == _pod_ref()
    assert as_core["reportingComponent"] == "example.com/ctl"
    as_core["metadata"]["labels"] = {"seen": "yes"}
    status, updated, _ = await send(admin, "PUT", f"{CORE}/e1", as_core)
    assert status == 200, updated
    _, as_v1, _ = await send(admin, "GET", f"{V1}/e1")
    assert as_v1["metadata"]["labels"] == {"seen": "yes"}
    assert as_v1["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]
    assert [(m["apiVersion"], m["operation"]) for m in as_v1["metadata"]["managedFields"]] == [
        ("events.k8s.io/v1", "Update"),
        ("v1", "Update"),
    ]
    assert sim.get("events.k8s.io/v1/events", "e1", "default")["note"] == created["note"]
    status, _, _ = await send(admin, "DELETE", f"{CORE}/e1")
    assert status == 200
    assert (await send(admin, "GET", f"{V1}/e1"))[0] == 404
    assert sim.list("events", "default") == []


async def test_watches_of_both_apis_see_each_write(
    sim: KubeSim, admin: aiohttp.ClientSession
) -> None:
    """A watch of each API from the same resourceVersion gets ADDED, MODIFIED and DELETED
    for writes made through the other API, each object in the watch's own form; a
    ``regarding.name`` selector filters the events.k8s.io watch."""
    rv = str(sim.resource_version)
    params = watch_params(resourceVersion=rv, timeoutSeconds="1")
    selected = {**params, "fieldSelector": "regarding.name=web"}
    async with (
        admin.get(CORE, params=params) as core_resp,
        admin.get(V1, params=params) as v1_resp,
        admin.get(V1, params=selected) as selected_resp,
    ):
        assert (await send(admin, "POST", V1, v1_event("e1")))[0] == 201
        other = core_event("e2", involvedObject=_pod_ref("u-2", "db"))
        assert (await send(admin, "POST", CORE, other))[0] == 201
        patch = {"metadata": {"labels": {"a": "b"}}}
        merge = {"Content-Type": "application/merge-patch+json"}
        assert (await send(admin, "PATCH", f"{CORE}/e1", patch, headers=merge))[0] == 200
        assert (await send(admin, "DELETE", f"{V1}/e1"))[0] == 200
        core_events = await WatchReader(core_resp).events_until_eof()
        v1_events = await WatchReader(v1_resp).events_until_eof()
        selected_events = await WatchReader(selected_resp).events_until_eof()
    order = [("ADDED", "e1"), ("ADDED", "e2"), ("MODIFIED", "e1"), ("DELETED", "e1")]
    for got, api_version, text in (
        (core_events, "v1", "message"),
        (v1_events, "events.k8s.io/v1", "note"),
    ):
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == order
        assert {e["object"]["apiVersion"] for e in got} == {api_version}
        assert all(text in e["object"] for e in got)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in selected_events] == [
        ("ADDED", "e1"),
        ("MODIFIED", "e1"),
        ("DELETED", "e1"),
    ]


async def test_each_api_takes_its_own_field_labels(admin: aiohttp.ClientSession) -> None:
    """events.k8s.io/v1 selects on regarding.*, reportingController, reason, type and
    metadata.*; core/v1 names are 400 there, and regarding.* is 400 on core/v1."""
    assert (await send(admin, "POST", V1, v1_event("e1")))[0] == 201
    assert (await send(admin, "POST", CORE, core_event("e2")))[0] == 201
    for selector, names in (
        ("regarding.kind=Pod,regarding.name=web", ["e1", "e2"]),
        ("reportingController=example.com/ctl", ["e1"]),
        ("source=default-scheduler", ["e2"]),
        ("reason=Scheduled,type=Normal", ["e2"]),
        ("metadata.name=e1", ["e1"]),
    ):
        status, got, _ = await send(admin, "GET", V1, query={"fieldSelector": selector})
        assert status == 200, got
        assert [i["metadata"]["name"] for i in got["items"]] == names, selector
    for path, label in (
        (V1, "reportingComponent"),
        (V1, "involvedObject.name"),
        (CORE, "regarding.uid"),
    ):
        status, got, _ = await send(admin, "GET", path, query={"fieldSelector": f"{label}=x"})
        assert (status, got["message"]) == (400, f"field label not supported: {label}")


# -- validation -----------------------------------------------------------------------------------


async def _invalid(http: aiohttp.ClientSession, method: str, path: str, body: Any) -> str:
    status, got, _ = await send(http, method, path, body)
    assert status == 422, got
    assert got["details"]["kind"] == "Event" and "group" not in got["details"]
    message: str = got["message"]
    return message


async def test_events_k8s_io_validation(admin: aiohttp.ClientSession) -> None:
    """The events.k8s.io/v1 rules of ValidateEventCreate: type Normal|Warning, the
    deprecated fields unset, series count and lastObservedTime, a DNS-subdomain name; the
    legacy rules of an Event with eventTime (reportingController, reportingInstance, action
    and reason required, lengths); messages name the core fields, as upstream."""
    cases = [
        (v1_event("a", type="Bogus"), 'type: Invalid value: "": has invalid value: Bogus'),
        (v1_event("a", deprecatedCount=2), 'count: Invalid value: "": needs to be unset'),
        (
            v1_event("a", deprecatedSource={"component": "x"}),
            'source: Invalid value: "": needs to be unset',
        ),
        (
            v1_event("a", series={"count": 1, "lastObservedTime": "2026-12-01T12:50:01.000000Z"}),
            'series.count: Invalid value: "": should be at least 2',
        ),
        (v1_event("a", series={"count": 3}), "series.lastObservedTime: Required value"),
        (v1_event("Upper"), 'metadata.name: Invalid value: "Upper": a lowercase RFC 1123'),
        (
            v1_event("a", reportingInstance="i" * 129),
            'reportingInstance: Invalid value: "": can have at most 128 characters',
        ),
        (
            v1_event("a", note="n" * 1025),
            'message: Invalid value: "": can have at most 1024 characters',
        ),
        (v1_event("a", action=""), "action: Required value"),
    ]
    for body, want in cases:
        assert want in await _invalid(admin, "POST", V1, body), want
    missing = v1_event("a")
    del missing["reportingController"]
    message = await _invalid(admin, "POST", V1, missing)
    assert "reportingController: Required value" in message
    assert "reportingController: Invalid value" in message  # IsQualifiedName("") too


async def test_core_v1_validation_is_the_legacy_one(admin: aiohttp.ClientSession) -> None:
    """core/v1 applies only the legacy rules: no type check, any path-segment name, the
    deprecated fields allowed, and the reporting fields required once eventTime is set."""
    loose = core_event("Any_Name", type="Custom")
    assert (await send(admin, "POST", CORE, loose))[0] == 201
    with_time = core_event("timed", eventTime="2026-12-01T12:50:01.000000Z")
    message = await _invalid(admin, "POST", CORE, with_time)
    for field in ("reportingController", "reportingInstance", "action"):
        assert f"{field}: Required value" in message
    assert "may not contain '/'" not in message
    bad_ns = core_event("x", involvedObject={**_pod_ref(), "namespace": "other"})
    assert "does not match event.namespace" in await _invalid(admin, "POST", CORE, bad_ns)


async def test_events_k8s_io_updates_keep_all_but_series(admin: aiohttp.ClientSession) -> None:
    """Through events.k8s.io/v1 an update may change the series and the metadata, not the
    note, reason or regarding (field is immutable); through core/v1 the message may
    change."""
    _, created, _ = await send(admin, "POST", V1, v1_event("e1"))
    series = {"count": 2, "lastObservedTime": "2026-12-01T12:51:00.000000Z"}
    status, got, _ = await send(admin, "PUT", f"{V1}/e1", {**created, "series": series})
    assert status == 200 and got["series"] == series
    changed = {**got, "note": "other", "regarding": _pod_ref("u-9")}
    message = await _invalid(admin, "PUT", f"{V1}/e1", changed)
    assert 'message: Invalid value: "other": field is immutable' in message
    assert 'involvedObject: Invalid value: core.ObjectReference{Kind:"Pod"' in message
    _, as_core, _ = await send(admin, "GET", f"{CORE}/e1")
    status, got, _ = await send(admin, "PUT", f"{CORE}/e1", {**as_core, "message": "edited"})
    assert status == 200 and got["message"] == "edited"


# -- RBAC, Table, patch, apply, dry run ---------------------------------------------------------


async def test_rbac_rules_for_the_two_groups_are_separate(sim: KubeSim) -> None:
    """A rule for core events does not grant events.k8s.io events, nor the reverse; the
    403 names the group asked for."""
    core_only = sim.add_user("core-reader", [("list", "", "events")])
    v1_only = sim.add_user("v1-reader", [("list", "events.k8s.io", "events")])
    async with recorder(sim, core_only) as http:
        assert (await send(http, "GET", CORE))[0] == 200
        status, got, _ = await send(http, "GET", V1)
    assert status == 403
    assert got["message"] == (
        'events.events.k8s.io is forbidden: User "core-reader" cannot list resource "events" '
        'in API group "events.k8s.io" in the namespace "default"'
    )
    async with recorder(sim, v1_only) as http:
        assert (await send(http, "GET", V1))[0] == 200
        status, got, _ = await send(http, "GET", CORE)
    assert status == 403 and 'in API group ""' in got["message"]


async def test_table_through_events_k8s_io(admin: aiohttp.ClientSession) -> None:
    """``kubectl get events.v1.events.k8s.io`` asks for a Table: the same columns as core
    events, the cells read from the mapped fields (note, regarding, reportingController)."""
    assert (await send(admin, "POST", V1, v1_event("e1")))[0] == 201
    _, v1_table, _ = await send(admin, "GET", V1, headers=TABLE)
    _, core_table, _ = await send(admin, "GET", CORE, headers=TABLE)
    assert v1_table["columnDefinitions"] == core_table["columnDefinitions"]
    names = [c["name"] for c in v1_table["columnDefinitions"]]
    cells = dict(zip(names, v1_table["rows"][0]["cells"], strict=True))
    assert (cells["Object"], cells["Message"], cells["Reason"]) == (
        "pod/web",
        'Pulling image "busybox:1.36"',
        "Pulling",
    )
    assert cells["Source"] == "example.com/ctl, ctl-1"
    assert v1_table["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1"


async def test_patch_apply_and_dry_run_through_events_k8s_io(
    sim: KubeSim, admin: aiohttp.ClientSession
) -> None:
    """A merge patch and a JSON patch address events.k8s.io's field names; server-side
    apply creates and updates an Event with an Apply entry of events.k8s.io/v1; a dry-run
    create answers the object and stores nothing."""
    status, dry, _ = await send(admin, "POST", V1, v1_event("dry"), query={"dryRun": "All"})
    assert status == 201 and dry["note"] and "resourceVersion" not in dry["metadata"]
    assert (await send(admin, "GET", f"{V1}/dry"))[0] == 404
    apply = {"Content-Type": "application/apply-patch+yaml"}
    q = {"fieldManager": "ctl"}
    status, got, _ = await send(admin, "PATCH", f"{V1}/ap", v1_event("ap"), headers=apply, query=q)
    assert status == 201, got
    assert [
        (m["manager"], m["operation"], m["apiVersion"]) for m in got["metadata"]["managedFields"]
    ] == [("ctl", "Apply", "events.k8s.io/v1")]
    series = {"count": 2, "lastObservedTime": "2026-12-01T12:52:00.000000Z"}
    body = v1_event("ap", series=series)
    status, got, _ = await send(admin, "PATCH", f"{V1}/ap", body, headers=apply, query=q)
    assert status == 200 and got["series"] == series, got
    merge = {"Content-Type": "application/merge-patch+json"}
    status, got, _ = await send(admin, "PATCH", f"{V1}/ap", {"series": {"count": 3}}, headers=merge)
    assert status == 200 and got["series"]["count"] == 3
    ops = [{"op": "replace", "path": "/series/count", "value": 4}]
    json_patch = {"Content-Type": "application/json-patch+json"}
    status, got, _ = await send(admin, "PATCH", f"{V1}/ap", ops, headers=json_patch)
    assert status == 200 and got["series"]["count"] == 4
    assert sim.get("events", "ap", "default")["series"]["count"] == 4


# -- expiry ---------------------------------------------------------------------------------------


@pytest.mark.looptime
async def test_events_expire_after_the_ttl_of_their_last_write() -> None:
    """On the loop's (virtual) clock: an Event is deleted ``event_ttl`` after its last
    write, with a DELETED event on the watches of both APIs; a rewrite renews it; other
    kinds never expire."""
    async with KubeSim(event_ttl=100.0, bookmark_interval=1e6) as sim, recorder(sim) as http:
        rv = str(sim.resource_version)
        params = watch_params(resourceVersion=rv, timeoutSeconds="1000")
        async with (
            http.get(CORE, params=params) as core_resp,
            http.get(V1, params=params) as v1_resp,
        ):
            core_watch, v1_watch = WatchReader(core_resp), WatchReader(v1_resp)
            sim.create("events", core_event("old"))
            sim.create("configmaps", {"metadata": {"name": "cm"}})
            await asyncio.sleep(60)
            assert (await send(http, "POST", V1, v1_event("young")))[0] == 201
            await asyncio.sleep(30)
            merge = {"Content-Type": "application/merge-patch+json"}
            patch = {"metadata": {"labels": {"renewed": "yes"}}}
            assert (await send(http, "PATCH", f"{CORE}/old", patch, headers=merge))[0] == 200
            await asyncio.sleep(75)  # t=165: "young" (written at 60) is gone, "old" not yet
            assert [e["metadata"]["name"] for e in sim.list("events", "default")] == ["old"]
            await asyncio.sleep(30)  # t=195: "old" (last written at 90) is gone
            assert sim.list("events", "default") == []
            assert [c["metadata"]["name"] for c in sim.list("configmaps", "default")] == ["cm"]
            for watch in (core_watch, v1_watch):
                got = [await watch.next_event(1000) for _ in range(5)]
                assert [(e["type"], e["object"]["metadata"]["name"]) for e in got if e] == [
                    ("ADDED", "old"),
                    ("ADDED", "young"),
                    ("MODIFIED", "old"),
                    ("DELETED", "young"),
                    ("DELETED", "old"),
                ]
    assert sim.event_expiry.expired == 2


async def test_event_ttl_none_keeps_events_and_bad_ttls_are_refused() -> None:
    async with KubeSim(event_ttl=None) as sim:
        sim.create("events", core_event("kept"))
        assert sim.event_expiry.pending == 0
    with pytest.raises(ValueError, match="positive number of seconds"):
        KubeSim(event_ttl=0)


# -- real clients ---------------------------------------------------------------------------------


async def test_official_client_events_v1_api(sim: KubeSim) -> None:
    """The official client's EventsV1Api creates and lists an events.k8s.io Event (typed
    EventsV1Event with its fields), and CoreV1Api lists the same Event as a CoreV1Event."""
    pytest.importorskip("kubernetes")
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = sim.url
    cfg.api_key = {"authorization": f"Bearer {sim.token}"}
    body = v1_event("client-made")

    def run() -> tuple[Any, Any, Any]:
        with client.ApiClient(cfg) as api:
            events = client.EventsV1Api(api)
            made = events.create_namespaced_event("default", body)
            listed = events.list_namespaced_event("default", field_selector="regarding.name=web")
            core = client.CoreV1Api(api).list_namespaced_event("default")
            return made, listed, core

    made, listed, core = await asyncio.to_thread(run)
    assert isinstance(made, client.EventsV1Event)
    assert (made.note, made.reporting_controller, made.regarding.name) == (
        'Pulling image "busybox:1.36"',
        "example.com/ctl",
        "web",
    )
    assert [e.metadata.name for e in listed.items] == ["client-made"]
    assert [(e.message, e.involved_object.uid) for e in core.items] == [(made.note, "u-1")]


async def test_kubectl_shows_an_events_k8s_io_event(tmp_path: Path) -> None:
    """``kubectl get events.v1.events.k8s.io`` lists an Event written through
    events.k8s.io, and ``kubectl describe pod`` (which lists core Events by involvedObject)
    shows it."""
    async with kubectl_sim(tmp_path) as (sim, kubectl):
        pod = sim.create(
            "pods",
            {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        )
        body = v1_event("web.1", regarding=_pod_ref(pod["metadata"]["uid"]))
        sim.create("events.k8s.io/v1/events", body, "default")  # the POST's code path
        listed = await kubectl.ok("get", "events.v1.events.k8s.io")
        described = await kubectl.ok("describe", "pod", "web")
    header, row = listed.splitlines()[:2]
    assert header.split()[:4] == ["LAST", "SEEN", "TYPE", "REASON"]
    assert "pod/web" in row and 'Pulling image "busybox:1.36"' in row
    events = described.split("Events:", 1)[1]
    assert 'Pulling image "busybox:1.36"' in events

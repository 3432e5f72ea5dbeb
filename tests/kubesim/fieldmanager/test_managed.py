"""managedFields of non-apply writes: recorded entries, ownership moves, the cap."""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp

from aioinformer.testing import KubeSim
from kubesim.fieldmanager.managed import track_update
from kubesim.fieldmanager.schemas import builtin_type
from tests.support import transcript

RECORDER_UA = "aioinformer-recorder/0.2"


def without_times(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**{k: v for k, v in e.items() if k != "time"}, "has_time": "time" in e} for e in entries
    ]


def exchange(rec: dict[str, Any], label: str) -> dict[str, Any]:
    for ex in rec.get("more_exchanges", []) + rec.get("writes", []):
        if ex["label"].startswith(label):
            return ex
    raise AssertionError(f"no exchange {label!r} in {rec['case']}")


async def test_pod_writes_record_the_apiservers_entries(sim: KubeSim) -> None:
    """06: create (defaulted fields, no admission fields), PUT, merge patch of /status."""
    rec = transcript("06")
    sim.create("namespaces", {"metadata": {"name": "tx06"}})
    headers = {"Authorization": f"Bearer {sim.token}", "User-Agent": RECORDER_UA}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as s:
        for w in rec["writes"][:3]:
            rq = w["request"]
            body = copy.deepcopy(rq["body"])
            if rq["method"] == "PUT":
                cur = await (await s.get(rq["path"])).json()
                body["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                body["metadata"]["uid"] = cur["metadata"]["uid"]
            ctype = dict(rq["headers"]).get("Content-Type", "application/json")
            async with s.request(
                rq["method"], rq["path"], data=json.dumps(body), headers={"Content-Type": ctype}
            ) as r:
                assert r.status == w["response"]["status"], w["label"]
                got = (await r.json())["metadata"]["managedFields"]
            assert without_times(got) == without_times(
                w["response"]["body"]["metadata"]["managedFields"]
            ), w["label"]


def test_an_update_takes_the_fields_it_changes_from_every_other_manager() -> None:
    """22a: the merge patch of data.key moves it from applier b (dropped, nothing left) to
    the Update manager; a and c keep theirs."""
    rec = transcript("22a")
    before = exchange(rec, "re-apply fieldManager=a without")["response"]["body"]
    after = exchange(rec, "merge-patch")["response"]["body"]
    sim = KubeSim()
    rt = sim.resource("configmaps")
    new = copy.deepcopy(after)
    new["metadata"].pop("managedFields")
    got = track_update(builtin_type("", "v1", "ConfigMap"), rt, before, new, "aioinformer-recorder")
    assert without_times(got) == without_times(after["metadata"]["managedFields"])
    # an entry keeps its time unless its own fields change the object
    assert [e.get("time") for e in got[:2]] == [
        e.get("time") for e in before["metadata"]["managedFields"][:2]
    ]


async def test_strategic_merge_directives_never_become_fields(sim: KubeSim) -> None:
    sim.create("namespaces", {"metadata": {"name": "smp"}})
    tmpl = {
        "metadata": {"labels": {"app": "d"}},
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
    }
    sim.create(
        "deployments",
        {
            "metadata": {"name": "d", "namespace": "smp"},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": tmpl},
        },
    )
    patch = {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
        "containers": [{"name": "a", "image": "z"}],
    }
    headers = {"Authorization": f"Bearer {sim.token}", "User-Agent": "smp-writer/1"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as s:
        async with s.patch(
            "/apis/apps/v1/namespaces/smp/deployments/d",
            data=json.dumps({"spec": {"template": {"spec": patch}}}),
            headers={"Content-Type": "application/strategic-merge-patch+json"},
        ) as r:
            assert r.status == 200
            entries = (await r.json())["metadata"]["managedFields"]
    assert "$setElementOrder" not in json.dumps(entries)
    mine = [e for e in entries if e["manager"] == "smp-writer"]
    containers = {'k:{"name":"a"}': {"f:image": {}}}
    assert mine[0]["fieldsV1"] == {
        "f:spec": {"f:template": {"f:spec": {"f:containers": containers}}}
    }
    creator = next(e for e in entries if e["manager"] == "kubesim")
    created = creator["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert "f:image" not in created['k:{"name":"a"}'] and "f:image" in created['k:{"name":"b"}']


def test_at_most_ten_update_managers_then_ancient_changes() -> None:
    sim = KubeSim()
    sim.create("configmaps", {"metadata": {"name": "cm", "namespace": "default"}})
    rt = sim.resource("configmaps")
    for i in range(12):
        patch = {"data": {f"k{i}": "v"}}
        sim.api.patch(rt, "default", "cm", "application/merge-patch+json", patch, manager=f"m{i}")
    entries = sim.get("configmaps", "cm", "default")["metadata"]["managedFields"]
    managers = [e["manager"] for e in entries]
    assert len(managers) == 10 and "ancient-changes" in managers
    ancient = next(e for e in entries if e["manager"] == "ancient-changes")
    assert len(ancient["fieldsV1"]["f:data"]) >= 2

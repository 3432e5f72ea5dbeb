"""Strategic merge patch."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given

from kubesim.errors import PatchError
from kubesim.fieldmanager.strategic import STRATEGIC_MERGE_KINDS, strategic_merge_patch
from tests.kubesim.fieldmanager.jsonvalues import OBJECTS
from tests.support import transcript


def directive_keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [k for k in value if k.startswith("$")]
        return own + [k for v in value.values() for k in directive_keys(v)]
    if isinstance(value, list):
        return [k for v in value for k in directive_keys(v)]
    return []


def test_smp_pod_status_conditions_follow_transcript_06() -> None:
    rec = transcript("06-watch-from-list-rv.json")
    writes = {w["label"]: w for w in rec["writes"]}
    before = writes["PATCH w1/status merge-patch phase=Running"]["response"]["body"]
    smp = writes["PATCH w1/status strategic-merge-patch conditions[type=Ready]"]
    assert smp["request"]["headers"][3] == [
        "Content-Type",
        "application/strategic-merge-patch+json",
    ]
    after = smp["response"]["body"]

    result = strategic_merge_patch(before, smp["request"]["body"], "Pod")

    # The typed round trip on the real server adds the condition's nil timestamps as nulls.
    recorded = copy.deepcopy(after["status"])
    for cond in recorded["conditions"]:
        for key in [k for k, v in cond.items() if v is None]:
            del cond[key]
    assert result["status"] == recorded
    assert result["spec"] == after["spec"]
    assert result["metadata"]["labels"] == after["metadata"]["labels"]


def test_smp_conditions_merge_by_type() -> None:
    pod = {"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "B"}]}}
    patch = {"status": {"conditions": [{"type": "A", "status": "True", "reason": None}]}}
    out = strategic_merge_patch(pod, patch, "Pod")
    assert out["status"]["conditions"] == [{"type": "A", "status": "True"}, {"type": "B"}]
    node = {"status": {"addresses": [{"type": "InternalIP", "address": "1"}]}}
    out = strategic_merge_patch(node, {"status": {"addresses": [{"type": "Hostname", "address": "h"}]}}, "Node")  # fmt: skip
    assert {a["type"] for a in out["status"]["addresses"]} == {"InternalIP", "Hostname"}


POD = {
    "metadata": {"name": "p", "finalizers": ["a", "b"]},
    "spec": {
        "containers": [
            {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}],
             "ports": [{"containerPort": 80, "protocol": "TCP"}]},
            {"name": "side", "image": "side:1"},
        ],
        "tolerations": [{"key": "t1", "operator": "Exists"}],
    },
}  # fmt: skip


def test_smp_containers_merge_by_name() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "side", "image": "side:2"},
                {"name": "app", "ports": [{"containerPort": 80, "protocol": "UDP"}],
                 "env": [{"name": "A", "value": None}]},
            ]
        }
    }  # fmt: skip
    before = copy.deepcopy(POD)
    out = strategic_merge_patch(POD, patch, "Pod")
    assert out["spec"]["containers"] == [  # items of the patch come in the patch's order
        {"name": "side", "image": "side:2"},
        {"name": "app", "image": "app:1", "env": [{"name": "A"}],
         "ports": [{"containerPort": 80, "protocol": "UDP"}]},
    ]  # fmt: skip
    assert POD == before
    # the same merge keys apply under a workload's pod template
    deploy = {"spec": {"template": {"spec": copy.deepcopy(POD["spec"])}}}
    out = strategic_merge_patch(deploy, {"spec": {"template": patch}}, "Deployment")
    assert [c["image"] for c in out["spec"]["template"]["spec"]["containers"]] == [
        "side:2",
        "app:1",
    ]


def test_smp_new_list_items_are_placed_like_upstream() -> None:
    # patch items keep the patch order; server-only items keep theirs; a new item goes
    # before the server-only items that follow it (mergeSortedSlice)
    out = strategic_merge_patch(POD, {"spec": {"containers": [{"name": "new"}]}}, "Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == ["new", "app", "side"]
    patch = {"spec": {"containers": [{"name": "app"}, {"name": "new"}]}}
    out = strategic_merge_patch(POD, patch, "Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == ["app", "new", "side"]


def test_smp_patch_delete_in_list() -> None:
    patch = {"spec": {"containers": [{"name": "app", "$patch": "delete"}]}}
    out = strategic_merge_patch(POD, patch, "Pod")
    assert out["spec"]["containers"] == [{"name": "side", "image": "side:1"}]
    with pytest.raises(PatchError) as err:
        strategic_merge_patch(POD, {"spec": {"containers": [{"$patch": "delete"}]}}, "Pod")
    assert "does not contain declared merge key: name" in str(err.value)


def test_smp_patch_replace_and_delete_in_maps_and_lists() -> None:
    patch: dict[str, Any] = {"spec": {"containers": [{"name": "only"}, {"$patch": "replace"}]}}
    assert strategic_merge_patch(POD, patch, "Pod")["spec"]["containers"] == [{"name": "only"}]
    patch = {"metadata": {"labels": {"$patch": "replace", "x": "1"}}}
    target = {"metadata": {"labels": {"a": "1", "b": "2"}}}
    assert strategic_merge_patch(target, patch, "Pod") == {"metadata": {"labels": {"x": "1"}}}
    patch = {"metadata": {"labels": {"$patch": "delete"}}}
    assert strategic_merge_patch(target, patch, "Pod") == {"metadata": {"labels": {}}}
    patch = {"metadata": {"labels": {"$patch": "merge", "c": "3"}}}
    merged = strategic_merge_patch(target, patch, "Pod")
    assert merged == {"metadata": {"labels": {"a": "1", "b": "2", "c": "3"}}}
    with pytest.raises(PatchError) as err:
        strategic_merge_patch(target, {"metadata": {"$patch": "bogus"}}, "Pod")
    assert err.value.code == 500


def test_smp_finalizers_union_and_delete_from_primitive_list() -> None:
    patch: dict[str, Any]
    out = strategic_merge_patch(POD, {"metadata": {"finalizers": ["b", "c"]}}, "Pod")
    assert out["metadata"]["finalizers"] == ["a", "b", "c"]
    # upstream ordering: an item only in the patch goes before the server-only items
    out = strategic_merge_patch(POD, {"metadata": {"finalizers": ["c"]}}, "Pod")
    assert out["metadata"]["finalizers"] == ["c", "a", "b"]
    # an empty list is a no-op, as upstream (null removes the field)
    out = strategic_merge_patch(POD, {"metadata": {"finalizers": []}}, "Pod")
    assert out["metadata"]["finalizers"] == ["a", "b"]
    out = strategic_merge_patch(POD, {"metadata": {"finalizers": None}}, "Pod")
    assert "finalizers" not in out["metadata"]
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zzz"]}}
    out = strategic_merge_patch(POD, patch, "Pod")
    assert out["metadata"] == {"name": "p", "finalizers": ["b"]}
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}
    with pytest.raises(PatchError) as err:
        strategic_merge_patch(POD, patch, "Pod")
    assert (err.value.code, str(err.value)) == (400, "invalid patch format of primitive list")


def test_smp_lists_without_merge_key_are_replaced() -> None:
    patch = {"spec": {"tolerations": [{"key": "t2", "operator": "Exists"}]}}
    out = strategic_merge_patch(POD, patch, "Pod")
    assert out["spec"]["tolerations"] == [{"key": "t2", "operator": "Exists"}]
    node = {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}
    out = strategic_merge_patch(node, {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}}, "Node")  # fmt: skip
    assert out["spec"]["taints"] == [{"key": "b", "effect": "NoExecute"}]
    # unknown kinds (e.g. custom resources) merge maps and replace lists
    assert "Widget" not in STRATEGIC_MERGE_KINDS
    out = strategic_merge_patch({"spec": {"items": [1, 2], "m": {"a": 1}}}, {"spec": {"items": [3], "m": {"b": 2}}}, "Widget")  # fmt: skip
    assert out == {"spec": {"items": [3], "m": {"a": 1, "b": 2}}}


def test_smp_set_element_order_and_retain_keys() -> None:
    patch: dict[str, Any] = {
        "spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "app"}]}
    }
    out = strategic_merge_patch(POD, patch, "Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == ["side", "app"]
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "side"}, {"name": "new"}, {"name": "app"}],
            "containers": [{"name": "new", "image": "n"}],
        }
    }
    out = strategic_merge_patch(POD, patch, "Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == ["side", "new", "app"]
    assert directive_keys(out) == []
    deploy = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = strategic_merge_patch(deploy, patch, "Deployment")
    assert out == {"spec": {"strategy": {"type": "Recreate"}}}
    with pytest.raises(PatchError) as err:
        bad = {"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}
        strategic_merge_patch(deploy, bad, "Deployment")
    assert (err.value.code, str(err.value)) == (400, "invalid patch format of retainKeys")


def test_smp_directives_never_reach_the_result() -> None:
    patch = {
        "metadata": {
            "labels": {"new": {"$patch": "replace", "x": 1}},
            "$deleteFromPrimitiveList/finalizers": ["a"],
            "$setElementOrder/finalizers": ["b"],
            "annotations": {"$retainKeys": ["a"], "a": "1"},
            "ownerReferences": [{"uid": "u", "$patch": "delete"}, {"uid": "v", "n": None}],
        },
        "spec": {"initContainers": [{"name": "i", "$patch": "replace"}, {"name": "j"}]},
    }
    out = strategic_merge_patch(POD, patch, "Pod")
    assert directive_keys(out) == []
    assert out["metadata"]["ownerReferences"] == [{"uid": "v"}]


def test_smp_rejects_non_object_patches_with_400() -> None:
    with pytest.raises(PatchError) as err:
        strategic_merge_patch(POD, [1], "Pod")
    assert err.value.code == 400
    assert str(err.value) == (
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    )
    assert strategic_merge_patch(POD, None, "Pod") == POD


# --------------------------------------------------------------- properties


@given(OBJECTS, OBJECTS)
def test_strategic_merge_patch_never_mutates_inputs(target: Any, patch: Any) -> None:
    before = copy.deepcopy((target, patch))
    try:
        strategic_merge_patch(target, patch, "Pod")
    except PatchError:
        pass
    assert (target, patch) == before

"""Typed field sets, comparisons, merges and removals over the built-in and CRD types."""

from __future__ import annotations

from kubesim.fieldmanager.fieldpath import to_fields_v1
from kubesim.fieldmanager.schemas import (
    UNTYPED,
    ListType,
    MapType,
    builtin_type,
    crd_type,
)
from kubesim.fieldmanager.typed import MISSING, compare, field_set, merge, remove_items

DEPLOYMENT = builtin_type("apps", "v1", "Deployment")
CONFIGMAP = builtin_type("", "v1", "ConfigMap")
C = ("f:spec", "f:template", "f:spec", "f:containers")


def containers(*items: dict[str, object]) -> dict[str, object]:
    return {"spec": {"template": {"spec": {"containers": list(items)}}}}


def test_builtin_list_semantics_come_from_the_openapi_document() -> None:
    pod_spec = builtin_type("", "v1", "Pod")
    assert isinstance(pod_spec, MapType)
    spec, declared = pod_spec.child("spec")
    assert declared and isinstance(spec, MapType)
    cs, _ = spec.child("containers")
    assert isinstance(cs, ListType) and (cs.mode, cs.keys) == ("map", ("name",))
    tol, _ = spec.child("tolerations")
    assert isinstance(tol, ListType) and tol.mode == "atomic"
    c = cs.item
    assert isinstance(c, MapType)
    ports, _ = c.child("ports")
    assert isinstance(ports, ListType) and ports.keys == ("containerPort", "protocol")
    assert ports.defaults == {"protocol": "TCP"}
    mounts, _ = c.child("volumeMounts")
    assert isinstance(mounts, ListType) and mounts.keys == ("mountPath",)
    meta, _ = pod_spec.child("metadata")
    assert isinstance(meta, MapType)
    fin, _ = meta.child("finalizers")
    assert isinstance(fin, ListType) and fin.mode == "set"
    dspec, _ = DEPLOYMENT.child("spec") if isinstance(DEPLOYMENT, MapType) else (None, False)
    assert isinstance(dspec, MapType) and isinstance(dspec.child("selector")[0], MapType)
    assert dspec.child("selector")[0].atomic  # type: ignore[union-attr]


def test_field_set_marks_list_items_and_map_values_but_not_struct_fields() -> None:
    cfg = {
        "metadata": {"labels": {"a": "1"}},
        "data": {"k": "v"},
    }
    doc = to_fields_v1(field_set(cfg, CONFIGMAP))
    assert doc == {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:a": {}}}}
    dep = containers({"name": "c", "image": "x", "ports": [{"containerPort": 80}]})
    doc = to_fields_v1(field_set(dep, DEPLOYMENT))
    item = doc["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert item == {
        ".": {},
        "f:image": {},
        "f:name": {},
        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
    }


def test_preserve_unknown_fields_data_tracks_maps_key_by_key_and_lists_whole() -> None:
    cr = crd_type({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    doc = to_fields_v1(field_set({"spec": {"a": {"b": 1}, "l": [{"x": 1}]}}, cr))
    assert doc == {"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}, "f:l": {}}}
    typed = crd_type(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "items": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["id"],
                            "items": {"type": "object", "properties": {"id": {"type": "string"}}},
                        },
                        "tags": {
                            "type": "array",
                            "x-kubernetes-list-type": "set",
                            "items": {"type": "string"},
                        },
                    },
                }
            },
        }
    )
    doc = to_fields_v1(field_set({"spec": {"items": [{"id": "a"}], "tags": ["t"]}}, typed))
    assert doc == {
        "f:spec": {
            "f:items": {'k:{"id":"a"}': {".": {}, "f:id": {}}},
            "f:tags": {'v:"t"': {}},
        }
    }
    assert crd_type(None).child("anything")[0] is UNTYPED  # type: ignore[union-attr]


def test_compare_reports_new_maps_and_items_as_added() -> None:
    old = {"data": {"a": "1", "b": "2"}}
    new = {"data": {"a": "x", "c": "3"}, "metadata": {"labels": {"l": "v"}}}
    c = compare(old, new, CONFIGMAP)
    assert c.modified == {("f:data", "f:a")}
    assert c.removed == {("f:data", "f:b")}
    assert c.added == {
        ("f:data", "f:c"),
        ("f:metadata",),
        ("f:metadata", "f:labels"),
        ("f:metadata", "f:labels", "f:l"),
    }
    assert compare(new, new, CONFIGMAP).is_same()


def test_merge_interleaves_list_map_items_and_keeps_live_ones() -> None:
    live = containers({"name": "c1", "image": "a", "imagePullPolicy": "IfNotPresent"})
    out = merge(live, containers({"name": "c2", "image": "b"}), DEPLOYMENT)
    items = out["spec"]["template"]["spec"]["containers"]
    assert [i["name"] for i in items] == ["c1", "c2"]
    out = merge(out, containers({"name": "c1", "image": "z"}), DEPLOYMENT)
    items = out["spec"]["template"]["spec"]["containers"]
    assert items[0] == {"name": "c1", "image": "z", "imagePullPolicy": "IfNotPresent"}
    # a configuration naming shared items in another order reorders them
    two = containers({"name": "b"}, {"name": "a"})
    out = merge(containers({"name": "a"}, {"name": "x"}, {"name": "b"}), two, DEPLOYMENT)
    assert [i["name"] for i in out["spec"]["template"]["spec"]["containers"]] == ["x", "b", "a"]
    # null on a map keeps the live map; an atomic selector is replaced whole
    assert merge({"data": {"a": "1"}}, {"data": None}, CONFIGMAP) == {"data": {"a": "1"}}
    sel = {"spec": {"selector": {"matchLabels": {"a": "1"}}}}
    new_sel = {"spec": {"selector": {"matchLabels": {"b": "2"}}}}
    assert merge(sel, new_sel, DEPLOYMENT) == new_sel
    assert merge(MISSING, {"data": {}}, CONFIGMAP) == {"data": {}}


def test_remove_items_drops_members_with_their_subtree_and_emptied_parents() -> None:
    obj = containers({"name": "c1", "image": "a"}, {"name": "c2", "image": "b"})
    obj["spec"]["replicas"] = 2
    out = remove_items(obj, [(*C, 'k:{"name":"c1"}'), ("f:spec", "f:replicas")], DEPLOYMENT)
    assert out == containers({"name": "c2", "image": "b"})
    assert remove_items({"data": {"a": "1"}}, [("f:data", "f:a")], CONFIGMAP) is MISSING

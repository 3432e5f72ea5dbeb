"""FieldsV1 documents and path strings, against the managedFields the apiserver recorded."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.fieldmanager.fieldpath import (
    field,
    from_fields_v1,
    item_key,
    item_value,
    path_string,
    recursive_difference,
    to_fields_v1,
)
from tests.support import transcript


def recorded_fields_v1() -> list[dict[str, Any]]:
    out = []
    for case in ("22a", "22b", "22d", "06"):
        rec = transcript(case)
        exchanges = [rec, *rec.get("more_exchanges", []), *rec.get("writes", [])]
        for ex in exchanges:
            body = ex["response"].get("body")
            if isinstance(body, dict):
                for e in body.get("metadata", {}).get("managedFields", []):
                    out.append(e["fieldsV1"])
    return out


@pytest.mark.parametrize("doc", recorded_fields_v1())
def test_round_trip_keeps_the_recorded_order_and_markers(doc: dict[str, Any]) -> None:
    # json.loads keeps the order the apiserver wrote: a round trip must reproduce it exactly
    again = to_fields_v1(from_fields_v1(doc))
    assert list(_walk(again)) == list(_walk(doc))


def _walk(doc: dict[str, Any], prefix: tuple[str, ...] = ()) -> Any:
    for k, v in doc.items():
        yield (*prefix, k)
        yield from _walk(v, (*prefix, k))


def test_member_with_children_gets_a_dot_and_elements_sort_by_kind() -> None:
    paths = {
        ("f:spec", "f:ports"),
        ("f:spec", "f:ports", item_key({"protocol": "TCP", "containerPort": 80})),
        ("f:spec", "f:ports", item_key({"protocol": "TCP", "containerPort": 80}), "f:name"),
        ("f:spec", "f:ports", item_key({"protocol": "TCP", "containerPort": 8080})),
        ("f:metadata", "f:finalizers", item_value("b")),
        ("f:metadata", "f:finalizers", item_value("a")),
    }
    doc = to_fields_v1(paths)
    assert list(doc) == ["f:metadata", "f:spec"]
    assert list(doc["f:metadata"]["f:finalizers"]) == ['v:"a"', 'v:"b"']
    ports = doc["f:spec"]["f:ports"]
    assert list(ports) == [
        ".",
        'k:{"containerPort":80,"protocol":"TCP"}',
        'k:{"containerPort":8080,"protocol":"TCP"}',
    ]
    assert ports['k:{"containerPort":80,"protocol":"TCP"}'] == {".": {}, "f:name": {}}
    assert from_fields_v1(doc) == paths


def test_path_strings_as_conflict_messages_print_them() -> None:
    containers = ("f:spec", "f:template", "f:spec", "f:containers")
    assert path_string((*containers, item_key({"name": "c1"}), "f:image")) == (
        '.spec.template.spec.containers[name="c1"].image'
    )
    port = item_key({"containerPort": 80, "protocol": "TCP"})
    assert path_string(("f:ports", port)) == '.ports[containerPort=80,protocol="TCP"]'
    assert path_string(("f:finalizers", item_value("x"))) == '.finalizers[="x"]'
    assert path_string((field("data"), field("a.b"))) == ".data.a.b"


def test_recursive_difference_cuts_whole_subtrees() -> None:
    paths = {("f:status",), ("f:status", "f:phase"), ("f:spec", "f:x"), ("f:statusx",)}
    assert recursive_difference(paths, [("f:status",)]) == {("f:spec", "f:x"), ("f:statusx",)}
    assert from_fields_v1({"f:a": "junk", "x": {}, "f:b": {}}) == {("f:a",), ("f:b",)}

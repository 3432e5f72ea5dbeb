"""Built-in index functions."""

from __future__ import annotations

import logging
from typing import Any

import orjson

from aioinformer._cache.index import (
    DEFAULT_INDEXERS,
    IndexGuard,
    by_controller_uid,
    by_field,
    by_label,
    by_namespace,
    metadata_reader,
    metadata_readers,
)
from aioinformer._core.objects import KubeObject, decode_object


def obj(
    name: str = "p",
    namespace: str | None = "default",
    *,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    spec: dict[str, Any] | None = None,
) -> KubeObject:
    meta: dict[str, Any] = {"name": name, "resourceVersion": "5", "uid": f"uid-{name}"}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels is not None:
        meta["labels"] = labels
    if owners is not None:
        meta["ownerReferences"] = owners
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec or {}}
    return decode_object(orjson.dumps(doc))


def owner(uid: str, controller: bool | None) -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "s", "uid": uid}
    if controller is not None:
        ref["controller"] = controller
    return ref


def test_defaults() -> None:
    assert dict(DEFAULT_INDEXERS) == {"namespace": by_namespace, "controller": by_controller_uid}


def test_by_namespace() -> None:
    assert tuple(by_namespace(obj(namespace="team-a"))) == ("team-a",)
    assert tuple(by_namespace(obj("node-1", namespace=None))) == ()


def test_by_controller_uid_only_takes_the_controller_reference() -> None:
    assert tuple(by_controller_uid(obj())) == ()
    assert tuple(by_controller_uid(obj(owners=[owner("u1", None)]))) == ()
    assert tuple(by_controller_uid(obj(owners=[owner("u1", False)]))) == ()
    both = obj(owners=[owner("u1", False), owner("u2", True)])
    assert tuple(by_controller_uid(both)) == ("u2",)


def test_by_label() -> None:
    app = by_label("app")
    assert tuple(app(obj(labels={"app": "web", "tier": "x"}))) == ("web",)
    assert tuple(app(obj(labels={"tier": "x"}))) == ()
    assert tuple(app(obj())) == ()
    assert tuple(app(obj(labels={"app": ""}))) == ("",)  # `app=` is a real label value


def test_by_field() -> None:
    node = by_field("spec.nodeName")
    assert tuple(node(obj(spec={"nodeName": "n1"}))) == ("n1",)
    assert tuple(node(obj(spec={}))) == ()
    assert tuple(node(obj(spec={"nodeName": None}))) == ()
    assert tuple(node(obj(spec={"nodeName": ""}))) == ()


def test_by_field_non_string_values() -> None:
    assert tuple(by_field("spec.replicas")(obj(spec={"replicas": 3}))) == ("3",)
    assert tuple(by_field("spec.paused")(obj(spec={"paused": False}))) == ("false",)
    assert tuple(by_field("spec.tags")(obj(spec={"tags": ["a", "", "b"]}))) == ("a", "b")
    assert tuple(by_field("spec.template")(obj(spec={"template": {"a": 1}}))) == ()
    assert tuple(by_field("spec.a.b")(obj(spec={"a": {"b": "deep"}}))) == ("deep",)


def test_metadata_readers_compare_every_index_input_at_once() -> None:
    same = metadata_readers([by_namespace, by_controller_uid, by_label("app"), by_label("x")])
    assert same is not None
    a = obj(labels={"app": "web"}, owners=[owner("u1", True)])
    assert same(a.metadata) == same(obj(labels={"app": "web"}, owners=[owner("u1", True)]).metadata)
    assert same(a.metadata) != same(obj(labels={"app": "db"}, owners=[owner("u1", True)]).metadata)
    assert same(a.metadata) != same(obj(labels={"app": "web"}, owners=[owner("u2", True)]).metadata)
    assert same(a.metadata) != same(obj(namespace="other", labels={"app": "web"}).metadata)
    # an index function that reads more than one metadata attribute cannot be skipped
    assert metadata_readers([by_namespace, by_field("spec.nodeName")]) is None
    assert metadata_reader(by_field("spec.nodeName")) is None
    nothing = metadata_readers([])
    assert nothing is not None and nothing(a.metadata) == nothing(obj("q").metadata)


def test_guard_leaves_out_what_is_not_a_list_of_strings(caplog: Any) -> None:
    """A custom index function that returns a bare string (its characters would become
    the values), or values that are not strings (an unhashable one would stop a store's
    writer), counts as failing: no values, counted and logged with the index and key."""
    guard = IndexGuard(logging.getLogger("test.index"))
    ok = guard.guard("ok", lambda o: [o.name, "x"])
    bare = guard.guard("bare", lambda o: o.name)
    numbers = guard.guard("numbers", lambda o: [1])
    lists = guard.guard("lists", lambda o: [["a"]])
    with caplog.at_level(logging.WARNING, "test.index"):
        assert ok(obj("p1")) == ("p1", "x")
        assert bare(obj("p1")) == () and numbers(obj("p1")) == () and lists(obj("p1")) == ()
    assert guard.errors == 3
    assert all("default/p1" in r.getMessage() for r in caplog.records)
    assert {r.getMessage().split("'")[1] for r in caplog.records} == {"bare", "numbers", "lists"}
    assert guard.guard("namespace", by_namespace) is by_namespace  # built-ins go unwrapped

"""Projections: the kept paths read back as the original's, the metadata kept whole (or
the labels and annotations named), odd shapes, bad paths and keys refused when made, one
Projection per set of paths and options, and an informer over real HTTP that caches only
the projection, plain and compact."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from aioinformer import ConfigError, InformerFactory, KubeObject, Projection, project
from aioinformer._cache.footprint import cached_bytes, totals
from aioinformer._core.compact import CompactObject
from aioinformer._core.objects import decode_object
from aioinformer._harness.workload import realistic_pod
from aioinformer.testing import KubeSim


def pod(i: int = 1, **meta: Any) -> KubeObject:
    doc = realistic_pod("default", "web", i, node="n1", phase="Running")
    doc["metadata"].update({"resourceVersion": "7", **meta})
    return decode_object(orjson.dumps(doc))


def test_the_named_paths_and_the_metadata_are_kept_and_nothing_else() -> None:
    original = pod(annotations={"a": "1"}, finalizers=["f"], generation=3)
    original = decode_object(
        orjson.dumps({**original.to_dict(), "metadata": {**original.to_dict()["metadata"],
                      "managedFields": [{"manager": "m"}]}})
    )  # fmt: skip
    assert original.managed_fields
    slim = project("spec.nodeName", "status.phase", "status.conditions")(original)
    assert type(slim) is KubeObject
    assert slim.body_dict() == {
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running", "conditions": original.field("status.conditions")},
    }
    for path in ("spec.nodeName", "status.phase", "status.conditions", "status.conditions.0"):
        assert slim.field(path) == original.field(path), path
    assert slim.field("spec.containers") is None
    assert (slim.metadata, slim.key, slim.rv, slim.api_version, slim.kind) == (
        original.metadata, original.key, original.rv, original.api_version, original.kind,
    )  # fmt: skip
    assert slim.managed_fields == b""
    assert cached_bytes(slim) * 5 < cached_bytes(original)  # (the conditions: 400 bytes)


def test_absent_paths_null_values_and_bodies_of_another_shape() -> None:
    keep = project("spec.nodeName", "status.phase", "data")
    bare = decode_object(b'{"metadata":{"name":"a","resourceVersion":"1"},"spec":{"x":1}}')
    assert keep(bare).body_dict() == {"spec": {}}
    nulls = decode_object(
        b'{"metadata":{"name":"a","resourceVersion":"1"},"spec":null,"status":{"phase":null}}'
    )
    assert keep(nulls).body_dict() == {"spec": None, "status": {"phase": None}}
    odd = decode_object(
        b'{"metadata":{"name":"a","resourceVersion":"1"},"spec":[1,2],"status":"up","data":{"k":"v"}}'
    )
    assert keep(odd).body_dict() == {"spec": [1, 2], "status": "up", "data": {"k": "v"}}
    escaped = decode_object(
        '{"metadata":{"name":"a","resourceVersion":"1"},"status":{"phase":"R\\u00e9 \\"q\\""}}'
    )
    assert keep(escaped).field("status.phase") == 'Ré "q"'


def test_annotations_can_be_dropped() -> None:
    big = {"kubectl.kubernetes.io/last-applied-configuration": "x" * 2000}
    original = pod(annotations=big, labels={"app": "web"})
    slim = project("status.phase", annotations=False)(original)
    assert slim.annotations == {} and slim.labels == {"app": "web"}
    assert project("status.phase")(original).annotations == big


def test_labels_and_annotations_can_be_narrowed_to_the_keys_named() -> None:
    """A collection of keys keeps those keys' values and nothing else (no key asked for
    that an object has: one shared empty dict); the rest of the metadata is unchanged;
    equal kept subsets are one dict (a StatefulSet's pods differ by their pod-name
    label: one dict for all of them)."""
    keep = project("status.phase", labels={"app", "tier"}, annotations=["owner"])
    one = pod(
        1,
        labels={"app": "web", "statefulset.kubernetes.io/pod-name": "web-1"},
        annotations={"owner": "me", "note": "x" * 500},
    )
    two = pod(2, labels={"app": "web", "statefulset.kubernetes.io/pod-name": "web-2"},
              annotations={"owner": "me"})  # fmt: skip
    slim_one, slim_two = keep(one), keep(two)
    assert slim_one.labels == {"app": "web"} and slim_one.annotations == {"owner": "me"}
    assert slim_one.labels is slim_two.labels and slim_one.annotations is slim_two.annotations
    for meta, whole in ((slim_one.metadata, one.metadata), (slim_two.metadata, two.metadata)):
        assert (meta.name, meta.uid, meta.resource_version, meta.owner_references) == (
            whole.name, whole.uid, whole.resource_version, whole.owner_references,
        )  # fmt: skip
    bare = keep(pod(3, labels={"other": "1"}, annotations={}))
    assert bare.labels == {} and bare.labels is keep(pod(4, labels={"x": "y"})).labels
    assert project("status.phase", labels=False)(one).labels == {}
    assert project("status.phase", labels=True)(one).labels == one.labels
    tier = keep(pod(5, labels={"app": "web", "tier": "db"}))
    assert tier.labels == {"app": "web", "tier": "db"}


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"labels": "app"}, "labels= takes True, False or a collection of keys"),
        ({"labels": None}, "labels= takes True, False or a collection of keys"),
        ({"annotations": 1}, "annotations= takes True, False or a collection of keys"),
        ({"labels": ["app", ""]}, "labels= keys are non-empty strings, not ''"),
        ({"annotations": [3]}, "annotations= keys are non-empty strings, not 3"),
    ],
)
def test_keys_that_are_not_a_collection_of_strings_are_refused(
    option: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        project("status.phase", **option)


def test_equal_small_kept_bodies_are_one_bytes_object() -> None:
    """The pods of one node in one phase keep one body between them; a kept body over
    256 bytes (the conditions) is each object's own, and equal to what was kept."""
    keep = project("spec.nodeName", "status.phase")
    a, b = keep(pod(1)), keep(pod(2))
    assert a.body == b'{"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}'
    assert a.body is b.body
    assert keep(pod(3, labels={"x": "y"})).body is a.body
    other = decode_object(orjson.dumps({**pod(4).to_dict(), "spec": {"nodeName": "n2"}}))
    assert keep(other).body == b'{"spec":{"nodeName":"n2"},"status":{"phase":"Running"}}'
    assert keep(other).body is not a.body
    wide = project("status.conditions")
    c, d = wide(pod(1)), wide(pod(2))
    assert len(c.body) > 256 and c.body == d.body and c.body is not d.body
    assert c.field("status.conditions") == pod(1).field("status.conditions")


def test_objects_without_annotations_share_one_empty_dict() -> None:
    slim = project("status.phase", annotations=False)
    one, two = slim(pod(1, annotations={"a": "1"})), slim(pod(2, annotations={"b": "2"}))
    assert one.annotations == {} and one.annotations is two.annotations


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        ((), "at least one field path"),
        (("",), "'' is not a dotted field path"),
        (("spec..a",), "'spec..a' is not a dotted field path"),
        (("spec.",), "'spec.' is not a dotted field path"),
        ((" spec",), "' spec' is not a dotted field path"),
        (("metadata.labels",), "metadata is always kept"),
        (("kind",), "kind is always kept"),
        (("spec.containers.0.image",), r"keep the list \('spec.containers'\)"),
        ((3,), "a field path is a str, not int"),
    ],
)
def test_bad_paths_are_refused_when_the_projection_is_made(
    paths: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        project(*paths)


def test_one_projection_per_set_of_paths() -> None:
    one = project("status.phase", "spec.nodeName")
    assert project("spec.nodeName", "status.phase") is one
    assert project("spec", "spec.nodeName").paths == ("spec",)  # covered: left out
    assert project("spec.nodeName", "spec").paths == ("spec",)
    assert project("status.phase", annotations=False) is not project("status.phase")
    assert isinstance(one, Projection) and repr(one) == "project('spec.nodeName', 'status.phase')"
    narrow = project("status.phase", labels=["tier", "app"], annotations=False)
    assert project("status.phase", labels=("app", "tier", "app"), annotations=False) is narrow
    assert narrow is not project("status.phase", labels=["app"], annotations=False)
    assert repr(narrow) == "project('status.phase', annotations=False, labels=['app', 'tier'])"
    assert narrow.labels == frozenset({"app", "tier"}) and narrow.annotations is False


@pytest.mark.parametrize("compact", [False, True])
async def test_an_informer_caches_the_projection(sim: KubeSim, compact: bool) -> None:
    """Over real HTTP, in both modes: every cached pod is the server's pod projected, and
    two informers asked for with equal projections share one cache."""
    sim.create_many("pods", (realistic_pod("default", "web", i) for i in range(1030)), "default")
    keep = ("spec.nodeName", "spec.containers", "status.phase")  # (over 64 bytes: compacted)
    async with sim.api_client() as api:
        async with InformerFactory(api, compact=compact) as factory:
            informer = factory.informer("v1", "pods", transform=project(*keep))
            assert factory.informer("v1", "pods", transform=project(*reversed(keep))) is informer
            await factory.wait_for_sync(timeout=30)
            made = sim.patch(
                "pods", "web-7", {"status": {"phase": "Failed"}}, "default", subresource="status"
            )
            snap = await informer.wait_for_rv(made["metadata"]["resourceVersion"], timeout=10)
            assert snap.get("default/web-7").field("status.phase") == "Failed"
            for obj in snap.list():
                server = sim.get("pods", obj.name, "default")
                want = {
                    top: {k: v for k, v in server[top].items() if f"{top}.{k}" in keep}
                    for top in ("spec", "status")
                }
                assert obj.body_dict() == want, obj.key
                assert obj.metadata == decode_object(orjson.dumps(server)).metadata
            stats = informer.statistics()
            assert (stats.cached_bytes, stats.plain_bytes) == totals(snap.list())
            assert stats.plain_bytes / stats.objects < 2000  # (of 3 KB)
            compacted = sum(type(o) is CompactObject for o in snap.list())
            assert compacted >= (30 if compact else 0) and (compacted > 0) == compact

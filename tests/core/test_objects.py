"""KubeObject decoding (_objects.py) against the kube-apiserver v1.28 transcripts in
tests/kubesim/conformance, plus the error cases, a round-trip property and the memory/GC
contract (exact-size bytes, nothing retained from the line, nothing GC-tracked)."""

from __future__ import annotations

import copy
import gc
import json
import sys
import tracemalloc
from typing import Any, TypedDict

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aioinformer._core.objects as objects_module
from aioinformer._core.errors import DecodeError
from aioinformer._core.objects import (
    KubeObject,
    ObjectMeta,
    OwnerReference,
    decode_event,
    decode_list,
    decode_object,
    drop_managed_fields,
)
from aioinformer._harness.workload import realistic_pod, statefulset_uid
from tests.support import transcript


def wire(value: Any) -> bytes:
    """JSON as the API server writes it: compact, one line."""
    return json.dumps(value, separators=(",", ":")).encode()


def events(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [e["line"] for e in record["response"]["events"]]


def with_type(item: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, **item}


def pod_doc(ordinal: int = 0, *, node: str | None = "node-1") -> dict[str, Any]:
    """A realistic pod as the server stores it (uid, resourceVersion, managedFields)."""
    pod = realistic_pod("ns1", "web", ordinal, node=node, phase="Running")
    meta = pod["metadata"]
    meta.update(
        uid=f"00000000-0000-0000-0000-{ordinal:012d}",
        resourceVersion=str(1000 + ordinal),
        creationTimestamp="2026-11-29T10:00:00Z",
        managedFields=[
            {
                "manager": "kube-controller-manager",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-11-29T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
            }
        ],
    )
    return pod


# -- recorded watch events and lists ------------------------------------------------------


def test_06_watch_events_round_trip() -> None:
    """06-watch-from-list-rv: ADDED, MODIFIED (label, status patches, deletion start),
    DELETED and two BOOKMARKs; every object round-trips, managedFields included."""
    lines = events(transcript("06-watch-from-list-rv"))
    decoded = [decode_event(wire(line)) for line in lines]
    assert [t for t, _, _ in decoded] == [line["type"] for line in lines]
    for line, (kind, obj, status) in zip(lines, decoded, strict=True):
        assert status is None and obj is not None
        original = line["object"]
        assert obj.rv == int(original["metadata"]["resourceVersion"])
        if kind == "BOOKMARK":
            continue
        assert obj.to_dict() == original
        assert set(obj.to_dict()["metadata"]) == set(original["metadata"])
        assert (obj.api_version, obj.kind, obj.key) == ("v1", "Pod", "tx06/w1")
        assert obj.uid == original["metadata"]["uid"]
        assert (
            obj.managed_fields
            and orjson.loads(obj.managed_fields) == (original["metadata"]["managedFields"])
        )
        assert obj.body_dict() == {k: original[k] for k in ("spec", "status")}
    deleted = decoded[5][1]
    assert decoded[5][0] == "DELETED" and deleted is not None
    assert deleted.deletion_timestamp == "2026-11-29T19:22:08Z"
    assert deleted.metadata.deletion_grace_period_seconds is not None
    assert [obj.rv for _, obj, _ in decoded if obj] == [207, 208, 209, 210, 211, 212, 213, 213]


def test_06_list_before_watch() -> None:
    """06-watch-from-list-rv list_before_watch: PodList items get kind/apiVersion filled."""
    body = transcript("06-watch-from-list-rv")["list_before_watch"]["response"]["body"]
    items, rv, cont = decode_list(wire(body))
    assert rv == "206" and cont is None
    assert [o.key for o in items] == ["tx06/existing-1", "tx06/existing-2"]
    for obj, item in zip(items, body["items"], strict=True):
        assert (obj.api_version, obj.kind) == ("v1", "Pod")
        assert obj.to_dict() == with_type(item, "v1", "Pod")


def test_02_paginated_list_continue_token() -> None:
    """02-list-paginated: a non-final page carries its continue token."""
    body = transcript("02-list-paginated")["response"]["body"]
    items, rv, cont = decode_list(wire(body))
    assert rv == "199" and cont == body["metadata"]["continue"] and len(items) == 2


def test_07a_pod_bookmark_is_metadata_only() -> None:
    """07a-watch-rv0: a Pod BOOKMARK ({"spec":{"containers":null},"status":{}}) decodes to
    a metadata-only object with the RV and no name."""
    line = next(e for e in events(transcript("07a-watch-rv0")) if e["type"] == "BOOKMARK")
    kind, obj, status = decode_event(wire(line))
    assert kind == "BOOKMARK" and status is None and obj is not None
    assert (obj.rv, obj.name, obj.key, obj.body, obj.managed_fields) == (215, "", "", b"{}", b"")
    assert obj.annotations == {} and obj.metadata.resource_version == "215"


def test_09a_initial_events_end_bookmark() -> None:
    """09a-watchlist-rv-unset: the streaming list ends with an annotated BOOKMARK."""
    lines = events(transcript("09a-watchlist-rv-unset"))
    decoded = [decode_event(wire(line)) for line in lines]
    assert [t for t, _, _ in decoded[:-1]] == ["ADDED"] * (len(lines) - 1)
    kind, obj, _ = decoded[-1]
    assert kind == "BOOKMARK" and obj is not None
    assert obj.annotations == {"k8s.io/initial-events-end": "true"}
    assert obj.field("metadata.annotations.k8s.io/initial-events-end") == "true"
    assert obj.rv == 1061


def test_08a_error_event_gives_status() -> None:
    """08a-watch-too-old-rv-watchcache: HTTP 200 + one ERROR event carrying a 410 Status."""
    (line,) = events(transcript("08a-watch-too-old-rv-watchcache"))
    kind, obj, status = decode_event(wire(line))
    assert (kind, obj) == ("ERROR", None)
    assert status == line["object"]
    assert status is not None and status["code"] == 410 and status["reason"] == "Expired"


def test_16b_metadata_only_events() -> None:
    """16b-watch-partialobjectmetadata: PartialObjectMetadata objects share the empty body."""
    lines = events(transcript("16b-watch-partialobjectmetadata"))
    assert {line["type"] for line in lines} == {"MODIFIED", "BOOKMARK"}
    for line in lines:
        kind, obj, _ = decode_event(wire(line))
        assert obj is not None
        assert (obj.kind, obj.api_version) == ("PartialObjectMetadata", "meta.k8s.io/v1")
        assert obj.body is decode_event(wire(line))[1].body  # type: ignore[union-attr]
        assert obj.body == b"{}" and obj.body_dict() == {}
        if kind != "BOOKMARK":
            assert obj.to_dict() == line["object"]
            assert obj.key == "tx01/web-1"


def test_16a_partial_object_metadata_list() -> None:
    """16a-list-partialobjectmetadata: items carry their own kind/apiVersion and no body."""
    body = transcript("16a-list-partialobjectmetadata")["response"]["body"]
    items, rv, cont = decode_list(wire(body))
    assert (rv, cont, len(items)) == ("271", None, len(body["items"]))
    for obj, item in zip(items, body["items"], strict=True):
        assert obj.kind == "PartialObjectMetadata" and obj.body == b"{}"
        assert obj.to_dict() == item


def test_13b_custom_resource_list_and_events() -> None:
    """13b-podset-list-watch: a CR list has "continue": "" (None here) and typed items;
    the watch events round-trip; the CR bookmark has only a resourceVersion."""
    record = transcript("13b-podset-list-watch")
    body = record["response"]["body"]
    items, rv, cont = decode_list(wire(body))
    assert (rv, cont) == ("264", None)
    assert [o.to_dict() for o in items] == body["items"]
    assert items[0].kind == "PodSet" and items[0].generation == 1
    assert items[0].field("spec.replicas") == 2
    for line in events(record["watch"]):
        kind, obj, _ = decode_event(wire(line))
        assert obj is not None and obj.api_version == "example.aioinformer.dev/v1"
        if kind == "BOOKMARK":
            assert (obj.rv, obj.body, obj.name) == (268, b"{}", "")
        else:
            assert obj.to_dict() == line["object"]
    spec_bump = [
        e for e in events(record["watch"]) if e["object"]["metadata"].get("generation") == 2
    ]
    assert decode_event(wire(spec_bump[0]))[1].generation == 2  # type: ignore[union-attr]


def test_12_finalizers_and_owner_refs_round_trip() -> None:
    """12-delete-preconditions-finalizers: finalizers (a tuple here, a list on the wire)."""
    record = transcript("12-delete-preconditions-finalizers")
    with_finalizers = [
        line
        for line in events(record)
        if line["type"] != "BOOKMARK" and line["object"]["metadata"].get("finalizers")
    ]
    assert with_finalizers
    for line in with_finalizers:
        obj = decode_event(wire(line))[1]
        assert obj is not None
        assert obj.finalizers == tuple(line["object"]["metadata"]["finalizers"])
        assert obj.to_dict() == line["object"]


# -- accessors ----------------------------------------------------------------------------


def test_drop_managed_fields() -> None:
    original = pod_doc()
    obj = decode_object(wire(original))
    dropped = drop_managed_fields(obj)
    assert obj.managed_fields and dropped.managed_fields == b""
    expected = copy.deepcopy(original)
    del expected["metadata"]["managedFields"]
    assert dropped.to_dict() == expected
    assert (dropped.metadata, dropped.body, dropped.rv) == (obj.metadata, obj.body, obj.rv)
    assert drop_managed_fields(dropped) is dropped
    assert obj.to_dict() == original  # the original object is unchanged


def test_field_paths() -> None:
    original = pod_doc(3)
    original["status"]["nominatedNodeName"] = None
    obj = decode_object(wire(original))
    assert obj.field("metadata.name") == "web-3"
    assert obj.field("metadata.namespace") == "ns1"
    assert obj.field("metadata.resourceVersion") == "1003"
    assert obj.field("metadata.labels.app") == "web"
    assert obj.field("metadata.labels.app.kubernetes.io/name") == "web"
    assert obj.field("metadata.labels") == original["metadata"]["labels"]
    assert obj.field("metadata.labels.missing", "d") == "d"
    assert obj.field("metadata.ownerReferences.0.uid") == statefulset_uid("ns1", "web")
    assert obj.field("metadata.managedFields.0.manager") == "kube-controller-manager"
    assert obj.field("metadata.deletionTimestamp", "none") == "none"
    assert obj.field("metadata.uid") == original["metadata"]["uid"]
    assert obj.field("metadata.finalizers", "none") == "none"
    assert obj.field("metadata.ownerReferences") == original["metadata"]["ownerReferences"]
    assert obj.field("metadata.nonsense", "none") == "none"
    assert obj.field("metadata.generation", "absent") == "absent"
    assert obj.field("metadata") == original["metadata"]
    assert (obj.field("apiVersion"), obj.field("kind")) == ("v1", "Pod")
    assert obj.field("spec.nodeName") == "node-1"
    assert obj.field("status.phase") == "Running"
    assert obj.field("spec.containers.0.image") == "registry.example.com/team/app:1.24.3"
    assert obj.field("spec.containers.1.image", "d") == "d"
    assert obj.field("spec.securityContext") == {"runAsNonRoot": True, "fsGroup": 2000}
    assert obj.field("spec.securityContext.fsGroup") == 2000
    assert obj.field("status.nominatedNodeName", "d") is None  # JSON null is a value
    assert obj.field("spec.missing.deeper", "d") == "d"
    assert obj.field("spec.hostname.deeper", "d") == "d"  # through a string
    assert obj.field("spec.containers.image", "d") == "d"  # through a list, no index
    assert obj.field("nothing", "d") == "d"
    for _ in range(2):  # the second call uses the cached path decoder
        assert obj.field("status.podIP") == original["status"]["podIP"]


class _Probe(TypedDict):
    httpGet: dict[str, Any]


def test_typed_fields_are_converted_strictly() -> None:
    original = pod_doc(3)
    original["status"]["nominatedNodeName"] = None
    obj = decode_object(wire(original))
    fs_group: int = obj.field("spec.securityContext.fsGroup", 0, type=int)
    assert fs_group == 2000
    assert obj.field("spec.missing", 7, type=int) == 7
    assert obj.field("status.nominatedNodeName", "d", type=str) == "d"  # null: the default
    assert obj.field("spec.missing", type=str) is None
    assert obj.field("metadata.labels", {}, type=dict[str, str]) == original["metadata"]["labels"]
    assert obj.field("metadata.generation", 0, type=int) == 0
    assert obj.field("kind", type=str) == "Pod"
    security = obj.field("spec.securityContext", type=dict[str, int | bool])
    assert security == {"runAsNonRoot": True, "fsGroup": 2000}
    with pytest.raises(DecodeError, match=r"ns1/web-3: spec.nodeName: Expected `int`, got `str`"):
        obj.field("spec.nodeName", 0, type=int)
    with pytest.raises(DecodeError, match="Expected `int`, got `bool`"):
        obj.field("spec.securityContext.runAsNonRoot", 0, type=int)  # no bool for an int
    with pytest.raises(DecodeError, match="Object missing required field `httpGet`"):
        obj.field("spec.securityContext", type=_Probe)


def test_metadata_fields_never_decode_the_body() -> None:
    obj = msgspec.structs.replace(decode_object(wire(pod_doc())), body=b"<not json>")
    assert obj.field("metadata.name") == "web-0"
    assert obj.field("metadata.labels.app") == "web"
    assert obj.field("kind") == "Pod"
    with pytest.raises(msgspec.DecodeError):  # body paths do read the body
        obj.field("spec.nodeName")


def test_properties_and_controller_ref() -> None:
    obj = decode_object(wire(pod_doc()))
    assert (obj.name, obj.namespace, obj.key) == ("web-0", "ns1", "ns1/web-0")
    assert obj.labels["statefulset.kubernetes.io/pod-name"] == "web-0"
    assert obj.annotations == {"prometheus.io/scrape": "true"}
    assert obj.generation == 0 and obj.finalizers == () and obj.deletion_timestamp is None
    ref = obj.controller_ref
    assert ref == OwnerReference(
        "apps/v1", "StatefulSet", "web", statefulset_uid("ns1", "web"), True, True
    )
    assert obj.owner_references == (ref,)

    other = pod_doc()
    refs = other["metadata"]["ownerReferences"]
    refs.insert(0, {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u1"})
    refs[1] = {**refs[1], "controller": False}
    assert decode_object(wire(other)).controller_ref is None
    refs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "rs",
            "uid": "u2",
            "controller": True,
        }
    )
    assert decode_object(wire(other)).controller_ref.uid == "u2"  # type: ignore[union-attr]


def test_cluster_scoped_key_and_wire_names() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1", "resourceVersion": "5", "uid": "n"},
        "spec": {},
    }
    obj = decode_object(wire(node))
    assert (obj.key, obj.namespace, obj.body) == ("node-1", "", b'{"spec":{}}')
    ref = OwnerReference(
        "apps/v1", "ReplicaSet", "rs", "u", controller=True, block_owner_deletion=True
    )
    assert orjson.loads(msgspec.json.encode(ref)) == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "rs",
        "uid": "u",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    meta = ObjectMeta(name="a", resource_version="1", generate_name="a-")
    assert orjson.loads(msgspec.json.encode(meta)) == {
        "name": "a",
        "resourceVersion": "1",
        "generateName": "a-",
    }


def test_decode_object_accepts_str_and_raw() -> None:
    text = wire(pod_doc()).decode()
    a = decode_object(text)
    b = decode_object(msgspec.Raw(text.encode()))
    assert a == b == decode_object(text.encode())


def test_to_model_v1pod() -> None:
    from kubernetes_asyncio.client import V1Pod

    model = decode_object(wire(pod_doc(2))).to_model("V1Pod")
    assert isinstance(model, V1Pod)
    assert model.metadata.name == "web-2" and model.metadata.namespace == "ns1"
    assert [c.name for c in model.spec.containers] == ["app"]
    assert model.spec.containers[0].ports[0].container_port == 8080
    assert model.status.phase == "Running"


def test_objects_are_immutable_and_body_dict_fresh() -> None:
    obj = decode_object(wire(pod_doc()))
    with pytest.raises(AttributeError):
        obj.rv = 1  # type: ignore[misc]
    first = obj.body_dict()
    first["spec"]["nodeName"] = "changed"
    assert obj.body_dict()["spec"]["nodeName"] == "node-1"
    assert obj.field("spec.nodeName") == "node-1"


@pytest.mark.parametrize(
    "extra",
    [
        {"data": {"a": "1"}, "binaryData": {"b": "AA=="}, "immutable": True},  # ConfigMap
        {"type": "Opaque", "stringData": {"s": "x"}},  # Secret
        {"rules": [{"verbs": ["get"]}]},  # Role: the generic path
        {"spec": None, "status": None},
        {},
    ],
)
def test_other_top_level_fields_round_trip(extra: dict[str, Any]) -> None:
    obj_in = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "x", "resourceVersion": "9"}}
    obj_in.update(extra)
    obj = decode_object(wire(obj_in))
    assert obj.to_dict() == obj_in and obj.body_dict() == extra
    assert sys.getsizeof(obj.body) == sys.getsizeof(b"") + len(obj.body)  # exact size
    _, from_event, _ = decode_event(wire({"type": "ADDED", "object": obj_in}))
    assert from_event == obj


# -- errors -------------------------------------------------------------------------------

_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "a", "resourceVersion": "1"},
}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"type":"ADDED","object":{', "not valid JSON"),
        (b"", "not valid JSON"),
        (b"[1, 2]", "not a watch event"),
        (b'"ADDED"', "not a watch event"),
        (b'{"object":{}}', "not a watch event"),
        (b'{"type":"ADDED"}', "without an object"),
        (b'{"type":"ADDED","object":null}', "without an object"),
        (wire({"type": "FOO", "object": _POD}), "unknown watch event type 'FOO'"),
        (wire({"type": "ADDED", "object": {"kind": "Pod"}}), "without metadata"),
        (
            wire({"type": "ADDED", "object": {"metadata": {"resourceVersion": "1"}}}),
            "without metadata.name",
        ),
        (wire({"type": "ADDED", "object": {"metadata": {"name": "a"}}}), "resourceVersion"),
        (
            wire(
                {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "abc"}}}
            ),
            "'abc' is not an integer",
        ),
        (
            wire(
                {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "1_0"}}}
            ),
            "not an integer",
        ),
        (
            wire({"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": 5}}}),
            "Expected `str`",
        ),
        (
            wire({"type": "ADDED", "object": {**_POD, "rules": [], "metadata": {"name": "a"}}}),
            "resourceVersion",
        ),  # the generic path checks the same
        (wire({"type": "BOOKMARK", "object": {"metadata": {}}}), "resourceVersion"),
    ],
)
def test_decode_event_errors(line: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message) as info:
        decode_event(line)
    assert len(str(info.value)) < 200


def test_error_messages_never_include_the_line() -> None:
    secret = "x" * 500
    bad = [
        b'{"type":"ADDED","object":{"metadata":{"name":"' + secret.encode(),
        wire({"type": "NOPE" + secret, "object": _POD}),
        wire({"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": secret}}}),
    ]
    for line in bad:
        with pytest.raises(DecodeError) as info:
            decode_event(line)
        assert secret not in str(info.value) and len(str(info.value)) < 200


def test_owner_references_shared_by_their_bytes_and_validated() -> None:
    """Equal ownerReferences (siblings, next versions) give one shared tuple; a bad one is
    a DecodeError on every path, also after a good one was seen."""
    owners = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-rs"}]
    owners[0]["controller"] = True

    def meta(name: str, refs: Any) -> dict[str, Any]:
        return {"name": name, "namespace": "ns", "resourceVersion": "3", "ownerReferences": refs}

    a = decode_object(wire({**_POD, "metadata": meta("a", owners)}))
    _, b, _ = decode_event(
        wire({"type": "MODIFIED", "object": {**_POD, "metadata": meta("b", owners)}})
    )
    assert b is not None and a.owner_references is b.owner_references
    assert a.controller_ref is not None and a.controller_ref.uid == "u-rs"
    assert decode_object(wire({**_POD, "metadata": meta("c", [])})).owner_references == ()
    for bad in ([{"kind": "ReplicaSet"}], {"uid": "x"}, [{**owners[0], "uid": 5}]):
        with pytest.raises(DecodeError, match="ownerReferences"):
            decode_object(wire({**_POD, "metadata": meta("d", bad)}))
        with pytest.raises(DecodeError, match="ownerReferences"):
            decode_event(wire({"type": "ADDED", "object": {**_POD, "metadata": meta("d", bad)}}))


def test_decode_object_and_list_errors() -> None:
    with pytest.raises(DecodeError):
        decode_object(b"{")
    with pytest.raises(DecodeError):
        decode_object(b"[]")
    with pytest.raises(DecodeError):
        decode_object(wire({"metadata": {"name": "a"}}))
    with pytest.raises(DecodeError):
        decode_list(b"{")
    with pytest.raises(DecodeError):
        decode_list(b'{"items": 3}')
    with pytest.raises(DecodeError, match="resourceVersion"):
        decode_list(wire({"kind": "PodList", "items": [{"metadata": {"name": "a"}}]}))
    assert decode_list(b'{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":null}') == (
        [],
        "7",
        None,
    )


def test_a_3_mib_line_decodes() -> None:
    big = pod_doc()
    big["metadata"]["annotations"]["huge"] = "a" * (3 << 20)
    line = wire({"type": "MODIFIED", "object": big})
    assert len(line) > 3 << 20
    obj = decode_event(line)[1]
    assert obj is not None and len(obj.annotations["huge"]) == 3 << 20
    assert obj.to_dict() == big
    generic = {**pod_doc(), "blob": ["b" * 1024] * 3072}  # the dict[str, Raw] path
    obj = decode_event(wire({"type": "ADDED", "object": generic}))[1]
    assert obj is not None and obj.to_dict() == generic


# -- memory and GC contract ---------------------------------------------------------------


def test_decoded_object_does_not_keep_the_line_alive() -> None:
    for line in (
        wire({"type": "MODIFIED", "object": pod_doc()}),
        wire({"type": "ADDED", "object": {**pod_doc(), "rules": []}}),
    ):
        refs = sys.getrefcount(line)
        obj = decode_event(line)[1]
        assert sys.getrefcount(line) == refs
        assert obj is not None
        for data in (obj.body, obj.managed_fields):
            assert type(data) is bytes
            assert sys.getsizeof(data) == sys.getsizeof(b"") + len(data)
        assert len(obj.body) + len(obj.managed_fields) < len(line)


@pytest.mark.parametrize("extra", [{}, {"data": {"k": "v" * 3000}}, {"rules": ["r" * 3000]}])
def test_kept_bytes_are_allocated_at_exact_size(extra: dict[str, Any]) -> None:
    """getsizeof cannot see an over-allocated buffer (msgspec's encode output is ~1.5x its
    length): tracemalloc can."""
    lines = [wire({"type": "ADDED", "object": {**pod_doc(i), **extra}}) for i in range(200)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        objects = [decode_event(line)[1] for line in lines]
        kept = [(o.body, o.managed_fields) for o in objects if o is not None]
        del objects
        objects_module._SHARED_MAPS.clear()  # (the labels and their strings, kept to share)
        objects_module._STRINGS.clear()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    exact = sum(sys.getsizeof(b) + sys.getsizeof(m) for b, m in kept)
    assert exact <= retained < exact * 1.05 + 20_000


def test_decoded_objects_are_not_gc_tracked() -> None:
    obj = decode_event(wire({"type": "MODIFIED", "object": pod_doc()}))[1]
    assert obj is not None
    gc.collect()  # CPython untracks tuples of untracked items during a collection
    parts = [
        obj,
        obj.metadata,
        obj.labels,
        obj.annotations,
        obj.owner_references,
        *obj.owner_references,
        obj.body,
        obj.managed_fields,
        obj.key,
    ]
    assert [p for p in parts if gc.is_tracked(p)] == []
    finalized = decode_object(wire({**_POD, "metadata": {**_POD["metadata"], "finalizers": ["f"]}}))
    gc.collect()
    assert not gc.is_tracked(finalized.finalizers)

    lines = [wire({"type": "ADDED", "object": pod_doc(i)}) for i in range(1000)]
    gc.collect()
    before = len(gc.get_objects())
    kept = [decode_event(line)[1] for line in lines]
    gc.collect()
    assert len(gc.get_objects()) - before < 20  # 1000 objects, ~1 tracked (the list)
    assert len(kept) == 1000


# -- round-trip property ------------------------------------------------------------------

_json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_text = st.text(min_size=1, max_size=30)
_top_names = st.sampled_from(
    [
        "spec",
        "status",
        "data",
        "binaryData",
        "stringData",
        "type",
        "immutable",
        "rules",
        "subsets",
        "binary_data",
        "x",
        "",
    ]
)
_owner = st.builds(
    lambda av, kind, name, uid, ctl, block: {
        "apiVersion": av,
        "kind": kind,
        "name": name,
        "uid": uid,
        **({"controller": True} if ctl else {}),
        **({"blockOwnerDeletion": True} if block else {}),
    },
    _text,
    _text,
    _text,
    _text,
    st.booleans(),
    st.booleans(),
)


_META_KEYS = ["name", "namespace", "uid", "resourceVersion", "generation", "labels",
              "annotations", "ownerReferences", "finalizers", "deletionTimestamp",
              "creationTimestamp", "generateName", "deletionGracePeriodSeconds", "selfLink",
              "managedFields"]  # fmt: skip


_segment = _text.filter(lambda s: "/" not in s and s not in (".", ".."))  # (a valid name)


@st.composite
def kube_objects(draw: st.DrawFn) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": draw(_segment),
        "resourceVersion": str(draw(st.integers(min_value=1, max_value=2**62))),
    }
    optional = {
        "namespace": _segment,
        "uid": _text,
        "generateName": _text,
        "generation": st.integers(min_value=1, max_value=2**40),
        "labels": st.dictionaries(st.text(max_size=40), st.text(max_size=40), min_size=1),
        "annotations": st.dictionaries(st.text(max_size=40), st.text(), min_size=1),
        "ownerReferences": st.lists(_owner, min_size=1, max_size=3),
        "finalizers": st.lists(_text, min_size=1, max_size=3),
        "creationTimestamp": _text,
        "deletionTimestamp": _text,
        "deletionGracePeriodSeconds": st.integers(min_value=0, max_value=3600),
        "managedFields": st.lists(st.dictionaries(st.text(max_size=8), _json), max_size=2),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            meta[key] = draw(strategy)
    obj: dict[str, Any] = {}
    if draw(st.booleans()):
        obj["apiVersion"] = draw(_text)
    if draw(st.booleans()):
        obj["kind"] = draw(_text)
    obj["metadata"] = meta
    obj.update(draw(st.dictionaries(_top_names, _json, max_size=4)))
    return obj


@settings(max_examples=300, deadline=None)
@given(kube_objects())
def test_round_trip_property(obj: dict[str, Any]) -> None:
    decoded = decode_object(orjson.dumps(obj))
    assert decoded.to_dict() == obj
    rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    assert decoded.body_dict() == rest
    kind, from_event, _ = decode_event(orjson.dumps({"type": "MODIFIED", "object": obj}))
    assert kind == "MODIFIED" and from_event == decoded
    for name in rest:
        if name:
            assert decoded.field(name) == rest[name]
    for key, value in obj["metadata"].items():
        assert decoded.field(f"metadata.{key}") == value
    for key in set(_META_KEYS) - set(obj["metadata"]):
        assert decoded.field(f"metadata.{key}", "absent") == "absent"
    for key, value in obj["metadata"].get("labels", {}).items():
        if key:  # "metadata.labels." names the whole map
            assert decoded.field(f"metadata.labels.{key}") == value
    assert isinstance(decoded, KubeObject)


def test_equal_labels_share_one_dict_and_strings_are_shared_across_objects() -> None:
    """Memory: a ReplicaSet's pods (equal labels) share one dict; a StatefulSet's pods
    (labels that differ by the pod's name and index) share every other key and value, and
    the pod-name label is the object's name itself; a bad label is still a clear error."""
    objects_module._SHARED_MAPS.clear()  # (else pod 1's labels may be a dict decoded earlier)
    first, second = (decode_event(wire({"type": "ADDED", "object": pod_doc(i)}))[1] for i in (1, 2))
    assert first is not None and second is not None
    assert first.labels == pod_doc(1)["metadata"]["labels"]  # (nothing lost)
    assert first.labels is not second.labels
    assert first.labels["statefulset.kubernetes.io/pod-name"] is first.name
    for (k1, v1), (k2, v2) in zip(first.labels.items(), second.labels.items(), strict=True):
        assert k1 is k2
        assert (v1 is v2) == (v1 == v2)
    assert first.annotations is second.annotations  # (equal bytes: one dict)
    assert first.metadata.creation_timestamp is second.metadata.creation_timestamp
    twin = pod_doc(3)
    twin["metadata"]["labels"] = dict(pod_doc(1)["metadata"]["labels"])
    decoded = decode_event(wire({"type": "ADDED", "object": twin}))[1]
    assert decoded is not None and decoded.labels is first.labels
    bad = pod_doc(4)
    bad["metadata"]["labels"] = {"app": 1}
    with pytest.raises(DecodeError, match="labels"):
        decode_event(wire({"type": "ADDED", "object": bad}))
    none = pod_doc(5)
    del none["metadata"]["labels"]
    without = decode_event(wire({"type": "ADDED", "object": none}))[1]
    assert without is not None and without.labels == {}

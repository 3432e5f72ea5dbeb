"""Field selectors: parsing, matching, escaping, the apiserver's error texts, and the fields
each kind's strategy can be selected by."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.apiextensions.customresource import CUSTOM_RESOURCE_STRATEGY
from kubesim.apis.builtin import builtin_registry
from kubesim.errors import SelectorError
from kubesim.machinery.fields import FieldSelector
from kubesim.machinery.labels import LabelSelector
from kubesim.registry.resource import ResourceType
from tests.support import transcript


def served(plural: str, group: str, *, namespaced: bool = True) -> ResourceType:
    """The built-in type serving ``plural.group``, else a custom one."""
    for rt in builtin_registry().all():
        if (rt.group, rt.plural) == (group, plural):
            return rt
    return ResourceType(
        group, "v1", plural, plural[:-1], plural[:-1].title(), namespaced, custom=True,
        strategy=CUSTOM_RESOURCE_STRATEGY,
    )  # fmt: skip


def supported_field_labels(plural: str, group: str, *, namespaced: bool = True) -> frozenset[str]:
    """The field labels the kind's strategy accepts."""
    rt = served(plural, group, namespaced=namespaced)
    return rt.strategy.field_labels(rt)


def object_fields(plural: str, group: str, obj: dict[str, Any]) -> dict[str, str]:
    """The field set the kind's strategy filters a stored ``obj`` with."""
    rt = served(plural, group)
    return rt.strategy.selectable_fields(rt, obj)


def check_field_selector(plural: str, group: str, selector: FieldSelector) -> None:
    """The kind's strategy's check of a field selector (SelectorError when refused)."""
    rt = served(plural, group)
    rt.strategy.field_selector(rt, selector)


FIELD_TABLE = [
    ("", {}, True),
    ("a=b", {"a": "b"}, True),
    ("a==b", {"a": "b"}, True),
    ("a=b", {"a": "c"}, False),
    ("a!=b", {"a": "c"}, True),
    ("a!=b", {"a": "b"}, False),
    ("a=", {}, True),  # a missing field reads as ""
    ("a!=", {}, False),
    ("a!=x", {}, True),
    ("a=b,c!=d", {"a": "b", "c": "e"}, True),
    ("a=b,c!=d", {"a": "b", "c": "d"}, False),
    (r"a=x\,y", {"a": "x,y"}, True),
    (r"a=x\=y", {"a": "x=y"}, True),
    (r"a=x\\y", {"a": "x\\y"}, True),
    (r"a=x\!y", {"a": "x!y"}, True),
    ("a=b,,c=d", {"a": "b", "c": "d"}, True),
]


@pytest.mark.parametrize(("text", "fields", "expected"), FIELD_TABLE)
def test_field_selector_matches(text: str, fields: dict[str, str], expected: bool) -> None:
    assert FieldSelector.parse(text).matches(fields) is expected


def test_field_selector_terms_order_and_escaping() -> None:
    sel = FieldSelector.parse(r"status.phase!=Failed,metadata.name==a\,b\=c\\d")
    # terms are in the apiserver's order: sorted by their raw text
    assert sel.terms == (("metadata.name", "=", "a,b=c\\d"), ("status.phase", "!=", "Failed"))
    assert sel.fields == frozenset({"metadata.name", "status.phase"})
    assert str(sel) == r"metadata.name=a\,b\=c\\d,status.phase!=Failed"
    assert FieldSelector.parse(str(sel)) == sel
    assert not sel.empty and FieldSelector.parse("").empty


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        (r"a=b\x", r"invalid field selector: invalid escape sequence: \x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_field_selector_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        FieldSelector.parse(text)
    assert str(err.value) == message


def test_unsupported_field_label_follows_transcript_10d() -> None:
    rec = transcript("10d-list-unsupported-fieldselector.json")
    assert rec["request"]["path"] == "/api/v1/namespaces/tx10/pods"
    sel = FieldSelector.parse(rec["request"]["query"]["fieldSelector"])
    with pytest.raises(SelectorError) as err:
        check_field_selector("pods", "", sel)
    assert str(err.value) == rec["response"]["body"]["message"]
    assert rec["response"]["body"]["code"] == 400


@pytest.mark.parametrize(
    ("plural", "group", "kind", "version", "message"),
    [
        ("pods", "", "Pod", "v1", "field label not supported: a.b"),
        ("nodes", "", "Node", "v1", "field label not supported: a.b"),
        ("widgets", "example.com", "Widget", "example.com/v1", "field label not supported: a.b"),
        ("jobs", "batch", "Job", "batch/v1", 'field label "a.b" not supported for batchv1.Job'),
        (
            "deployments",
            "apps",
            "Deployment",
            "apps/v1",
            '"a.b" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
        (
            "configmaps",
            "",
            "ConfigMap",
            "v1",
            '"a.b" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
    ],
)
def test_check_field_labels_messages(
    plural: str, group: str, kind: str, version: str, message: str
) -> None:
    check_field_selector(plural, group, FieldSelector.parse("metadata.name=x"))
    # the first unsupported term in the apiserver's (sorted) order is reported
    with pytest.raises(SelectorError) as err:
        check_field_selector(plural, group, FieldSelector.parse("z=1,a.b=2,metadata.name=x"))
    assert str(err.value) == message


def test_supported_field_labels() -> None:
    assert supported_field_labels("pods", "") == {
        "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
        "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
        "status.podIP", "status.podIPs", "status.nominatedNodeName",
    }  # fmt: skip
    assert supported_field_labels("nodes", "") == {"metadata.name", "spec.unschedulable"}
    assert supported_field_labels("namespaces", "") == {"metadata.name", "status.phase"}
    assert supported_field_labels("secrets", "") == {"metadata.name", "metadata.namespace", "type"}
    assert "involvedObject.uid" in supported_field_labels("events", "")
    assert "status.replicas" in supported_field_labels("replicasets", "apps")
    assert supported_field_labels("widgets", "x.io") == {"metadata.name", "metadata.namespace"}
    assert supported_field_labels("widgets", "x.io", namespaced=False) == {"metadata.name"}


def test_object_fields_of_pod_from_transcript_10b() -> None:
    rec = transcript("10b-watch-fieldselector-nodename.json")
    pod = rec["response"]["events"][0]["line"]["object"]
    fields = object_fields("pods", "", pod)
    assert fields == {
        "metadata.name": "d-web-unscheduled",
        "metadata.namespace": "tx10",
        "spec.nodeName": "node-1",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "",
        "spec.hostNetwork": "false",
        "status.phase": "Pending",
        "status.podIP": "",
        "status.podIPs": "",
        "status.nominatedNodeName": "",
    }
    assert set(fields) == supported_field_labels("pods", "")


@pytest.mark.parametrize(
    "name",
    ["10a-watch-labelselector.json", "10b-watch-fieldselector-nodename.json",
     "10c-watch-fieldselector-phase.json"],
)  # fmt: skip
def test_objects_on_filtered_watches_match_their_selectors(name: str) -> None:
    """Every object the real server sent on a filtered watch satisfies the selector
    (DELETED for leaving the selector carries the old content); pods written in the same
    case that never showed up on the watch do not."""
    rec = transcript(name)
    query = rec["request"]["query"]
    lsel = LabelSelector.parse(query.get("labelSelector", ""))
    fsel = FieldSelector.parse(query.get("fieldSelector", ""))

    def matches(pod: dict[str, Any]) -> bool:
        labels = pod["metadata"].get("labels", {})
        return lsel.matches(labels) and fsel.matches(object_fields("pods", "", pod))

    seen = set()
    for event in rec["response"]["events"]:
        if event["line"]["type"] != "BOOKMARK":
            assert matches(event["line"]["object"])
            seen.add(event["line"]["object"]["metadata"]["name"])
    for write in rec.get("writes", []):
        body = write["response"].get("body") or {}
        if body.get("kind") == "Pod" and write["request"]["method"] == "POST":
            assert matches(body) is (body["metadata"]["name"] in seen)


def test_object_fields_other_kinds() -> None:
    node = {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}}
    assert object_fields("nodes", "", node) == {"metadata.name": "n1", "spec.unschedulable": "true"}
    event = {
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "uid": "u1"},
        "reason": "Started",
        "reportingComponent": "kubelet",
        "type": "Normal",
    }
    fields = object_fields("events", "", event)
    assert fields["involvedObject.kind"] == "Pod" and fields["involvedObject.fieldPath"] == ""
    assert fields["source"] == "kubelet"  # falls back to reportingComponent
    rs = {"metadata": {"name": "r", "namespace": "ns"}, "status": {"replicas": 3}}
    assert object_fields("replicasets", "apps", rs)["status.replicas"] == "3"
    assert object_fields("replicasets", "apps", {"metadata": {}})["status.replicas"] == "0"
    assert object_fields("secrets", "", {"metadata": {}, "type": "Opaque"})["type"] == "Opaque"


# ------------------------------------------------------------------- properties


@given(
    st.lists(
        st.tuples(st.from_regex(r"[a-z][a-zA-Z.]{0,10}", fullmatch=True), st.sampled_from(["=", "!="]), st.text()),
        max_size=4,
    )
)  # fmt: skip
def test_field_selector_string_round_trips(terms: list[tuple[str, str, str]]) -> None:
    sel = FieldSelector(sorted(terms, key=lambda t: f"{t[0]}{t[1]}"))
    again = FieldSelector.parse(str(sel))
    assert {t for t in again.terms} == {t for t in sel.terms}
    fields = {f: v for f, _op, v in terms}
    assert again.matches(fields) == sel.matches(fields)

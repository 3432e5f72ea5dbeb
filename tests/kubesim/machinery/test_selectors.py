"""Label/field selectors: parsing, matching, apiserver error texts, selectable fields."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.apiextensions.customresource import CUSTOM_RESOURCE_STRATEGY
from kubesim.apis.builtin import builtin_registry
from kubesim.errors import SelectorError
from kubesim.machinery.selectors import FieldSelector, LabelSelector
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


# ------------------------------------------------------------------- label selectors

LABELS = {"app": "web", "tier": "frontend", "n": "7", "empty": ""}

MATCH_TABLE = [
    ("", True),
    ("app=web", True),
    ("app==web", True),
    ("app=db", False),
    ("missing=x", False),
    ("empty=", True),
    ("app!=db", True),
    ("app!=web", False),
    ("missing!=x", True),
    ("app in (web,db)", True),
    ("app in (db)", False),
    ("missing in (x)", False),
    ("app notin (db,cache)", True),
    ("app notin (web)", False),
    ("missing notin (x)", True),
    ("empty in ()", True),
    ("app", True),
    ("missing", False),
    ("!missing", True),
    ("!app", False),
    ("n>6", True),
    ("n>7", False),
    ("n<8", True),
    ("n<7", False),
    ("app>1", False),  # not an integer label value
    ("missing<9", False),
    ("app=web,tier=frontend", True),
    ("app=web,tier=backend", False),
    ("app in (web), tier notin (db), !gone, n>1", True),
    ("in in (in), notin=notin", False),
]


@pytest.mark.parametrize(("text", "expected"), MATCH_TABLE)
def test_label_selector_matches(text: str, expected: bool) -> None:
    assert LabelSelector.parse(text).matches(LABELS) is expected


def test_keywords_are_identifiers_in_value_position() -> None:
    sel = LabelSelector.parse("in in (in,notin),notin=notin")
    assert sel.requirements == (("in", "in", ("in", "notin")), ("notin", "=", ("notin",)))
    assert sel.matches({"in": "notin", "notin": "notin"})


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("b=1,a=2", "a=2,b=1"),
        ("a==x", "a==x"),
        ("x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()"),
        ("  !gone ,  k   in(b,a,b) ", "!gone,k in (a,b)"),
        ("n>10,n<20", "n>10,n<20"),
        ("a in (b,)", "a in (,b)"),
        ("example.com/key=v", "example.com/key=v"),
    ],
)
def test_label_selector_canonical_string(text: str, canonical: str) -> None:
    sel = LabelSelector.parse(text)
    assert str(sel) == canonical
    assert LabelSelector.parse(canonical) == sel
    assert sel.empty is (canonical == "")


_QNAME_HELP = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE_HELP = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_OPS = "in, notin, =, ==, !=, gt, lt"
ERROR_TABLE = [
    ("app in (web", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
    ("x in (a,", "unable to parse requirement: found '', expected: ',', or identifier"),
    ("x in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("a b", f"unable to parse requirement: found 'b', expected: {_OPS}"),
    ("a<=5", "unable to parse requirement: found '=', expected: identifier"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("a=b,", "found '', expected: identifier after ','"),
    ("a,,b", "found ',', expected: identifier after ','"),
    (",a", "found ',', expected: !, identifier, or 'end of string'"),
    (
        "x<abc",
        'unable to parse requirement: values[0]: Invalid value: "abc": '
        "for 'Gt', 'Lt' operators, the value must be an integer",
    ),
    (
        "app=x/y",
        f'unable to parse requirement: values[0][app]: Invalid value: "x/y": {_VALUE_HELP}',
    ),
    ("x>-1", f'unable to parse requirement: values[0][x]: Invalid value: "-1": {_VALUE_HELP}'),
    (
        "a=" + "v" * 64,
        f'unable to parse requirement: values[0][a]: Invalid value: "{"v" * 64}": '
        "must be no more than 63 characters",
    ),
    (
        "app:web",
        f'unable to parse requirement: <nil>: Invalid value: "app:web": name part {_QNAME_HELP}',
    ),
    (
        "a/b/c=d",
        f'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name {_QNAME_HELP}'
        " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ),
    (
        "Bad_Prefix/x",
        'unable to parse requirement: <nil>: Invalid value: "Bad_Prefix/x": prefix part a '
        "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
        r"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ),
    (
        "/x",
        'unable to parse requirement: <nil>: Invalid value: "/x": prefix part must be non-empty',
    ),
]


@pytest.mark.parametrize(("text", "message"), ERROR_TABLE)
def test_label_selector_error_messages(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        LabelSelector.parse(text)
    assert str(err.value) == message


def test_bad_label_selector_message_follows_transcript_11l() -> None:
    rec = transcript("11l-bad-labelselector.json")
    assert rec["response"]["status"] == 400
    with pytest.raises(SelectorError) as err:
        LabelSelector.parse(rec["request"]["query"]["labelSelector"])
    assert str(err.value) == rec["response"]["body"]["message"]


# ------------------------------------------------------------------- field selectors

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

_NAME = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?", fullmatch=True)
_PREFIX = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?(\.[a-z0-9]{1,4}){0,2}", fullmatch=True)
_KEY = st.one_of(_NAME, st.builds(lambda p, n: f"{p}/{n}", _PREFIX, _NAME))
_VALUE = st.one_of(st.just(""), _NAME)


@st.composite
def _requirements(draw: st.DrawFn) -> list[tuple[str, str, list[str]]]:
    reqs = []
    for _ in range(draw(st.integers(0, 5))):
        key = draw(st.one_of(_KEY, st.sampled_from(["in", "notin", "app"])))
        op = draw(st.sampled_from(["exists", "!", "=", "==", "!=", "in", "notin", "gt", "lt"]))
        if op in ("exists", "!"):
            vals: list[str] = []
        elif op in ("gt", "lt"):
            vals = [str(draw(st.integers(0, 10**12)))]
        elif op in ("in", "notin"):
            vals = draw(st.lists(st.one_of(_VALUE, st.sampled_from(["in", "notin"])), min_size=1))
        else:
            vals = [draw(_VALUE)]
        reqs.append((key, op, vals))
    return reqs


@given(_requirements(), st.dictionaries(st.one_of(_KEY, st.just("app")), _VALUE))
def test_label_selector_string_round_trips(
    reqs: list[tuple[str, str, list[str]]], labels: dict[str, str]
) -> None:
    sel = LabelSelector(reqs)
    again = LabelSelector.parse(str(sel))
    assert again == sel
    assert str(again) == str(sel)
    assert again.matches(labels) == sel.matches(labels)


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

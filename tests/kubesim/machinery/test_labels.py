"""Label selectors: parsing, matching, canonical strings, the apiserver's error texts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.errors import SelectorError
from kubesim.machinery.labels import LabelSelector
from tests.support import transcript

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

"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given

from kubesim.errors import PatchError
from kubesim.fieldmanager.jsonpatch import json_merge_patch, json_patch
from tests.kubesim.fieldmanager.jsonvalues import JSON, OBJECTS

# --------------------------------------------------------------- RFC 7386, Appendix A

RFC7386_EXAMPLES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "result"), RFC7386_EXAMPLES)
def test_json_merge_patch_rfc7386_examples(target: Any, patch: Any, result: Any) -> None:
    before = copy.deepcopy((target, patch))
    assert json_merge_patch(target, patch) == result
    assert (target, patch) == before


# --------------------------------------------------------------- RFC 6902, Appendix A

RFC6902_EXAMPLES = [
    # A.1 .. A.16 (those that are valid JSON once decoded)
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    (
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    (
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": 10}, {"op": "test", "path": "/~1", "value": 9}],
        {"/": 9, "~1": 10},
    ),
    (
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
    # copy, root replacement, 1 == 1.0
    ({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/c"}], {"a": {"b": 1}, "c": {"b": 1}}),
    ({"a": 1}, [{"op": "replace", "path": "", "value": [1]}], [1]),
    ({"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}], {"a": 1}),
    ({"a": 1}, None, {"a": 1}),
]


@pytest.mark.parametrize(("target", "ops", "result"), RFC6902_EXAMPLES)
def test_json_patch_rfc6902_examples(target: Any, ops: Any, result: Any) -> None:
    before = copy.deepcopy((target, ops))
    assert json_patch(target, ops) == result
    assert (target, ops) == before


def test_json_patch_copy_is_deep() -> None:
    out = json_patch({"a": {"b": [1]}}, [{"op": "copy", "from": "/a", "path": "/c"}])
    out["c"]["b"].append(2)
    assert out["a"] == {"b": [1]}


RFC6902_ERRORS = [
    ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),  # A.9
    ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}]),  # A.12
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}]),  # A.15
    ({"a": True}, [{"op": "test", "path": "/a", "value": 1}]),
    ({"a": 1}, [{"op": "remove", "path": "/b"}]),
    ({"a": 1}, [{"op": "replace", "path": "/b", "value": 1}]),
    ({"a": [1]}, [{"op": "add", "path": "/a/2", "value": 1}]),
    ({"a": [1]}, [{"op": "add", "path": "/a/01", "value": 1}]),
    ({"a": [1]}, [{"op": "remove", "path": "/a/-"}]),
    ({"a": {}}, [{"op": "move", "from": "/a", "path": "/a/b"}]),
    ({"a": 1}, [{"op": "add", "path": "a", "value": 1}]),
    ({"a": 1}, [{"op": "add", "path": "/~2", "value": 1}]),
    ({"a": 1}, [{"op": "add", "path": "/b"}]),
    ({"a": 1}, [{"op": "frobnicate", "path": "/a"}]),
    ({"a": 1}, [{"op": "add", "path": "/b", "value": 2}, {"op": "test", "path": "/a", "value": 2}]),
]


@pytest.mark.parametrize(("target", "ops"), RFC6902_ERRORS)
def test_json_patch_errors_are_422(target: Any, ops: Any) -> None:
    before = copy.deepcopy(target)
    with pytest.raises(PatchError) as err:
        json_patch(target, ops)
    assert err.value.code == 422
    assert target == before
    assert err.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid",
        "details": {},
        "code": 422,
    }


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        ("x", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
        ([1], "json: cannot unmarshal number into Go value of type jsonpatch.Operation"),
    ],
)
def test_undecodable_json_patch_is_400(ops: Any, message: str) -> None:
    with pytest.raises(PatchError) as err:
        json_patch({}, ops)
    assert (err.value.code, str(err.value), err.value.reason) == (400, message, "BadRequest")
    assert err.value.status()["message"] == message


# --------------------------------------------------------------- properties


@given(JSON, JSON)
def test_merge_patch_never_mutates_inputs(target: Any, patch: Any) -> None:
    before = copy.deepcopy((target, patch))
    result = json_merge_patch(target, patch)
    assert (target, patch) == before
    if isinstance(patch, dict):  # applying a merge patch twice changes nothing more
        assert json_merge_patch(result, patch) == result


@given(OBJECTS)
def test_merge_patch_with_empty_object_is_identity(target: dict[str, Any]) -> None:
    result = json_merge_patch(target, {})
    assert result == target
    assert result is not target

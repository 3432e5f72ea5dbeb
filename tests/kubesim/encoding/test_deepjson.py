"""Deep JSON: the iterative parser and encoder match orjson byte for byte, handle any
depth, refuse what is not JSON, and report duplicate keys; depth is measured without
parsing."""

from __future__ import annotations

import json

import orjson
import pytest

from kubesim.encoding import deepjson
from kubesim.errors import DeepJsonError

DOC = {"a": [1, -2.5e-7, {"b": None, "c": 'é"\\\n\u2028'}], "e": {}, "f": [], "g": True, "h": False}


def test_same_bytes_as_orjson() -> None:
    assert "".join(deepjson._encode(DOC)).encode() == orjson.dumps(DOC)
    assert "".join(deepjson._encode(DOC, True)).encode() == orjson.dumps(
        DOC, option=orjson.OPT_SORT_KEYS
    )
    assert deepjson.parse(orjson.dumps(DOC).decode()) == (DOC, {})


def test_any_depth() -> None:
    deep: object = "leaf"
    for i in range(9000):
        deep = {"a": [deep]} if i % 2 else {"b": deep}
    raw = deepjson.dumps(deep)
    depth, over = deepjson.depth(raw)
    assert depth == 13500 and raw[over : over + 1] in (b"{", b"[")
    assert deepjson.dumps(deepjson.loads(raw), sort_keys=True) == raw
    over = b'{"a":' * 10001 + b"1" + b"}" * 10001
    assert deepjson.depth(over) == (10001, 50000)
    strings = b'{"s":"' + b"[" * 300 + b'","t":[' + b"[" * 199 + b"]" * 200 + b"}"
    assert deepjson.depth(strings) == (201, -1)  # brackets in strings do not count
    assert deepjson.depth(b'{"a":[1,{"b":2}]}') == (3, -1)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1',
        '{"a" 1}',
        "[1,]",
        '{"a":1}x',
        "",
        "[1 2]",
        "{,}",
        '{"a":}',
        "]",
        '{"a":1]',
        '"\\q"',
        "01",
    ],
)
def test_not_json(text: str) -> None:
    with pytest.raises(DeepJsonError):
        deepjson.parse(text)
    with pytest.raises(ValueError):
        json.loads(text)


def test_duplicates() -> None:
    doc, dups = deepjson.parse('{"a":1,"a":2,"b":{"c":1,"c":3,"c":4}}')
    assert doc == {"a": 2, "b": {"c": 4}}
    assert dups == {id(doc): ["a"], id(doc["b"]): ["c", "c"]}


def test_integers_beyond_int64_become_floats() -> None:
    doc, _ = deepjson.parse('{"a":9223372036854775807,"b":9223372036854775808,"c":-1}')
    assert doc == {"a": 2**63 - 1, "b": 9.223372036854776e18, "c": -1}
    assert isinstance(doc["b"], float)
    assert deepjson.dumps(doc) == orjson.dumps(doc)

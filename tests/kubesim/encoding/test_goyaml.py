"""go-yaml v3's text for JSON values (gnostic's ``Any.yaml``): block style, 4-space
indentation with an item's mapping two past its ``- ``, quoting only where plain text would
read back as another type or is not allowed, literal blocks for line breaks."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kubesim.encoding.goyaml import marshal


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("get", "get\n"),
        ("merge,retainKeys", "merge,retainKeys\n"),
        ("", '""\n'),
        ("yes", "yes\n"),  # a string to go-yaml v3 (YAML 1.2 booleans only)
        ("it's", "it's\n"),
        (True, "true\n"),
        (None, "null\n"),
        (3, "3\n"),
        (1.5, "1.5\n"),
        ([], "[]\n"),
        ({}, "{}\n"),
    ],
)
def test_scalars_and_empty_collections(value: Any, text: str) -> None:
    assert marshal(value) == text


@pytest.mark.parametrize(
    "value", ["true", "False", "null", "~", "1", "-2", "0x1F", "0o17", "1_000", "1e3", ".5"]
)
def test_strings_that_read_as_another_type_are_double_quoted(value: str) -> None:
    assert marshal(value) == f'"{value}"\n'
    assert yaml.safe_load(marshal(value)) == value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("2006-01-02", '"2006-01-02"\n'),  # a timestamp
        ("2006-01-02T15:04:05Z", '"2006-01-02T15:04:05Z"\n'),
        ("2006-13-02", "2006-13-02\n"),  # no month 13: a string
        ("2006-01-02T15:04:05", "2006-01-02T15:04:05\n"),  # no zone: not go-yaml's layout
    ],
)
def test_timestamps(value: str, text: str) -> None:
    assert marshal(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("- x", "'- x'\n"),
        ("a: b", "'a: b'\n"),
        ("#x", "'#x'\n"),
        (" lead", "' lead'\n"),
        ("a #b", "'a #b'\n"),
        ("a\tb", '"a\\tb"\n'),  # a tab rules out plain and single-quoted text
    ],
)
def test_strings_the_emitter_must_quote(value: str, text: str) -> None:
    assert marshal(value) == text
    assert yaml.safe_load(text) == value


def test_block_collections() -> None:
    gvk = [{"group": "", "kind": "Status", "version": "v1"}, {"group": "apps", "kind": "X"}]
    assert marshal(gvk) == (
        '- group: ""\n  kind: Status\n  version: v1\n- group: apps\n  kind: X\n'
    )
    nested = {"a": [1, {"b": [], "c": {"d": "e"}}], "f": {}, "true": [[1, 2], [3]]}
    text = marshal(nested)
    assert text == (
        "a:\n"
        "    - 1\n"
        "    - b: []\n"
        "      c:\n"
        "        d: e\n"
        "f: {}\n"
        '"true":\n'
        "    - - 1\n"
        "      - 2\n"
        "    - - 3\n"
    )
    assert yaml.safe_load(text) == nested


def test_line_breaks_make_literal_blocks() -> None:
    assert marshal({"k": "line1\nline2"}) == "k: |-\n    line1\n    line2\n"
    assert marshal(["a\nb\n"]) == "- |\n  a\n  b\n"
    assert marshal({"a\nb": 1}) == "? |-\n    a\n    b\n: 1\n"  # not a simple key
    for value in ({"k": "line1\nline2"}, ["a\nb\n"], {"a\nb": 1}, {"k": "a\tb\nc"}):
        assert yaml.safe_load(marshal(value)) == value

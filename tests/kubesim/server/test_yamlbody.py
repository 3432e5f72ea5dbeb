"""YAML bodies as yaml.v2 + sigs.k8s.io/yaml read them: the alias budget, merges, keys,
scalars."""

from __future__ import annotations

import pytest
import yaml

from kubesim.errors import KubeSimApiError
from kubesim.server.yamlbody import alias_budget_exceeded, parse_yaml


def laughs(levels: int, width: int) -> str:
    lines = ["data:", '  l0: &a0 "lol"']
    for i in range(1, levels + 1):
        lines.append(f"  l{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_alias_budget() -> None:
    assert alias_budget_exceeded(yaml.compose(laughs(9, 10)))
    assert alias_budget_exceeded(yaml.compose(laughs(4, 10)))  # ~11k nodes from ~50
    assert not alias_budget_exceeded(yaml.compose(laughs(2, 10)))  # ~100 aliased: fine
    # many aliases are fine while the document is mostly itself (the ratio is the rule)
    big = "base: &b {x: 1}\nitems:\n" + "".join(f"  - {{n: {i}, ref: *b}}\n" for i in range(3000))
    assert not alias_budget_exceeded(yaml.compose(big))


def test_merges_keys_and_scalars() -> None:
    text = (
        "a: &base {x: 1, y: 2}\n"
        "b:\n"
        "  <<: *base\n"
        "  y: 3\n"
        "c:\n"
        "  <<: [{p: 1}, {p: 2, q: 2}]\n"
        "when: 2024-01-01T00:00:00Z\n"
        "day: 2024-01-01\n"
        "whole: 2.0\n"
        "half: 0.5\n"
        "flag: on\n"
        "yes: key\n"
        "1: one\n"
        "~: nothing\n"
    )
    doc, errors, depth = parse_yaml(text.encode(), "ConfigMap")
    assert doc["b"] == {"x": 1, "y": 3}
    assert doc["c"] == {"p": 1, "q": 2}  # in a merge list the first map wins
    assert doc["when"] == "2024-01-01T00:00:00Z" and doc["day"] == "2024-01-01"
    assert doc["whole"] == 2 and isinstance(doc["whole"], int) and doc["half"] == 0.5
    assert doc["flag"] is True and doc["true"] == "key"  # YAML 1.1, as yaml.v2
    assert doc["1"] == "one" and doc["null"] == "nothing"
    # yaml.v2 reports every key a merge or a later key sets again (the merge list is
    # applied last map first, so "p" of the first map is the repeat)
    assert errors == ['line 4: key "y" already set in map', 'line 6: key "p" already set in map']
    assert depth == 4  # the document, c, the merge list, one merged map
    doc["a"]["x"] = 99  # every alias is its own copy
    assert doc["b"]["x"] == 1


def test_errors_and_documents() -> None:
    doc, _, _ = parse_yaml(b"a: 1\n---\na: 2\n", "ConfigMap")
    assert doc == {"a": 1}  # the first document
    with pytest.raises(KubeSimApiError) as info:
        parse_yaml(b"a: b: c\n", "ConfigMap")
    assert info.value.code == 400
    assert info.value.body["message"].startswith(
        "the object provided is unrecognized (must be of type ConfigMap): yaml: line 1: "
    )
    with pytest.raises(KubeSimApiError) as info:
        parse_yaml(laughs(9, 10).encode(), "ConfigMap")
    assert "yaml: document contains excessive aliasing (" in info.value.body["message"]
    deep = "a:" + "".join(f"\n{'  ' * i}a:" for i in range(1, 1500)) + " 1\n"
    doc, _, depth = parse_yaml(deep.encode(), "ConfigMap")
    assert depth == 1500

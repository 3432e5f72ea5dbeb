"""YAML request bodies as kube-apiserver reads them (sigs.k8s.io/yaml over yaml.v2).

:func:`parse_yaml` composes the first document, checks yaml.v2's alias budget on the node
graph (before anything is expanded), then builds plain JSON values: anchors and aliases
expanded (each use a copy), ``<<`` merge keys applied (a later key wins), every key a
string, timestamps kept as strings, integral floats as integers. yaml.v2's strict
findings (a key set twice, merge overrides included) come back as
``line N: key "k" already set in map``. Errors are the apiserver's 400s (see
:mod:`kubesim.server.bodies`), e.g. ``yaml: document contains excessive aliasing`` (25e).
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from kubesim.encoding.deepjson import json_int
from kubesim.errors import KubeSimApiError
from kubesim.server.limits import deep_recursion
from kubesim.server.undecodable import unrecognized

__all__ = ["alias_budget_exceeded", "parse_yaml"]

_MERGE = "tag:yaml.org,2002:merge"
_ALIAS_LOW, _ALIAS_HIGH = 400_000, 4_000_000


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader without the timestamp resolver (yaml.v2 keeps timestamps as strings
    when decoding into interface{})."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _allowed_ratio(decoded: int) -> float:
    """yaml.v2's ``allowedAliasRatio``: 99% of decodes may come from aliases in small
    documents, scaling down to 10% from 4,000,000 decodes."""
    if decoded <= _ALIAS_LOW:
        return 0.99
    if decoded >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def alias_budget_exceeded(root: yaml.Node) -> bool:
    """Whether decoding ``root`` would trip yaml.v2's "excessive aliasing" check: it
    counts every node decoded, aliases expanded, and fails once more than 100 of over
    1000 decodes came from aliases and their share exceeds the allowed ratio."""
    expanded: dict[int, int] = {}  # node id -> nodes decoded when it is expanded

    def size(node: yaml.Node) -> int:
        stack: list[tuple[yaml.Node, bool]] = [(node, False)]
        while stack:
            n, done = stack.pop()
            if id(n) in expanded:
                continue
            kids = _children(n)
            if done:
                expanded[id(n)] = 1 + sum(expanded[id(k)] for k in kids)
                continue
            stack.append((n, True))
            stack.extend((k, False) for k in kids if id(k) not in expanded)
        return expanded[id(node)]

    decoded = aliased = 0
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:  # a second use of an anchored node: an alias
            n = size(node) + 1
            decoded += n
            aliased += n
            if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_ratio(decoded):
                return True
            continue
        seen.add(id(node))
        decoded += 1
        stack.extend(reversed(_children(node)))
    return False


def _key(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        value = _integral(value)
    return str(value)


def _integral(value: float) -> Any:
    if math.isfinite(value) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def _go_key(key: str) -> str:
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Builder:
    def __init__(self, loader: _Loader) -> None:
        self.loader = loader
        self.errors: list[str] = []

    def value(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE:
                    self.merge(value_node, out)
                    continue
                self.put(out, _key(self.value(key_node)), self.value(value_node), value_node)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.value(n) for n in node.value]
        value = self.loader.construct_object(node, deep=True)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"json: unsupported value: {value}")
            return _integral(value)
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, int) and not isinstance(value, bool):
            return json_int(str(value))
        return value

    def put(self, out: dict[str, Any], key: str, value: Any, node: yaml.Node) -> None:
        if key in out:
            self.errors.append(
                f"line {node.start_mark.line + 1}: key {_go_key(key)} already set in map"
            )
        out[key] = value

    def merge(self, node: yaml.Node, out: dict[str, Any]) -> None:
        sources = list(reversed(node.value)) if isinstance(node, yaml.SequenceNode) else [node]
        for src in sources:
            if not isinstance(src, yaml.MappingNode):
                raise ValueError("map merge requires map or sequence of maps as the value")
            for key_node, value_node in src.value:
                if key_node.tag == _MERGE:
                    self.merge(value_node, out)
                    continue
                self.put(out, _key(self.value(key_node)), self.value(value_node), value_node)


def _depth(root: yaml.Node) -> int:
    """Nesting of mappings and sequences (scalars are no level, as in JSON)."""
    deepest, stack = 0, [(root, 1)]
    seen: set[int] = set()
    while stack:
        node, level = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            continue
        deepest = max(deepest, level)
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend((k, level + 1) for k in _children(node))
    return deepest


def parse_yaml(raw: bytes, kind: str) -> tuple[Any, list[str], int]:
    """The first YAML document of ``raw`` as JSON values, yaml.v2's strict findings, and
    its nesting depth; 400 as the apiserver answers for YAML it cannot decode."""
    text = raw.decode("utf-8", "replace")
    loader = _Loader(text)
    try:
        with deep_recursion(10_000):
            root = loader.get_node() if loader.check_node() else None
            if root is None:
                return None, [], 0
            if alias_budget_exceeded(root):
                raise unrecognized(kind, "yaml: document contains excessive aliasing", raw)
            depth = _depth(root)
            builder = _Builder(loader)
            doc = builder.value(root)
    except KubeSimApiError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise unrecognized(kind, f"yaml: {line}{problem}", raw) from None
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise unrecognized(kind, f"yaml: {exc}", raw) from None
    finally:
        loader.dispose()
    return doc, builder.errors, depth

"""Field paths and field sets: the vocabulary of ``metadata.managedFields``.

A *path element* is one step into a JSON object, written as the apiserver writes it in
FieldsV1: ``f:<name>`` (a map key), ``k:<json>`` (a list-map item by its keys, compact JSON
with sorted keys), ``v:<json>`` (a set item by value) or ``i:<n>`` (a list item by index).
A *path* is a tuple of elements; a *field set* is a ``frozenset`` of paths (its members).

:func:`to_fields_v1` and :func:`from_fields_v1` convert between a set and the FieldsV1
document, with the apiserver's ordering and ``"."`` markers (a member that also has members
below it); :func:`path_string` renders a path as conflict messages show it
(``.spec.containers[name="c1"].image``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

import orjson

__all__ = [
    "FieldSet",
    "Path",
    "field",
    "from_fields_v1",
    "item_key",
    "item_value",
    "iteration_order",
    "path_string",
    "recursive_difference",
    "to_fields_v1",
]

Path = tuple[str, ...]
FieldSet = frozenset[Path]

_RANK = {"f": 0, "k": 1, "v": 2, "i": 3}


def field(name: str) -> str:
    """The element for map key ``name``."""
    return "f:" + name


def item_key(keys: Mapping[str, Any]) -> str:
    """The element for a list-map item with these key field values."""
    return "k:" + orjson.dumps(dict(sorted(keys.items()))).decode()


def item_value(value: Any) -> str:
    """The element for a set item (a scalar)."""
    return "v:" + orjson.dumps(value).decode()


def _value_rank(v: Any) -> tuple[int, Any]:
    if v is None:
        return (0, 0)
    if isinstance(v, bool):
        return (1, v)
    if isinstance(v, (int, float)):
        return (2, v)
    if isinstance(v, str):
        return (3, v)
    return (4, orjson.dumps(v))


@lru_cache(maxsize=4096)
def _sort_key(element: str) -> tuple[Any, ...]:
    kind, body = element[0], element[2:]
    if kind == "f":
        return (0, body.encode())
    if kind == "i":
        return (3, int(body))
    decoded = orjson.loads(body)
    if kind == "k" and isinstance(decoded, dict):
        return (1, tuple((k.encode(), _value_rank(v)) for k, v in decoded.items()))
    return (_RANK.get(kind, 4), _value_rank(decoded))


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """The FieldsV1 document of a set: nested maps, children in the apiserver's order
    (names, then keys, values, indexes), ``"."`` first where a member has children."""
    tree: dict[str, Any] = {}
    for p in paths:
        node = tree
        for el in p:
            nxt = node.get(el)
            if nxt is None:
                nxt = node[el] = {}
            node = nxt
        node["."] = True
    tree.pop(".", None)
    return _emit(tree)


def _emit(node: dict[str, Any]) -> dict[str, Any]:
    member = node.pop(".", None)
    if not node:
        return node
    out: dict[str, Any] = {".": {}} if member else {}
    for el in sorted(node, key=_sort_key) if len(node) > 1 else node:
        out[el] = _emit(node[el])
    return out


def from_fields_v1(doc: Any, prefix: Path = ()) -> set[Path]:
    """The members of a FieldsV1 document (an empty set for anything malformed)."""
    out: set[Path] = set()
    if not isinstance(doc, dict):
        return out
    for el, sub in doc.items():
        if el == ".":
            if prefix:
                out.add(prefix)
            continue
        if not isinstance(el, str) or len(el) < 2 or el[1] != ":" or el[0] not in _RANK:
            continue
        path = (*prefix, el)
        if isinstance(sub, dict) and sub:
            out |= from_fields_v1(sub, path)
        else:
            out.add(path)
    return out


def recursive_difference(paths: Iterable[Path], prefixes: Iterable[Path]) -> set[Path]:
    """``paths`` without every path at or below one of ``prefixes``."""
    cut = set(prefixes)
    if not cut:
        return set(paths)
    return {p for p in paths if not any(p[:n] in cut for n in range(1, len(p) + 1))}


def _element_string(el: str) -> str:
    kind, body = el[0], el[2:]
    if kind == "f":
        return "." + body
    if kind == "i":
        return f"[{body}]"
    decoded = orjson.loads(body)
    if kind == "k" and isinstance(decoded, dict):
        return "[" + ",".join(f"{k}={_go_value(v)}" for k, v in decoded.items()) + "]"
    return f"[={_go_value(decoded)}]"


def _go_value(v: Any) -> str:
    return orjson.dumps(v).decode() if isinstance(v, (str, dict, list)) else _scalar(v)


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def path_string(path: Path) -> str:
    """The path as the apiserver prints it: ``.spec.template.spec.containers[name="c1"]``."""
    return "".join(_element_string(el) for el in path)


def iteration_order(paths: Iterable[Path]) -> list[Path]:
    """``paths`` in the apiserver's iteration order: at each level the members (in element
    order) before the paths below (one child after another, in element order)."""
    tree: dict[str, Any] = {}
    for p in paths:
        node = tree
        for el in p:
            node = node.setdefault(el, {})
        node["."] = p
    out: list[Path] = []
    _iterate(tree, out)
    return out


def _iterate(node: dict[str, Any], out: list[Path]) -> None:
    children = sorted((k for k in node if k != "."), key=_sort_key)
    out.extend(node[k]["."] for k in children if "." in node[k])
    for k in children:
        _iterate(node[k], out)

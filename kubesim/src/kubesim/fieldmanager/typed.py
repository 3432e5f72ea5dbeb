"""Typed operations on JSON objects: field sets, comparisons, merges and removals.

These are the structured-merge-diff semantics the apiserver's field manager runs on, over
plain JSON values and a :mod:`kubesim.fieldmanager.schemas` type:

* :func:`field_set` — the fields a value sets (what an apply configuration claims): scalars,
  atomic maps and lists, list items, and keys of maps of values; a declared struct field
  is not a member of itself unless it is null or ``{}``.
* :func:`compare` — the fields added, modified and removed between two values (what an
  update changes); a map or list item that appears or disappears is itself added/removed.
* :func:`merge` — an apply configuration merged into the live object: the configuration
  wins on every leaf it sets; list-map and set items merge by key, live items it does not
  name keep their place.
* :func:`remove_items` — a value without the given fields (a removed member takes its
  whole subtree; a map or list emptied by the removal goes too).

Values that do not fit the type (a scalar where a map is declared, a list-map item without
its keys) are treated as atomic leaves, never as errors: validation is done elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from kubesim.fieldmanager.fieldpath import Path, field, item_key, item_value
from kubesim.fieldmanager.schemas import (
    SCALAR,
    UNTYPED,
    UNTYPED_ATOMIC,
    ListType,
    MapType,
    Scalar,
    Type,
    Untyped,
)

__all__ = ["MISSING", "Comparison", "compare", "field_set", "merge", "remove_items"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: An absent value (as opposed to JSON ``null``, which is ``None``).
MISSING: Any = _Missing()


def _shape(t: Type, value: Any) -> Type:
    """The type to walk ``value`` with: untyped data takes the shape of the value."""
    if isinstance(t, Untyped):
        if isinstance(value, dict):
            return MapType({}, UNTYPED_ATOMIC if t.atomic else UNTYPED, t.atomic)
        if isinstance(value, list):
            return ListType(UNTYPED_ATOMIC, "atomic")
        return SCALAR
    return t


def _fits(t: Type, value: Any) -> bool:
    if value is None or value is MISSING:
        return True
    if isinstance(t, MapType):
        return isinstance(value, dict)
    if isinstance(t, ListType):
        return isinstance(value, list)
    return not isinstance(value, (dict, list))


def _element(t: ListType, item: Any) -> str | None:
    """The path element of a list item (``None`` when the item cannot have one)."""
    if t.mode == "map":
        if not isinstance(item, dict):
            return None
        keys = {k: item[k] for k in t.keys if k in item}
        for k, v in t.defaults.items():
            keys.setdefault(k, v)
        if not keys:
            return None
        return item_key(keys)
    if isinstance(item, (dict, list)) or item is None:
        return None
    return item_value(item)


def _index(t: ListType, items: list[Any]) -> dict[str, Any] | None:
    """Items by path element, or ``None`` when the list cannot be keyed (then it is atomic)."""
    out: dict[str, Any] = {}
    for item in items:
        el = _element(t, item)
        if el is None or el in out:
            return None
        out[el] = item
    return out


# -- field sets -------------------------------------------------------------------------------


def field_set(value: Any, t: Type) -> set[Path]:
    """The members an (apply) configuration ``value`` of type ``t`` sets."""
    out: set[Path] = set()
    _fs(value, t, (), out)
    return out


def _fs(value: Any, t: Type, path: Path, out: set[Path]) -> None:
    t = _shape(t, value)
    if isinstance(t, Scalar) or not _fits(t, value):
        out.add(path)
    elif isinstance(t, ListType):
        if t.mode == "atomic" or not isinstance(value, list):
            out.add(path)
            return
        index = _index(t, value)
        if index is None:
            out.add(path)
            return
        for el, item in index.items():
            p = (*path, el)
            _fs(item, t.item, p, out)
            out.add(p)
    elif isinstance(t, MapType):
        if t.atomic:
            out.add(path)
            return
        if not isinstance(value, dict):
            return
        for k, v in value.items():
            child, declared = t.child(k)
            p = (*path, field(k))
            _fs(v, child, p, out)
            if v is None or v == {} or not declared:
                out.add(p)


# -- comparison -------------------------------------------------------------------------------


class Comparison:
    """The fields ``added``, ``modified`` and ``removed`` from one value to another."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added: set[Path] = set()
        self.modified: set[Path] = set()
        self.removed: set[Path] = set()

    def is_same(self) -> bool:
        return not (self.added or self.modified or self.removed)


def compare(lhs: Any, rhs: Any, t: Type) -> Comparison:
    """What changes from ``lhs`` to ``rhs`` (either may be :data:`MISSING`)."""
    out = Comparison()
    _cmp(lhs, rhs, t, (), out)
    return out


def _equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        if isinstance(a, bool) or isinstance(b, bool):
            return False
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b
    if isinstance(a, (dict, list)):
        return bool(
            orjson.dumps(a, option=orjson.OPT_SORT_KEYS)
            == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)
        )
    return bool(a == b)


def _leaf(lhs: Any, rhs: Any, path: Path, out: Comparison) -> None:
    if lhs is MISSING:
        out.added.add(path)
    elif rhs is MISSING:
        out.removed.add(path)
    elif not _equal(lhs, rhs):
        out.modified.add(path)


def _added(value: Any, t: Type, path: Path, added: set[Path]) -> None:
    """Every field of ``value`` (which replaces nothing) is added: the create fast path."""
    if type(value) is dict:
        if isinstance(t, Untyped):
            t = _shape(t, value)
        if isinstance(t, MapType) and not t.atomic and value:
            child = t.child
            for k, v in value.items():
                _added(v, child(k)[0], (*path, "f:" + k), added)
    elif type(value) is list and value and isinstance(t, ListType) and t.mode != "atomic":
        index = _index(t, value)
        if index is not None:
            item = t.item
            for el, v in index.items():
                _added(v, item, (*path, el), added)
    added.add(path)


def _cmp(lhs: Any, rhs: Any, t: Type, path: Path, out: Comparison) -> None:
    if lhs is MISSING and rhs is not MISSING:
        _added(rhs, t, path, out.added)
        return
    t = _shape(t, rhs if rhs is not MISSING and rhs is not None else lhs)
    if isinstance(t, Scalar) or not (_fits(t, lhs) and _fits(t, rhs)):
        _leaf(lhs, rhs, path, out)
        return
    if isinstance(t, MapType):
        lm = lhs if isinstance(lhs, dict) else {}
        rm = rhs if isinstance(rhs, dict) else {}
        if t.atomic or (not lm and not rm):
            _leaf(lhs, rhs, path, out)
            return
        for k in {**lm, **rm}:
            child, _ = t.child(k)
            _cmp(lm.get(k, MISSING), rm.get(k, MISSING), child, (*path, field(k)), out)
    elif isinstance(t, ListType):
        ll = lhs if isinstance(lhs, list) else []
        rl = rhs if isinstance(rhs, list) else []
        if t.mode == "atomic" or (not ll and not rl):
            _leaf(lhs, rhs, path, out)
            return
        li, ri = _index(t, ll), _index(t, rl)
        if li is None or ri is None:
            _leaf(lhs, rhs, path, out)
            return
        for el in {**li, **ri}:
            _cmp(li.get(el, MISSING), ri.get(el, MISSING), t.item, (*path, el), out)
    if path:
        if lhs is MISSING:
            out.added.add(path)
        elif rhs is MISSING:
            out.removed.add(path)


# -- merge ------------------------------------------------------------------------------------


def merge(lhs: Any, rhs: Any, t: Type) -> Any:
    """``rhs`` (a configuration) merged into ``lhs`` (the live value); MISSING if neither."""
    if rhs is MISSING:
        return lhs
    if lhs is MISSING:
        return rhs
    t = _shape(t, rhs if rhs is not None else lhs)
    if isinstance(t, Scalar) or not (_fits(t, lhs) and _fits(t, rhs)):
        return rhs
    if isinstance(t, MapType):
        lm = lhs if isinstance(lhs, dict) else {}
        rm = rhs if isinstance(rhs, dict) else {}
        if t.atomic or (not lm and not rm):
            return rhs
        out: dict[str, Any] = {}
        for k in {**lm, **rm}:
            child, _ = t.child(k)
            out[k] = merge(lm.get(k, MISSING), rm.get(k, MISSING), child)
        return out
    if isinstance(t, ListType):
        ll = lhs if isinstance(lhs, list) else []
        rl = rhs if isinstance(rhs, list) else []
        if t.mode == "atomic" or (not ll and not rl):
            return rhs
        li, ri = _index(t, ll), _index(t, rl)
        if li is None or ri is None:
            return rhs
        return _merge_items(t, li, ri)
    return rhs


def _merge_items(t: ListType, li: dict[str, Any], ri: dict[str, Any]) -> list[Any]:
    """Interleave: live items the configuration does not name keep their place; named items
    follow the configuration's order."""
    lk, rk = list(li), list(ri)
    shared = [el for el in rk if el in li]
    out: list[Any] = []
    done: set[str] = set()
    i = j = 0
    next_shared = shared.pop(0) if shared else None
    while i < len(lk) or j < len(rk):
        if i < len(lk) and j < len(rk):
            el = lk[i]
            if el == rk[j]:
                out.append(merge(li[el], ri[el], t.item))
                done.add(el)
                i += 1
                j += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if el in ri and next_shared is not None and el != next_shared:
                i += 1
                continue
        if i < len(lk):
            el = lk[i]
            if el not in ri:
                out.append(li[el])
                i += 1
                continue
            if el in done:
                i += 1
        if j < len(rk):
            el = rk[j]
            out.append(merge(li.get(el, MISSING), ri[el], t.item))
            done.add(el)
            j += 1
            if next_shared is not None and next_shared == el:
                next_shared = shared.pop(0) if shared else None
    return out


# -- removal ----------------------------------------------------------------------------------


def _trie(paths: Iterable[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for p in paths:
        node = root
        for el in p[:-1]:
            node = node.setdefault(el, {})
            if node is True:  # an ancestor is removed whole already
                break
        else:
            if p:
                node[p[-1]] = True
    return root


def remove_items(value: Any, paths: Iterable[Path], t: Type) -> Any:
    """``value`` without ``paths`` (removed members take their subtree); MISSING if empty."""
    trie = _trie(paths)
    if not trie:
        return value
    return _remove(value, trie, t)


def _remove(value: Any, trie: dict[str, Any], t: Type) -> Any:
    t = _shape(t, value)
    if isinstance(t, MapType) and isinstance(value, dict) and not t.atomic:
        out: dict[str, Any] = {}
        for k, v in value.items():
            sub = trie.get(field(k))
            if sub is True:
                continue
            if sub:
                child, _ = t.child(k)
                v = _remove(v, sub, child)
                if v is MISSING:
                    continue
            out[k] = v
        return out if out or not value else MISSING
    if isinstance(t, ListType) and isinstance(value, list) and t.mode != "atomic":
        items: list[Any] = []
        for item in value:
            el = _element(t, item)
            sub = trie.get(el) if el is not None else None
            if sub is True:
                continue
            if sub:
                item = _remove(item, sub, t.item)
                if item is MISSING:
                    continue
            items.append(item)
        return items if items or not value else MISSING
    return value


def named_field_parents(paths: Iterable[Path], t: Type) -> set[Path]:
    """``paths`` plus every ancestor that is a declared field of a struct (the apiserver
    prunes a struct field a manager stops applying, when nobody owns anything in it)."""
    out = set(paths)
    for p in list(out):
        cur: Type = t
        for n, el in enumerate(p[:-1]):
            nxt: Type = UNTYPED
            if el.startswith("f:") and isinstance(cur, MapType):
                nxt, declared = cur.child(el[2:])
                if declared:
                    out.add(p[: n + 1])
            elif isinstance(cur, ListType):
                nxt = cur.item
            cur = nxt
    return out

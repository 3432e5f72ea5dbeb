"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) as kube-apiserver v1.28 applies them,
on decoded JSON values.

Pure Python (no I/O, no asyncio). Inputs are never mutated and the result shares no mutable
container with them (it is safe to modify); failures raise
:class:`~kubesim.errors.PatchError`, which carries the Status the real apiserver answers with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from kubesim.encoding.gofmt import json_kind
from kubesim.errors import PatchError

__all__ = ["copy_json", "json_merge_patch", "json_patch"]


def copy_json(v: Any) -> Any:
    """Deep copy of a JSON value (mappings become dicts, sequences lists)."""
    if isinstance(v, dict | list):
        try:
            return orjson.loads(orjson.dumps(v))  # ~10x faster than the recursion below
        except TypeError:
            pass
    if isinstance(v, dict):
        return {k: copy_json(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [copy_json(x) for x in v]
    return v


# ------------------------------------------------------------------ RFC 7386 merge patch


def json_merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch to ``target`` and return the new value.

    A non-object ``patch`` replaces the target; ``null`` members delete keys; objects
    merge recursively; arrays are replaced. Never raises. (The apiserver additionally
    rejects a top-level non-object merge patch: that check belongs to the caller.)
    """
    if not isinstance(patch, dict):
        return copy_json(patch)
    out = copy_json(target) if isinstance(target, dict) else {}
    _merge_into(out, patch)
    return out


def _merge_into(out: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            cur = out.get(k)
            if not isinstance(cur, dict):
                cur = out[k] = {}
            _merge_into(cur, v)
        else:
            out[k] = copy_json(v)


# ------------------------------------------------------------------ RFC 6902 JSON patch


def _json_equal(a: Any, b: Any) -> bool:
    """JSON value equality (``1 == 1.0``, but ``true != 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(map(_json_equal, a, b))
    return type(a) is type(b) and a == b


def _pointer(op: Mapping[str, Any], field: str) -> list[str]:
    """The decoded reference tokens of the JSON pointer in ``op[field]``."""
    path = op.get(field)
    if not isinstance(path, str):
        raise PatchError(f"{op.get('op')} operation missing or invalid {field!r}: {path!r}")
    if path and not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}: it must be empty or start with '/'")
    tokens = path.split("/")[1:]
    for t in tokens:
        if t.replace("~0", "").replace("~1", "").count("~"):
            raise PatchError(f"invalid JSON pointer {path!r}: '~' must be followed by 0 or 1")
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def _index(token: str, size: int, *, end_ok: bool) -> int:
    if token == "-" and end_ok:
        return size
    if not (token.isascii() and token.isdigit()) or (token != "0" and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    i = int(token)
    if i > size or (i == size and not end_ok):
        raise PatchError(f"array index {i} out of bounds (length {size})")
    return i


def _walk(doc: Any, tokens: list[str], path: str) -> Any:
    """The container holding the location ``tokens`` designates (which must exist)."""
    for t in tokens:
        if isinstance(doc, dict) and t in doc:
            doc = doc[t]
        elif isinstance(doc, list):
            doc = doc[_index(t, len(doc), end_ok=False)]
        else:
            raise PatchError(f"doc is missing path: {path!r}")
    return doc


def _get(doc: Any, tokens: list[str], path: str) -> Any:
    if not tokens:
        return doc
    parent, last = _walk(doc, tokens[:-1], path), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(last, len(parent), end_ok=False)]
    raise PatchError(f"doc is missing path: {path!r}")


def _add(doc: Any, tokens: list[str], value: Any, path: str, *, replace: bool = False) -> Any:
    if not tokens:
        return value
    parent, last = _walk(doc, tokens[:-1], path), tokens[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(f"doc is missing key: {path!r}")
        parent[last] = value
    elif isinstance(parent, list):
        i = _index(last, len(parent), end_ok=not replace)
        if replace:
            parent[i] = value
        else:
            parent.insert(i, value)
    else:
        raise PatchError(f"doc is missing path: {path!r}")
    return doc


def _remove(doc: Any, tokens: list[str], path: str) -> Any:
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent, last = _walk(doc, tokens[:-1], path), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(last, len(parent), end_ok=False))
    raise PatchError(f"doc is missing path: {path!r}")


def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch (a list of operations) and return the new document.

    Supports ``add``, ``remove``, ``replace``, ``move``, ``copy`` and ``test`` with JSON
    pointers (``~0``/``~1`` escapes, ``-`` appends). A non-list patch or a non-object
    operation raises ``PatchError`` with code 400 and Go's decode message; an operation
    that does not apply raises code 422. Operations apply in order, all or nothing.
    """
    if operations is None:
        return copy_json(target)
    if not isinstance(operations, list | tuple):
        raise PatchError(
            f"json: cannot unmarshal {json_kind(operations)} into Go value of type jsonpatch.Patch",
            400,
        )
    for op in operations:
        if op is not None and not isinstance(op, dict):
            raise PatchError(
                f"json: cannot unmarshal {json_kind(op)} into Go value of type jsonpatch.Operation",
                400,
            )
    doc = copy_json(target)
    for op in operations:
        op = op or {}
        kind, path, src_path = op.get("op"), str(op.get("path")), str(op.get("from"))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"{kind} operation missing value")
        if kind == "add":
            doc = _add(doc, _pointer(op, "path"), copy_json(op["value"]), path)
        elif kind == "remove":
            _remove(doc, _pointer(op, "path"), path)
        elif kind == "replace":
            doc = _add(doc, _pointer(op, "path"), copy_json(op["value"]), path, replace=True)
        elif kind in ("move", "copy"):
            src, dst = _pointer(op, "from"), _pointer(op, "path")
            if kind == "move" and dst[: len(src)] == src and len(dst) > len(src):
                raise PatchError(f"cannot move {op['from']!r} into its own child {path!r}")
            if kind == "move" and src == dst:
                _get(doc, src, src_path)
                continue
            if kind == "move":
                doc = _add(doc, dst, _remove(doc, src, src_path), path)
            else:
                doc = _add(doc, dst, copy_json(_get(doc, src, src_path)), path)
        elif kind == "test":
            if not _json_equal(_get(doc, _pointer(op, "path"), path), op["value"]):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
    return doc

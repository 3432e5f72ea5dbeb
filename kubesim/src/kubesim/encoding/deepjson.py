"""JSON for documents nested deeper than orjson goes, and nesting depth.

kube-apiserver accepts JSON nested up to 10000 levels (25d). orjson stops at 1024 levels
when reading and 255 when writing, Python's ``json`` at the interpreter's recursion
limit. :func:`loads` and :func:`dumps` are orjson for ordinary documents and fall back to
iterative code (no recursion, any depth) for deep ones, with the same output bytes
(compact, keys in insertion order, UTF-8). :func:`depth` measures nesting without parsing.
:func:`parse` is the iterative parser; it also reports duplicate object keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import orjson

from kubesim.errors import DeepJsonError

__all__ = ["depth", "dumps", "json_int", "loads", "parse"]

_STRING_OR_BRACKET = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_TOKEN = re.compile(
    r"\s*(?:(?P<open>[\[{])|(?P<close>[\]}])|(?P<colon>:)|(?P<comma>,)"
    r'|(?P<str>"(?:[^"\\\x00-\x1f]|\\.)*")'
    r"|(?P<num>-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<lit>true|false|null))",
    re.DOTALL,
)
_LITERALS = {"true": True, "false": False, "null": None}


def depth(raw: bytes) -> tuple[int, int]:
    """The deepest nesting of ``raw`` (strings skipped; below 200 an upper bound: the
    number of opening brackets) and the offset of the bracket that first went past 10000
    levels (-1 if none did). Linear in the input size."""
    opening = raw.count(b"{") + raw.count(b"[")
    if opening < 200:  # an upper bound; below it, a cheap one is good enough
        return opening, -1
    level = deepest = 0
    over = -1
    for m in _STRING_OR_BRACKET.finditer(raw):
        token = m.group()
        if token[:1] == b'"':
            continue
        if token in (b"{", b"["):
            level += 1
            if level > deepest:
                deepest = level
                if level > 10000 and over < 0:
                    over = m.start()
        else:
            level -= 1
    return deepest, over


def parse(text: str) -> tuple[Any, dict[int, list[str]]]:
    """Parse ``text`` iteratively; returns the document and, per object (by ``id``), the
    keys that appeared more than once (the last value is kept, as Go's decoder does).
    Raises :class:`DeepJsonError` for anything that is not exactly one JSON value."""
    dups: dict[int, list[str]] = {}
    stack: list[Any] = []  # containers being filled
    keys: list[str | None] = []  # the key awaiting its value, per object on the stack
    # what may come next: "value", "key" (in an object), "colon", "next" (a comma or the
    # closing bracket); right after an opening bracket its closing one may come too
    expect, just_opened = "value", False
    pos = 0

    def fail(at: int) -> DeepJsonError:
        container = "" if not stack else "object" if isinstance(stack[-1], dict) else "array"
        return DeepJsonError(at, expect, container)

    while True:
        m = _TOKEN.match(text, pos)
        start = _skip_ws(text, pos)
        if m is None:
            raise fail(start)
        kind = m.lastgroup
        pos = m.end()
        value: Any
        if kind == "close":
            top = stack[-1] if stack else None
            want = dict if m.group("close") == "}" else list
            if not isinstance(top, want) or not (expect == "next" or just_opened):
                raise fail(start)
            value = stack.pop()
            keys.pop()
        elif kind == "colon":
            if expect != "colon":
                raise fail(start)
            expect, just_opened = "value", False
            continue
        elif kind == "comma":
            if expect != "next":
                raise fail(start)
            expect = "key" if isinstance(stack[-1], dict) else "value"
            just_opened = False
            continue
        elif expect == "key":
            if kind != "str":
                raise fail(start)
            try:
                keys[-1] = json.loads(m.group("str"))
            except ValueError:
                raise fail(start) from None
            expect, just_opened = "colon", False
            continue
        elif expect != "value":
            raise fail(start)
        elif kind == "open":
            opening = m.group("open")
            stack.append({} if opening == "{" else [])
            keys.append(None)
            expect, just_opened = ("key" if opening == "{" else "value"), True
            continue
        elif kind == "str":
            try:
                value = json.loads(m.group(kind))
            except ValueError:
                raise fail(start) from None
        elif kind == "num":
            literal = m.group(kind)
            value = json_int(literal) if literal.lstrip("-").isdigit() else float(literal)
        else:
            value = _LITERALS[m.group("lit")]
        just_opened = False
        if not stack:
            rest = _skip_ws(text, pos)
            if rest != len(text):
                raise DeepJsonError(rest, "end")
            return value, dups
        top = stack[-1]
        if isinstance(top, dict):
            key = keys[-1]
            assert key is not None
            if key in top:
                dups.setdefault(id(top), []).append(key)
            top[key] = value
        else:
            top.append(value)
        expect = "next"


def json_int(text: str) -> int | float:
    """An integer literal as Go's unstructured decoding keeps it: an int64 when it fits,
    else a float64 (so every number can be written back)."""
    value = int(text)
    return value if -(2**63) <= value < 2**63 else float(value)


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def loads(raw: bytes | str) -> Any:
    """orjson's ``loads``, or :func:`parse` when the document is too deep for it."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth" not in str(exc).lower() and "recursion" not in str(exc).lower():
            raise
    text = raw.decode() if isinstance(raw, bytes) else raw
    return parse(text)[0]


def dumps(obj: Any, *, sort_keys: bool = False) -> bytes:
    """orjson's ``dumps`` (compact, keys sorted if asked), or the iterative encoder for
    documents too deep for it; the bytes are the same either way."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except orjson.JSONEncodeError as exc:
        if "recursion" not in str(exc).lower():
            raise
    return "".join(_encode(obj, sort_keys)).encode()


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return orjson.dumps(value).decode()


def _encode(obj: Any, sort_keys: bool = False) -> Iterator[str]:
    # each frame: [items, closing bracket, is a dict, no item written yet]
    stack: list[list[Any]] = []
    current: Any = obj
    while True:
        if isinstance(current, dict):
            yield "{"
            items = sorted(current.items()) if sort_keys else current.items()
            stack.append([iter(items), "}", True, True])
        elif isinstance(current, list | tuple):
            yield "["
            stack.append([iter(current), "]", False, True])
        else:
            yield _scalar(current)
        while stack:
            frame = stack[-1]
            nxt: Any = next(frame[0], _END)
            if nxt is _END:
                stack.pop()
                yield frame[1]
                continue
            if not frame[3]:
                yield ","
            frame[3] = False
            if frame[2]:
                key, current = nxt
                yield json.dumps(str(key), ensure_ascii=False) + ":"
            else:
                current = nxt
            break
        else:
            return


_END = object()

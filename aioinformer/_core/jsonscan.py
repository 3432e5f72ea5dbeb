"""Iterative JSON scanning: reading what we can from input too deep (or too broken) to decode.

The decoders of :mod:`~aioinformer._core.objects` (msgspec, orjson) recurse, and stop at a
nesting depth of about a thousand levels; a real API server accepts custom resources nested
far deeper (``x-kubernetes-preserve-unknown-fields``). When they fail, these helpers, which
keep no stack but a list, still find:

* :func:`peek_key`: the ``namespace/name`` of the object of a watch event or of one object,
  for the message that says which object was skipped;
* :func:`split_list`: the items of a list body, each as a byte span, so that the other items
  of a list with one undecodable item can still be decoded one by one.

Both read the bytes once, token by token (a few tens of MB/s: they are for the error path
only), never raise on malformed input (they return None), and decode nothing but the few
strings they return.
"""

from __future__ import annotations

import re

import orjson

__all__ = ["PEEK_LIMIT", "peek_key", "split_list"]

PEEK_LIMIT = 1 << 20
""":func:`peek_key` reads at most this many bytes (metadata comes first on the wire)."""

# a string (escapes included), a structural character, or a bare scalar (number, literal)
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_OPEN = frozenset(b"{[")
_CLOSE = frozenset(b"}]")
_QUOTE, _COLON, _COMMA, _LBRACE = ord('"'), ord(":"), ord(","), ord("{")


def _text(token: bytes) -> str | None:
    try:
        value = orjson.loads(token)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


def peek_key(data: bytes, *, event: bool = False) -> str | None:
    """``"namespace/name"`` (or ``"name"``) read from ``metadata`` of the object ``data``
    (of the event's ``object`` when ``event``), or None when it cannot be found in the first
    :data:`PEEK_LIMIT` bytes."""
    want: tuple[str | None, ...] = (None, "object", "metadata") if event else (None, "metadata")
    path: list[str | None] = []  # the key each open container sits under (None in arrays)
    objects: list[bool] = []  # whether each open container is an object
    key: str | None = None  # the key of the value coming next, in an object
    expect_key = False
    found: dict[str, str] = {}
    for m in _TOKEN.finditer(data, 0, min(len(data), PEEK_LIMIT)):
        token = m.group()
        c = token[0]
        if c in _OPEN:
            path.append(key)
            objects.append(c == _LBRACE)
            key, expect_key = None, c == _LBRACE
        elif c in _CLOSE:
            if not path:
                break
            if tuple(path) == want:
                break  # the metadata ended
            path.pop()
            objects.pop()
            key, expect_key = None, False
        elif c == _COMMA:
            key, expect_key = None, bool(objects) and objects[-1]
        elif c == _COLON:
            expect_key = False
        elif expect_key:
            key, expect_key = _text(token), False
        else:  # a scalar value
            if key in ("name", "namespace") and c == _QUOTE and tuple(path) == want:
                value = _text(token)
                if value is not None:
                    found[key] = value
                    if len(found) == 2:
                        break
            key = None
    name = found.get("name")
    if not name:
        return None
    namespace = found.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def split_list(body: bytes) -> tuple[bytes, list[tuple[int, int]]] | None:
    """The list ``body`` without its items (``"items":[]``, to decode its metadata) and
    the ``(start, end)`` span of each item, in order; None if ``body`` is not a JSON object
    with an ``items`` array whose brackets balance."""
    depth = 0
    objects: list[bool] = []
    expect_key = False
    key: bytes | None = None
    items_open = -1  # offset of the items array's "["
    start = -1  # offset of the item being read
    spans: list[tuple[int, int]] = []
    for m in _TOKEN.finditer(body):
        token = m.group()
        c = token[0]
        if c in _OPEN:
            if items_open >= 0 and depth == 2:
                start = m.start()
            elif depth == 1 and c != _LBRACE and key == b'"items"':
                items_open = m.start()
            depth += 1
            objects.append(c == _LBRACE)
            expect_key = c == _LBRACE
        elif c in _CLOSE:
            if not objects:
                return None
            depth -= 1
            objects.pop()
            expect_key = False
            if items_open >= 0:
                if depth == 2 and start >= 0:
                    spans.append((start, m.end()))
                    start = -1
                elif depth == 1:  # the end of the items array
                    return body[: items_open + 1] + body[m.start() :], spans
        elif c == _COMMA:
            expect_key = bool(objects) and objects[-1]
        elif c == _COLON:
            expect_key = False
        elif expect_key:
            if depth == 1:
                key = token
            expect_key = False
        elif items_open >= 0 and depth == 2:  # a scalar item (not an object: a bad one)
            spans.append((m.start(), m.end()))
    return None

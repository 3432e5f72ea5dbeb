"""Go's renditions of values in kube-apiserver's messages: ``strconv.Quote`` (``%q``), ``%v`` of a
decoded JSON value, and the JSON type names of ``encoding/json``'s unmarshal errors."""

from __future__ import annotations

from typing import Any

__all__ = ["go_quote", "go_value", "json_kind"]

_ESCAPES = {
    "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
    "\v": "\\v", '"': '\\"', "\\": "\\\\",
}  # fmt: skip


def go_quote(s: str) -> str:
    """Go's ``strconv.Quote`` (``%q``)."""
    out = []
    for ch in s:
        cp = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():  # same set as Go's unicode.IsPrint
            out.append(ch)
        else:
            fmt = "\\x{:02x}" if cp < 0x80 else "\\u{:04x}" if cp < 0x10000 else "\\U{:08x}"
            out.append(fmt.format(cp))
    return '"' + "".join(out) + '"'


def json_kind(v: Any) -> str:
    """The JSON type name Go's ``encoding/json`` uses in unmarshal errors."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list | tuple) else "object"


def go_value(v: Any) -> str:
    """Roughly Go's ``%v`` of a decoded JSON value (for error messages)."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{go_value(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list | tuple):
        return "[" + " ".join(go_value(x) for x in v) + "]"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)

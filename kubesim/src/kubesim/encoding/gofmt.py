"""Go's ``strconv.Quote`` (``%q``), as kube-apiserver's messages quote values."""

from __future__ import annotations

__all__ = ["go_quote"]

_ESC = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(s: str) -> str:
    """Go's ``strconv.Quote`` (``%q``)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():  # same set as Go's unicode.IsPrint
            out.append(ch)
        else:
            out.append(_ESC.get(ch) or (f"\\x{o:02x}" if o < 0x80 else f"\\u{o:04x}"))
    return '"' + "".join(out) + '"'

"""The YAML text go-yaml v3 writes for a JSON value, as gnostic stores it in an ``Any``.

gnostic (``compiler.Marshal``) parses the OpenAPI JSON into ``yaml.Node`` trees, clears
every node's style and marshals the node: block style, 4-space indentation (a sequence's
items indented under their key, an item's mapping two spaces past its ``- ``), no line
wrapping, Unicode written as is, ``{}`` and ``[]`` for empty collections, one trailing
newline and no document markers. A string is plain unless plain text would read back as
another type (``"true"``, ``"1"``, ``""``, ``"2006-01-02"``: then double-quoted) or the
emitter forbids it (leading or trailing space, indicators: then single- or
double-quoted); a string holding a line break is a literal block (``|``, ``|-``, ``|+``).
Numbers, booleans and null are written as JSON writes them.

The emitter is PyYAML's (a port of the libyaml emitter go-yaml carries), with go-yaml's
changes: its indentation rule, its scalar analysis (a tab forbids plain and single-quoted
text but not a literal block), its scalar style choice and simple-key check, and no
``---`` for an empty document.
"""

from __future__ import annotations

import io
import re
from functools import lru_cache
from typing import Any

import orjson
import yaml
from yaml import (
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

__all__ = ["marshal"]

_BREAKS = "\r\n\x85\u2028\u2029"
_BLANKZ = " \t\0" + _BREAKS
_INT = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_TIMESTAMP = re.compile(
    r"\d{4}-(\d\d?)-(\d\d?)"
    r"(?:(?: |([Tt]))(\d\d?):(\d\d?):(\d\d?)(?:\.\d+)?(?(3)(?:Z|[-+]\d\d:\d\d)))?"
)
_SPECIAL = {"true", "True", "TRUE", "false", "False", "FALSE", "", "~", "null", "Null"}
_SPECIAL |= {"NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "<<"}
_SPECIAL |= {s + i for s in "+-" for i in (".inf", ".Inf", ".INF")}


def _fits(text: str) -> bool:
    """Whether go-yaml's ``strconv.ParseInt``/``ParseUint`` (base 0) accept ``text``."""
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    base = {"0x": 16, "0X": 16, "0o": 8, "0O": 8, "0b": 2, "0B": 2}.get(digits[:2])
    if base is not None:
        n = int(digits[2:], base)
    elif len(digits) > 1 and digits[0] == "0":
        n = int(digits, 8)
    else:
        n = int(digits)
    if sign < 0:
        return n <= 1 << 63
    return n < 1 << 64 and not (text.startswith("+") and n >= 1 << 63)


def _is_timestamp(text: str) -> bool:
    """go-yaml's ``parseTimestamp``: a date, a date and time, or an RFC 3339 time."""
    m = _TIMESTAMP.fullmatch(text)
    if m is None:
        return False
    year, month, day = int(text[:4]), int(m[1]), int(m[2])
    if not 1 <= month <= 12 or day < 1:
        return False
    if m[4] is not None and (int(m[4]) > 23 or int(m[5]) > 59 or int(m[6]) > 59):
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return day <= [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]


def _reads_as_other(text: str) -> bool:
    """Whether go-yaml's ``resolve`` gives plain ``text`` a tag other than ``!!str``."""
    if text in _SPECIAL:
        return True
    first = text[0]
    if first == ".":
        return _DOT_FLOAT.fullmatch(text) is not None
    if first not in "+-0123456789":
        return False
    if _is_timestamp(text):
        return True
    plain = text.replace("_", "")
    if _INT.fullmatch(plain) and _fits(plain):
        return True
    return _FLOAT.fullmatch(plain) is not None


class _GoEmitter(yaml.emitter.Emitter):  # type: ignore[misc]  # PyYAML has no types
    """PyYAML's emitter with go-yaml v3's changes (see the module docstring)."""

    indent: int | None
    analysis: Any

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        self.indents.append(self.indent)
        if self.indent is None:
            self.indent = self.best_indent if flow else 0
        elif self.states and self.states[-1] == self.expect_block_sequence_item:
            self.indent += 2
        else:
            self.indent = self.best_indent * ((self.indent + self.best_indent) // self.best_indent)

    def check_empty_document(self) -> bool:
        return False

    def check_simple_key(self) -> bool:
        event = self.event
        if isinstance(event, ScalarEvent):
            if self.analysis is None:
                self.analysis = self.analyze_scalar(event.value)
            return not self.analysis.multiline and len(event.value.encode()) <= 128
        if isinstance(event, SequenceStartEvent):
            return bool(self.check_empty_sequence())
        if isinstance(event, MappingStartEvent):
            return bool(self.check_empty_mapping())
        return False

    def choose_scalar_style(self) -> str:
        if self.analysis is None:
            self.analysis = self.analyze_scalar(self.event.value)
        a = self.analysis
        style = self.event.style or ""
        if self.simple_key_context and a.multiline:
            style = '"'
        if style == "":
            plain = a.allow_flow_plain if self.flow_level else a.allow_block_plain
            if not plain or (not a.scalar and (self.flow_level or self.simple_key_context)):
                style = "'"
        if style == "'" and not a.allow_single_quoted:
            style = '"'
        if style == "|" and (not a.allow_block or self.flow_level or self.simple_key_context):
            style = '"'
        return style

    def analyze_scalar(self, scalar: str) -> Any:
        if not scalar:
            return yaml.emitter.ScalarAnalysis(scalar, True, False, False, True, True, True, False)
        block = flow = breaks = special = tabs = False
        leading = trailing = trailing_space = break_space = space_break = False
        if scalar.startswith(("---", "...")):
            block = flow = True
        preceded = True
        previous_space = previous_break = False
        last = len(scalar) - 1
        for i, ch in enumerate(scalar):
            followed = i == last or scalar[i + 1] in _BLANKZ
            if i == 0:
                if ch in "#,[]{}&*!|>'\"%@`":
                    flow = block = True
                elif ch in "?:":
                    flow = True
                    block = block or followed
                elif ch == "-" and followed:
                    flow = block = True
            elif ch in ",?[]{}":
                flow = True
            elif ch == ":":
                flow = True
                block = block or followed
            elif ch == "#" and preceded:
                flow = block = True
            if ch == "\t":
                tabs = True
            elif not _printable(ch):
                special = True
            if ch == " ":
                leading = leading or i == 0
                trailing = trailing or i == last
                trailing_space = trailing_space or i == last
                break_space = break_space or previous_break
                previous_space, previous_break = True, False
            elif ch in _BREAKS:
                breaks = True
                leading = leading or i == 0
                trailing = trailing or i == last
                space_break = space_break or previous_space
                previous_space, previous_break = False, True
            else:
                previous_space = previous_break = False
            preceded = ch in _BLANKZ
        flow_plain = block_plain = single = block_ok = True
        if leading or trailing or breaks:
            flow_plain = block_plain = False
        if trailing_space:
            block_ok = False
        if break_space or space_break or tabs or special:
            flow_plain = block_plain = single = False
        if space_break or special:
            block_ok = False
        if flow:
            flow_plain = False
        if block:
            block_plain = False
        return yaml.emitter.ScalarAnalysis(
            scalar, False, breaks, flow_plain, block_plain, single, True, block_ok
        )


def _printable(ch: str) -> bool:
    """libyaml's ``is_printable`` (Unicode output allowed)."""
    return (
        ch == "\n"
        or " " <= ch <= "~"
        or ch == "\x85"
        or "\xa0" <= ch <= "\ud7ff"
        or ("\ue000" <= ch <= "\ufffd" and ch != "\ufeff")
        or "\U00010000" <= ch <= "\U0010ffff"
    )


def _events(value: Any, out: list[Event]) -> None:
    if isinstance(value, dict):
        out.append(MappingStartEvent(None, None, True, flow_style=False))
        for k, v in value.items():
            _events(str(k), out)
            _events(v, out)
        out.append(MappingEndEvent())
    elif isinstance(value, list):
        out.append(SequenceStartEvent(None, None, True, flow_style=False))
        for v in value:
            _events(v, out)
        out.append(SequenceEndEvent())
    elif isinstance(value, str):
        style = "|" if "\n" in value else '"' if _reads_as_other(value) else None
        out.append(ScalarEvent(None, None, (True, True), value, style=style))
    else:
        out.append(ScalarEvent(None, None, (True, True), orjson.dumps(value).decode()))


@lru_cache(maxsize=4096)
def _marshal_json(text: str) -> str:
    events: list[Event] = [StreamStartEvent(), DocumentStartEvent(explicit=False)]
    _events(orjson.loads(text), events)
    out = io.StringIO()
    emitter = _GoEmitter(out, indent=4, width=1 << 31, allow_unicode=True)
    for event in events:
        emitter.emit(event)
    emitter.emit(DocumentEndEvent(explicit=False))
    emitter.open_ended = False  # go-yaml writes no "..." at the end of the stream
    emitter.emit(StreamEndEvent())
    return out.getvalue()


def marshal(value: Any) -> str:
    """go-yaml v3's ``yaml.Marshal`` of the style-less node tree of a JSON value."""
    return _marshal_json(orjson.dumps(value).decode())

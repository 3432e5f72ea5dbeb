"""Regular expressions as kube-apiserver v1.28 compiles them: Go 1.21's ``regexp``.

Go's ``regexp`` is RE2: matching takes time linear in the input (no backtracking, so a
pattern such as ``^(a+)+$`` cannot hang the server), and the syntax has no lookaround and
no backreferences. KubeSim uses RE2 itself (the ``google-re2`` binding of the C++ library
Go's package was ported from), so the accepted syntax and the matches are Go's; what the
C++ library does differently from Go 1.21 is mapped here:

* Go 1.21 rejects ``(?<name>...)`` (``invalid or unsupported Perl syntax: `(?<```; Go 1.22
  added it), ``\\C`` (``invalid escape sequence: `\\C```) and capture names with
  characters other than ASCII letters, digits and ``_``, which C++ RE2 accepts;
* the error texts are Go's: ``error parsing regexp: <code>: `<expr>```, e.g.
  ``invalid or unsupported Perl syntax: `(?=``` for a lookahead;
* ``$`` is the end of the text, ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII (both
  libraries; Python's ``re`` differs in each).

:func:`compile_go` compiles (cached, raising :class:`GoRegexpError` with Go's message);
:func:`go_error` is that message or None; a compiled pattern's ``search(value)`` is Go's
``MatchString`` (unanchored).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

import re2  # type: ignore[import-untyped]

__all__ = ["GoRegexpError", "compile_go", "go_error"]

#: C++ RE2's error texts (``RE2::ErrorCode``) and Go's ``syntax.ErrorCode`` for each.
_GO_CODES: Final = {
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": "expression too large",
    "pattern too large - reverse compile failed": "expression too large",
    "bad nesting depth": "expression nests too deeply",
}

#: A code point no pattern a user writes is expected to hold: what stands in for a
#: construct Go rejects and C++ RE2 accepts, so that C++ RE2 stops there too.
_SENTINEL: Final = "\U0010fffd"

#: C++ RE2's error where it meets the sentinel put in place of each such construct.
_STOPPED: Final = {
    "(?": f"invalid perl operator: (?{_SENTINEL}",
    "\\": f"invalid escape sequence: \\{_SENTINEL}",
}

#: Go's ``maxHeight``: the deepest parse tree it accepts (C++ RE2 accepts deeper ones).
_MAX_HEIGHT: Final = 1000
#: Go's ``maxSize``: the largest program, in instructions of 40 bytes, it compiles.
_MAX_SIZE: Final = (128 << 20) // 40

#: The capture group names Go 1.21 accepts (C++ RE2 accepts any word characters). A
#: fixed pattern over a name only: linear in Python's ``re`` too.
_CAPTURE_NAME: Final = re.compile(r"[A-Za-z0-9_]+")

#: Memory for one compiled pattern (C++ RE2's default is 8 MiB, which refuses patterns Go
#: accepts, such as ``\pL{1000}``).
_MAX_MEM: Final = 128 << 20


class GoRegexpError(ValueError):
    """A pattern Go's ``regexp.Compile`` refuses; ``str()`` is Go's error text."""


def _options() -> Any:
    opts = re2.Options()
    opts.log_errors = False
    opts.max_mem = _MAX_MEM
    return opts


_OPTIONS: Final = _options()


@functools.lru_cache(maxsize=512)
def compile_go(pattern: str) -> Any:
    """``pattern`` compiled as Go's ``regexp.Compile`` would accept it (an RE2 object:
    ``.search(value)`` is Go's ``MatchString``); raises :class:`GoRegexpError` with Go's
    message otherwise."""
    go_only = _go_only_rejection(pattern)
    if go_only is not None:
        at, expr, code = go_only
        stand_in = expr[:2] if expr.startswith("(?") else "\\"
        try:
            re2.compile(pattern[:at] + stand_in + _SENTINEL, _OPTIONS)
        except re2.error as exc:
            if _text(exc) == _STOPPED[stand_in]:
                raise GoRegexpError(_go_message(code, expr)) from None
        # else an error before the construct: RE2 finds it in ``pattern`` too, as it is
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise GoRegexpError(_mapped(_text(exc), pattern)) from None
    if go_only is not None:
        raise GoRegexpError(_go_message(go_only[2], go_only[1]))
    if len(pattern) > _MAX_HEIGHT:  # shorter ones are within both limits
        height, size = _tree_limits(pattern)
        if height > _MAX_HEIGHT:
            raise GoRegexpError(_go_message("expression nests too deeply", pattern))
        if size > _MAX_SIZE:
            raise GoRegexpError(_go_message("expression too large", pattern))
    return compiled


def go_error(pattern: str) -> str | None:
    """Go's ``regexp.Compile`` error text for ``pattern``, or None when Go accepts it."""
    try:
        compile_go(pattern)
    except GoRegexpError as exc:
        return str(exc)
    return None


def _text(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else ""
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def _go_message(code: str, expr: str) -> str:
    return f"error parsing regexp: {code}: `{expr}`"


def _mapped(text: str, pattern: str) -> str:
    """C++ RE2's ``<text>: <arg>`` as Go's message."""
    for cpp, go in sorted(_GO_CODES.items(), key=lambda kv: -len(kv[0])):
        if text == cpp or text.startswith(cpp + ": "):
            expr = text[len(cpp) + 2 :]
            if go == "trailing backslash at end of expression":
                expr = ""
            elif go in ("expression too large", "expression nests too deeply"):
                expr = pattern  # Go names the whole pattern
            elif go == "invalid nested repetition operator" and (count := _bad_count(expr)):
                return _go_message("invalid repeat count", count)
            elif go == "invalid repeat count":
                expr = expr.removesuffix("?")  # Go names the counts without the '?'
            elif expr in ("\\p", "\\P") and pattern.endswith(expr) and pattern[-3:-2] != "-":
                go = "invalid character class range"  # a \p cut off, not a range's end
            elif cpp == "invalid UTF-8" and not expr and "\\x{" in pattern:
                # a \x{ cut off by the end of the pattern
                return _go_message("invalid escape sequence", pattern[pattern.rindex("\\x{") :])
            return _go_message(go, expr)
    return f"error parsing regexp: {text}"


def _bad_count(ops: str) -> str | None:
    """In C++ RE2's stacked repetition ``ops`` (``{2,}{1001}``), the last one when its
    counts are out of range: Go checks the counts first."""
    last = ops.rstrip("?")
    if not last.endswith("}") or "{" not in last:
        return None
    count = last[last.rindex("{") :]
    low, _, high = count[1:-1].partition(",")
    try:
        lo = int(low)
        hi = int(high) if high else (-1 if "," in count else lo)
    except ValueError:
        return None
    return count if lo > 1000 or hi > 1000 or (hi >= 0 and lo > hi) else None


def _go_only_rejection(pattern: str) -> tuple[int, str, str] | None:
    """The first construct Go 1.21 refuses and C++ RE2 accepts (its offset, the text Go's
    message names, Go's error code), read left to right as Go's parser reads: ``\\Q...\\E``
    and character classes (``[...]``, ``[:name:]`` inside) hold literals. Go 1.21 allows
    only ASCII letters, digits and ``_`` in a capture group's name."""
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("\\C", i):
            return i, "\\C", "invalid escape sequence"
        if pattern.startswith("\\Q", i):
            end = pattern.find("\\E", i + 2)
            if end < 0:
                return None
            i = end + 2
        elif pattern[i] == "\\":
            i += 2
        elif pattern[i] == "[":
            i, at = _class_end(pattern, i)
            if at >= 0:
                return at, "\\C", "invalid escape sequence"
        elif pattern.startswith("(?<", i):
            return i, "(?<", "invalid or unsupported Perl syntax"
        elif pattern.startswith("(?P<", i) and (end := pattern.find(">", i)) >= 0:
            if not _CAPTURE_NAME.fullmatch(pattern[i + 4 : end]):
                return i, pattern[i : end + 1], "invalid named capture"
            i += 1
        else:
            i += 1
    return None


# -- Go's limits on the parse tree -----------------------------------------------------------

#: A parsed piece: its height and its size as Go's ``calcHeight`` and ``calcSize`` count
#: them, and what it is: ``c`` a literal character (consecutive ones make one literal node,
#: ``s``), ``k`` a character class (alternatives that are all characters or classes make
#: one class node), ``o`` anything else.
_Piece = tuple[int, int, str]
_ATOM: Final = {"c": (1, 1, "c"), "k": (1, 1, "k"), "o": (1, 1, "o")}


def _concat(items: list[_Piece]) -> _Piece:
    merged: list[_Piece] = []
    for item in items:
        if item[2] == "c" and merged and merged[-1][2] in "cs":
            merged[-1] = (1, merged[-1][1] + 1, "s")  # one literal node
        else:
            merged.append(item)
    if not merged:
        return (1, 1, "o")  # an empty match
    if len(merged) == 1:
        return merged[0]
    return (1 + max(p[0] for p in merged), sum(p[1] for p in merged), "o")


def _alternate(branches: list[_Piece]) -> _Piece:
    if len(branches) == 1:
        return branches[0]
    if all(p[2] in "ck" for p in branches):
        return _ATOM["k"]
    height = 1 + max(p[0] for p in branches)
    return (height, sum(p[1] for p in branches) + len(branches) - 1, "o")


def _repeat(op: str, sub: _Piece) -> _Piece:
    """``sub`` under repetition ``op`` (``*``, ``+``, ``?``, ``{n}``, ``{n,}``, ``{n,m}``)."""
    size = sub[1]
    if op == "*":
        size += 2
    elif op in "+?":
        size += 1
    else:
        low, comma, high = op[1:-1].partition(",")
        lo = int(low)
        if comma and not high:
            size = 2 + size if lo == 0 else 1 + lo * size
        else:
            hi = int(high) if comma else lo
            size = hi * size + (hi - lo)
    return (1 + sub[0], max(size, 1), "o")


def _tree_limits(pattern: str) -> tuple[int, int]:
    """The height and size of the tree Go's parser builds for ``pattern`` (which RE2
    accepted), as its ``calcHeight`` and ``calcSize`` count them: a capture, a repetition,
    a concatenation and an alternation of several pieces each add a level; literal strings
    and classes are one node. Go's simplifications beyond those (factoring common prefixes
    out of alternatives) are not modelled: near a limit the answer may be off by a level."""
    # each open group: whether it captures, its finished branches, its current branch
    stack: list[tuple[bool, list[_Piece], list[_Piece]]] = [(False, [], [])]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        items = stack[-1][2]
        if c == "\\":
            i = _escape(pattern, i, items)
        elif c == "[":
            items.append(_ATOM["k"])
            i = _class_end(pattern, i)[0]
        elif c in "*+?" or (c == "{" and _COUNTS.match(pattern, i)):
            op = c if c != "{" else _COUNTS.match(pattern, i).group(0)  # type: ignore[union-attr]
            i += len(op)
            if pattern.startswith("?", i):
                i += 1  # non-greedy: the same node
            if items:
                items[-1] = _repeat(op, items[-1])
        elif c == "(":
            flags = _FLAGS.match(pattern, i)
            if flags is not None and flags.group(0).endswith(")"):
                i = flags.end()  # flags only: no node
                continue
            named = flags is not None and flags.group(0).endswith("<")
            stack.append((flags is None or named, [], []))
            i = pattern.index(">", i) + 1 if named else flags.end() if flags else i + 1
        elif c == ")" and len(stack) > 1:
            capture, branches, items = stack.pop()
            h, size, kind = _alternate([*branches, _concat(items)])
            stack[-1][2].append((1 + h, 2 + size, "o") if capture else (h, size, kind))
            i += 1
        elif c == "|":
            stack[-1][1].append(_concat(items))
            items.clear()
            i += 1
        else:
            items.append(_ATOM["k" if c == "." else "o" if c in "^$" else "c"])
            i += 1
    _, branches, items = stack[0]
    height, size, _ = _alternate([*branches, _concat(items)])
    return height, size


def _escape(pattern: str, i: int, items: list[_Piece]) -> int:
    """Add the escape at ``i`` to ``items``; the offset after it."""
    nxt = pattern[i + 1 : i + 2]
    if nxt == "Q":
        end = pattern.find("\\E", i + 2)
        end = len(pattern) if end < 0 else end
        items.extend(_ATOM["c"] for _ in pattern[i + 2 : end])
        return end + 2
    if nxt in ("p", "P"):
        items.append(_ATOM["k"])
        return pattern.find("}", i) + 1 if pattern.startswith("{", i + 2) else i + 3
    if nxt == "x" and pattern.startswith("{", i + 2):
        items.append(_ATOM["c"])
        return pattern.find("}", i) + 1
    items.append(_ATOM["k" if nxt in "dDwWsS" else "o" if nxt in "bBAz" else "c"])
    return i + 2


#: A repetition's counts, as Go parses them (``{n}``, ``{n,}``, ``{n,m}``).
_COUNTS: Final = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
#: A group's opening with flags or a name: ``(?i)``, ``(?i-s:``, ``(?:``, ``(?P<``.
_FLAGS: Final = re.compile(r"\(\?(?:P?<|[imsU]*(?:-[imsU]*)?[:)])")


def _class_end(pattern: str, i: int) -> tuple[int, int]:
    """The offset after the character class opening at ``i``, and that of the first
    ``\\C`` in it (-1 if none; a ``[:name:]`` holds none, whatever its text)."""
    i += 1
    if pattern.startswith("^", i):
        i += 1
    start, escape_c = i, -1
    while i < len(pattern):
        if pattern[i] == "\\":
            if pattern.startswith("C", i + 1) and escape_c < 0:
                escape_c = i
            i += 2
            continue
        if pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) >= 0:
            i = end + 2
            continue
        if pattern[i] == "]" and i > start:
            return i + 1, escape_c
        i += 1
    return i, escape_c

"""Shard selectors (``ListOptions.shardSelector``) as kube-apiserver v1.36 parses and matches
them, behind its alpha feature gate ``ShardedListAndWatch`` (KEP-5866).

There is no recording of a v1.36 server here; this module follows these documents and
sources (read 2026-12-02), and :mod:`kubesim.server.lists` / :mod:`kubesim.server.watch`
apply it where the real server does:

- KEP-5866 (kubernetes/enhancements ``keps/sig-api-machinery/5866-server-side-sharded-list-
  and-watch``, README and kep.yaml; https://www.kubernetes.dev/resources/keps/5866/): alpha in
  v1.36, gate ``ShardedListAndWatch`` on kube-apiserver, off by default; a ``shardSelector``
  query parameter on LIST and WATCH; ``shardRange(fieldPath, hexStart, hexEnd)``, bounds
  "64-bit strings with a '0x' prefix", ``hexStart <= x < hexEnd``; several ranges joined by
  ``||``; field paths ``object.metadata.uid`` and ``object.metadata.namespace``; FNV-1a over
  the field's string value, 64-bit; an old server ignores the unknown parameter, a new one
  answers lists with ``ListMeta.shardInfo`` echoing the selector.
- The v1.36 API reference, ``ListOptions.shardSelector`` (every list/watch operation's query
  parameters) and ``ListMeta.shardInfo`` / ``ShardInfo.selector``: "hexStart and hexEnd are
  single-quoted CEL string literals with a '0x' prefix, defining the inclusive lower and
  exclusive upper bounds over the 64-bit FNV-1a hash space. The full range is [0x0,
  0x10000000000000000), where the exclusive upper bound equals 2^64"; shardInfo is "set when
  the list is a filtered subset ... It echoes back the selector".
- kubernetes/kubernetes#136657 as published in k8s.io/apiserver v0.36.0 (the code is
  ``pkg/sharding/parser.go``, ``pkg/registry/generic/registry/store.go``,
  ``pkg/storage/selection_predicate.go``, ``pkg/storage/cacher/cacher.go``) and
  k8s.io/apimachinery ``pkg/sharding`` (``hash.go``, ``selector.go``, ``accessor.go``).

The facts this module implements (where the API reference's examples and the parser differ,
the parser decides, since it is what answers):

1. The text is trimmed of surrounding whitespace, then parsed as a CEL expression (cel-go's
   parser, no macros) that must be ``shardRange(...)`` calls joined by ``||`` (parentheses
   and CEL whitespace/comments allowed). An empty text after trimming is an error ("empty
   shard selector is not allowed; omit the parameter for unfiltered lists"); an absent or
   empty parameter means no sharding.
2. ``shardRange`` takes exactly 3 arguments: a field path (an identifier/select chain) that
   must be ``object.metadata.uid`` or ``object.metadata.namespace``, then two CEL string
   literals (single or double quoted). Each bound is ``0x`` (lower case ``x``) and exactly
   16 lower-case hex digits, or exactly ``0x10000000000000000`` (2**64, 17 digits). So
   ``'0x0'`` -- the API reference's own first example -- is rejected ("... must be a
   0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)"),
   and so are upper-case digits.
3. Start must be less than end (``shard range start S must be less than end E``); every
   range of one selector must name the same field; ranges may overlap or repeat and stay as
   given, in order.
4. An object matches when FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
   0x100000001b3, over the UTF-8 bytes) of the field's value lies in any range. A
   cluster-scoped object's namespace is "", so namespace sharding puts all of them in the
   shard holding 0xcbf29ce484222325.
5. ``shardInfo.selector`` is the canonical form, not the request's text:
   ``shardRange(<path>, '<start>', '<end>')`` joined by `` || ``.
6. With the gate on, k8s.io/apiserver v0.36.0 fails the list or watch of a selector that
   does not parse with HTTP 500, no reason, message ``invalid shard selector: <parser
   message>`` (the generic store returns a plain Go error); KubeSim answers the same message
   as a 400 BadRequest, as the issue and the KEP ask (a client must not retry it). Syntax
   errors are ``CEL parse error: Syntax error: ...``; their detail is KubeSim's, not
   ANTLR's. KubeSim's CEL subset has no maps, messages or ternaries (a syntax error here,
   a parsed-then-rejected expression in Go: both fail the request).

Pure Python (no I/O, no asyncio). Contract: :class:`~kubesim.errors.SelectorError` messages
are the Go parser's (without the ``invalid shard selector:`` prefix the store adds).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from kubesim.encoding.gofmt import go_quote
from kubesim.errors import SelectorError

__all__ = [
    "FIELD_PATHS",
    "HASH_SPACE",
    "ShardRange",
    "ShardSelector",
    "fnv1a_64",
]

#: the exclusive upper bound of the hash space, 2**64 ("0x10000000000000000")
HASH_SPACE = 1 << 64
FIELD_PATHS = ("object.metadata.uid", "object.metadata.namespace")

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = HASH_SPACE - 1
_TOP = "0x10000000000000000"


@functools.lru_cache(maxsize=1 << 18)
def fnv1a_64(value: str) -> int:
    """64-bit FNV-1a of ``value``'s UTF-8 bytes (Go's ``hash/fnv.New64a``).

    About 10 us per uid in pure Python, 1 us remembered: the last 262,144 values are
    (about 120 B each, 30 MiB when full), so a uid is hashed once while its object is in
    use, not once per list, event and watcher."""
    h = _FNV_OFFSET
    for b in value.encode():
        h = ((h ^ b) * _FNV_PRIME) & _MASK
    return h


@dataclass(frozen=True, slots=True)
class ShardRange:
    """``[start, end)`` over the hash space, with the bound texts as given."""

    start: int
    end: int

    def contains(self, h: int) -> bool:
        return self.start <= h < self.end


def _bound_text(v: int) -> str:
    return _TOP if v == HASH_SPACE else f"0x{v:016x}"


@dataclass(frozen=True, slots=True)
class ShardSelector:
    """A parsed ``shardSelector``: one field path and the ranges of its hash it selects."""

    field: str
    ranges: tuple[ShardRange, ...]

    @classmethod
    def parse(cls, text: str) -> ShardSelector:
        """``text`` as kube-apiserver v1.36 parses it (see the module docstring); a
        :class:`~kubesim.errors.SelectorError` with the Go parser's message otherwise."""
        expr = text.strip(" \t\n\v\f\r\x85\xa0")
        if not expr:
            raise SelectorError(
                "empty shard selector is not allowed; omit the parameter for unfiltered lists"
            )
        tree = _Parser(expr).parse()
        reqs = _walk(tree)
        for field, _ in reqs[1:]:
            if field != reqs[0][0]:
                raise SelectorError(
                    "all shard ranges must use the same field, got "
                    f"{go_quote(reqs[0][0])} and {go_quote(field)}"
                )
        return cls(reqs[0][0], tuple(r for _, r in reqs))

    @property
    def text(self) -> str:
        """The canonical form the server echoes in ``ListMeta.shardInfo.selector``."""
        return " || ".join(
            f"shardRange({self.field}, '{_bound_text(r.start)}', '{_bound_text(r.end)}')"
            for r in self.ranges
        )

    def value_of(self, uid: str, namespace: str) -> str:
        """The field this selector hashes, of an object with ``uid`` and ``namespace``."""
        return uid if self.field == "object.metadata.uid" else namespace

    def matches(self, uid: str, namespace: str) -> bool:
        """Whether an object with ``uid`` and ``namespace`` falls in one of the ranges."""
        h = fnv1a_64(self.value_of(uid, namespace))
        return any(r.start <= h < r.end for r in self.ranges)


# -- the Go walk over the CEL tree (k8s.io/apiserver pkg/sharding/parser.go) ----------------

# cel-go's ast.ExprKind numbers, as the Go parser's %v prints them
_LITERAL, _IDENT, _SELECT, _CALL, _LIST = 1, 2, 3, 4, 5


@dataclass(frozen=True, slots=True)
class _Node:
    kind: int
    name: str = ""  # ident name, selected field, or function name
    args: tuple[_Node, ...] = ()  # call arguments (target excluded), list elements
    operand: _Node | None = None  # select operand
    value: Any = None  # literal value
    go_type: str = ""  # the literal's Go type, as %T prints it


def _walk(e: _Node) -> list[tuple[str, ShardRange]]:
    if e.kind == _CALL:
        if e.name == "_||_":
            return _walk(e.args[0]) + _walk(e.args[1])
        if e.name == "shardRange":
            return [_shard_range(e)]
        raise SelectorError(
            f"unsupported function {go_quote(e.name)}; only shardRange() and || are allowed"
        )
    raise SelectorError(
        f"unexpected expression kind {e.kind}; expected shardRange() call or || operator"
    )


def _shard_range(call: _Node) -> tuple[str, ShardRange]:
    if len(call.args) != 3:
        raise SelectorError(f"shardRange() requires exactly 3 arguments, got {len(call.args)}")
    path = _field_path(call.args[0])
    if path not in FIELD_PATHS:
        raise SelectorError(
            f"unsupported field path {go_quote(path)}; supported: object.metadata.uid, "
            "object.metadata.namespace"
        )
    start = _hex_literal(call.args[1], "hexStart")
    end = _hex_literal(call.args[2], "hexEnd")
    if not _hex_less(start, end):
        raise SelectorError(f"shard range start {start} must be less than end {end}")
    return path, ShardRange(int(start, 16), int(end, 16))


def _field_path(e: _Node) -> str:
    if e.kind == _IDENT:
        return e.name
    if e.kind == _SELECT:
        assert e.operand is not None
        return _field_path(e.operand) + "." + e.name
    raise SelectorError(
        "shardRange() first argument: expected field path (e.g. object.metadata.uid), got "
        f"expression kind {e.kind}"
    )


def _hex_literal(e: _Node, name: str) -> str:
    if e.kind != _LITERAL:
        raise SelectorError(
            f"{name} must be a string literal (e.g. '0xff'), got expression kind {e.kind}"
        )
    if not isinstance(e.value, str):
        raise SelectorError(f"{name} must be a string literal, got {e.go_type}")
    s: str = e.value
    if not s.startswith("0x"):
        raise SelectorError(f"{name} must have '0x' prefix, got {go_quote(s)}")
    digits = s[2:]
    if not digits:
        raise SelectorError(f"{name}: hex value is required after '0x'")
    if len(digits) > 17:
        raise SelectorError(
            f"{name}: hex value too long ({len(digits)} chars, max 17): {go_quote(digits)}"
        )
    for c in digits:
        if c not in "0123456789abcdef":
            raise SelectorError(f"{name}: invalid hex character {go_quote(c)} in {go_quote(s)}")
    if len(digits) == 17:
        if s != _TOP:
            raise SelectorError(
                f"{name}: 17-digit hex value must be '0x10000000000000000' (2^64), got "
                f"{go_quote(s)}"
            )
    elif len(digits) != 16:
        padded = "0x" + "0" * (16 - len(digits)) + digits
        raise SelectorError(
            f"{name} must be a 0x-prefixed 16-digit hex value, got {go_quote(s)} "
            f"(did you mean {go_quote(padded)}?)"
        )
    return s


def _hex_less(a: str, b: str) -> bool:
    """apimachinery's ``sharding.HexLess`` over normalised bounds."""
    return len(a) < len(b) if len(a) != len(b) else a < b


# -- a CEL subset parser (what cel-go's parser builds for these expressions) ----------------

_WS = " \t\n\f\r"
_IDENT_START = "_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_IDENT_CHARS = _IDENT_START + "0123456789"
# binary operators by precedence, lowest first (CEL: || < && < relations < + - < * / %)
_LEVELS: tuple[tuple[str, ...], ...] = (
    ("||",),
    ("&&",),
    ("==", "!=", "<=", ">=", "<", ">", "in"),
    ("+", "-"),
    ("*", "/", "%"),
)
_PUNCT: tuple[str, ...] = ("||", "&&", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/")
_PUNCT += ("%", "!", "(", ")", "[", "]", ",", ".")
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}


def _syntax(detail: str) -> SelectorError:
    return SelectorError(f"CEL parse error: Syntax error: {detail}")


class _Parser:
    """Tokens, then a precedence-climbing parse into :class:`_Node` s."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = self._lex(text)
        self.pos = 0

    # -- lexing ----------------------------------------------------------------------------

    def _lex(self, s: str) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        i, n = 0, len(s)
        while i < n:
            c = s[i]
            if c in _WS:
                i += 1
            elif s.startswith("//", i):
                nl = s.find("\n", i)
                i = n if nl < 0 else nl + 1
            elif c in "rR" and i + 1 < n and s[i + 1] in "'\"":
                text, i = self._string(s, i + 1, raw=True)
                out.append(("lit", text))
            elif c in "'\"":
                text, i = self._string(s, i, raw=False)
                out.append(("lit", text))
            elif c in _IDENT_START:
                j = i
                while j < n and s[j] in _IDENT_CHARS:
                    j += 1
                word = s[i:j]
                lit = {"true": True, "false": False, "null": None}
                if word in lit:
                    out.append(("lit", lit[word]))
                elif word == "in":
                    out.append(("op", word))
                else:
                    out.append(("ident", word))
                i = j
            elif c.isdigit():
                j = i
                while j < n and (s[j].isalnum() or s[j] == "."):
                    j += 1
                out.append(("lit", self._number(s[i:j])))
                i = j
            else:
                for p in _PUNCT:
                    if s.startswith(p, i):
                        out.append(("op", p))
                        i += len(p)
                        break
                else:
                    raise _syntax(f"token recognition error at: '{c}'")
        out.append(("eof", None))
        return out

    @staticmethod
    def _number(word: str) -> tuple[str, Any]:
        try:
            if word.endswith(("u", "U")):
                return ("uint64", int(word[:-1], 0))
            if "." in word or ("e" in word.lower() and not word.lower().startswith("0x")):
                return ("float64", float(word))
            return ("int64", int(word, 0))
        except ValueError:
            raise _syntax(f"invalid number {word!r}") from None

    @staticmethod
    def _string(s: str, i: int, *, raw: bool) -> tuple[str, int]:
        quote = s[i] * 3 if s.startswith(s[i] * 3, i) else s[i]
        j = i + len(quote)
        out: list[str] = []
        while True:
            if j >= len(s) or (len(quote) == 1 and s[j] == "\n"):
                raise _syntax("unterminated string literal")
            if s.startswith(quote, j):
                return "".join(out), j + len(quote)
            c = s[j]
            if c != "\\" or raw:
                out.append(c)
                j += 1
                continue
            e = s[j + 1 : j + 2]
            if e in _SIMPLE_ESCAPES:
                out.append(_SIMPLE_ESCAPES[e])
                j += 2
            elif e in ("x", "X", "u", "U"):
                width = {"x": 2, "X": 2, "u": 4, "U": 8}[e]
                digits = s[j + 2 : j + 2 + width]
                if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise _syntax("invalid escape sequence")
                out.append(chr(int(digits, 16)))
                j += 2 + width
            elif e and e in "0123":
                digits = s[j + 1 : j + 4]
                if len(digits) != 3 or any(d not in "01234567" for d in digits):
                    raise _syntax("invalid escape sequence")
                out.append(chr(int(digits, 8)))
                j += 4
            else:
                raise _syntax("invalid escape sequence")

    # -- parsing ---------------------------------------------------------------------------

    def peek(self) -> tuple[str, Any]:
        return self.tokens[self.pos]

    def take(self) -> tuple[str, Any]:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expect(self, op: str) -> None:
        tok = self.take()
        if tok != ("op", op):
            raise _syntax(f"mismatched input {self._show(tok)} expecting {op!r}")

    @staticmethod
    def _show(tok: tuple[str, Any]) -> str:
        kind, value = tok
        if kind == "eof":
            return "'<EOF>'"
        if kind == "lit":
            return repr(value if not isinstance(value, tuple) else value[1])
        return repr(value)

    def parse(self) -> _Node:
        node = self.binary(0)
        if self.peek()[0] != "eof":
            raise _syntax(f"extraneous input {self._show(self.peek())} expecting <EOF>")
        return node

    def binary(self, level: int) -> _Node:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in _LEVELS[level]:
            op = self.take()[1]
            right = self.binary(level + 1)
            name = "@in" if op == "in" else f"_{op}_"
            left = _Node(_CALL, name, (left, right))
        return left

    def unary(self) -> _Node:
        tok = self.peek()
        if tok in (("op", "!"), ("op", "-")):
            self.take()
            return _Node(_CALL, f"{tok[1]}_", (self.unary(),))
        return self.member()

    def member(self) -> _Node:
        node = self.primary()
        while True:
            tok = self.peek()
            if tok == ("op", "."):
                self.take()
                kind, name = self.take()
                if kind != "ident":
                    raise _syntax(
                        f"mismatched input {self._show((kind, name))} expecting IDENTIFIER"
                    )
                if self.peek() == ("op", "("):
                    node = _Node(_CALL, name, self.arguments(")"))  # the target is not an arg
                else:
                    node = _Node(_SELECT, name, operand=node)
            elif tok == ("op", "["):
                self.take()
                index = self.binary(0)
                self.expect("]")
                node = _Node(_CALL, "_[_]", (node, index))
            else:
                return node

    def primary(self) -> _Node:
        kind, value = self.take()
        if kind == "ident" or (kind, value) == ("op", "."):
            name = value
            if kind == "op":  # a leading dot: the root namespace
                kind2, value2 = self.take()
                if kind2 != "ident":
                    raise _syntax(
                        f"mismatched input {self._show((kind2, value2))} expecting IDENTIFIER"
                    )
                name = "." + value2
            if self.peek() == ("op", "("):
                return _Node(_CALL, name, self.arguments(")"))
            return _Node(_IDENT, name)
        if kind == "lit":
            if isinstance(value, tuple):
                return _Node(_LITERAL, value=value[1], go_type=value[0])
            go_type = {str: "string", bool: "bool", type(None): "structpb.NullValue"}
            return _Node(_LITERAL, value=value, go_type=go_type[type(value)])
        if (kind, value) == ("op", "("):
            node = self.binary(0)
            self.expect(")")
            return node
        if (kind, value) == ("op", "["):
            self.pos -= 1
            return _Node(_LIST, args=self.arguments("]"))
        raise _syntax(f"mismatched input {self._show((kind, value))} expecting an expression")

    def arguments(self, close: str) -> tuple[_Node, ...]:
        self.take()  # the opening bracket
        args: list[_Node] = []
        if self.peek() == ("op", close):
            self.take()
            return ()
        while True:
            args.append(self.binary(0))
            tok = self.take()
            if tok == ("op", close):
                return tuple(args)
            if tok != ("op", ","):
                raise _syntax(f"mismatched input {self._show(tok)} expecting {{',', {close!r}}}")

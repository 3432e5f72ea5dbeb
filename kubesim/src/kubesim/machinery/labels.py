"""Kubernetes label selectors as kube-apiserver v1.28 parses and matches them.

Pure Python (no I/O, no asyncio). Ports ``k8s.io/apimachinery/pkg/labels`` (lexer, parser and
its error texts). Contracts: ``SelectorError`` messages equal the ``message`` of the real 400
Status; ``matches`` does no parsing and no regex work (requirements are precompiled at parse
time: this is the watch fan-out hot path); selectors are immutable, hashable and compare
structurally.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from kubesim.encoding.gofmt import go_quote
from kubesim.errors import SelectorError

__all__ = ["LabelSelector"]


def _parse_int64(s: str) -> int | None:
    """Go ``strconv.ParseInt(s, 10, 64)``; ``None`` where Go returns an error."""
    digits = s[1:] if s[:1] in ("+", "-") else s
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    v = int(s)
    return v if -(2**63) <= v < 2**63 else None


# k8s.io/apimachinery/pkg/util/validation (as of v1.28)
_QNAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE: Final = re.compile(_QNAME_FMT)
_QNAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_FMT: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_RE: Final = re.compile(_DNS1123_FMT)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError`` (including its double spaces)."""
    eg = "e.g. " + " or ".join(f"'{e}', " for e in examples) if examples else ""
    return f"{msg} ({eg}regex used for validation is '{fmt}')"


_QNAME_ERR: Final = _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
_LABEL_VALUE_ERR: Final = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character",
    f"({_QNAME_FMT})?",
    *("MyValue", "my_value", "12345"),
)
_DNS1123_ERR: Final = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character",
    _DNS1123_FMT,
    "example.com",
)


def _label_key_errors(value: str) -> list[str]:
    """``validation.IsQualifiedName``, the label-key check."""
    parts, errs = value.split("/"), []
    if len(parts) > 2:
        return [
            f"a qualified name {_QNAME_ERR} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS1123_RE.fullmatch(prefix):
                errs.append("prefix part " + _DNS1123_ERR)
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME_RE.fullmatch(name):
        errs.append("name part " + _QNAME_ERR)
    return errs


def _label_value_errors(value: str) -> list[str]:
    """``validation.IsValidLabelValue``."""
    errs = ["must be no more than 63 characters"] if len(value.encode()) > 63 else []
    if value and not _QNAME_RE.fullmatch(value):
        errs.append(_LABEL_VALUE_ERR)
    return errs


def _invalid(path: str, value: str, detail: str) -> str:
    """``field.Invalid(path, value, detail).Error()``."""
    return f"{path}: Invalid value: {go_quote(value)}: {detail}"


# --------------------------------------------------------------------- label selectors

_EOS, _CPAR, _COMMA, _NOT, _DEQ, _EQ, _GT, _ID, _IN, _LT, _NEQ, _NOTIN, _OPAR = range(13)
_STRING2TOKEN: Final = {
    ")": _CPAR, ",": _COMMA, "!": _NOT, "==": _DEQ, "=": _EQ, ">": _GT, "in": _IN,
    "<": _LT, "!=": _NEQ, "notin": _NOTIN, "(": _OPAR,
}  # fmt: skip
_OP_TOKENS: Final = {_IN: "in", _NOTIN: "notin", _EQ: "=", _DEQ: "==", _NEQ: "!=", _GT: "gt",
                     _LT: "lt"}  # fmt: skip
# canonical order of selection.Operator values
_OPS: Final = ("exists", "!", "=", "==", "!=", "in", "notin", "gt", "lt")
_OP_RANK: Final = {op: i for i, op in enumerate(_OPS)}
_SPECIAL: Final = frozenset("=!(),><")
_SPACE: Final = frozenset(" \t\r\n")
_Requirement = tuple[str, str, tuple[str, ...]]


def _lex(s: str) -> list[tuple[int, str]]:
    """``labels.Lexer``: all tokens, ending with end-of-string (a NUL byte ends input)."""
    s, pos, items = s.split("\x00", 1)[0], 0, []
    while True:
        while pos < len(s) and s[pos] in _SPACE:
            pos += 1
        if pos >= len(s):
            items.append((_EOS, ""))
            return items
        start = pos
        if s[pos] in _SPECIAL:  # longest run of symbols that is still a token
            while pos < len(s) and s[start : pos + 1] in _STRING2TOKEN:
                pos += 1
            items.append((_STRING2TOKEN[s[start:pos]], s[start:pos]))
        else:
            while pos < len(s) and s[pos] not in _SPECIAL and s[pos] not in _SPACE:
                pos += 1
            items.append((_STRING2TOKEN.get(s[start:pos], _ID), s[start:pos]))


class _Parser:
    """``labels.Parser``; ``values=True`` is its ``Values`` context (in/notin are ids)."""

    def __init__(self, text: str) -> None:
        self.items, self.pos = _lex(text), 0

    def peek(self, values: bool = True) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        return (_ID, lit) if values and tok in (_IN, _NOTIN) else (tok, lit)

    def take(self, values: bool = True) -> tuple[int, str]:
        self.pos += 1
        tok, lit = self.items[self.pos - 1]
        return (_ID, lit) if values and tok in (_IN, _NOTIN) else (tok, lit)

    def parse(self) -> list[_Requirement]:
        reqs: list[_Requirement] = []
        while True:
            tok, lit = self.peek()
            if tok == _EOS:
                return reqs
            if tok not in (_ID, _NOT):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except SelectorError as e:
                raise SelectorError(f"unable to parse requirement: {e}") from None
            tok, lit = self.take()
            if tok == _EOS:
                return reqs
            if tok != _COMMA:
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok, lit = self.peek()
            if tok not in (_ID, _NOT):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def requirement(self) -> _Requirement:
        tok, key = self.take()
        op = "!" if tok == _NOT else ""
        if op:
            tok, key = self.take()
        if tok != _ID:
            raise SelectorError(f"found '{key}', expected: identifier")
        if errs := _label_key_errors(key):
            raise SelectorError(_invalid("<nil>", key, "; ".join(errs)))
        if not op and self.peek()[0] in (_EOS, _COMMA):
            op = "exists"
        if op:
            return (key, op, ())
        tok, lit = self.take(values=False)
        if tok not in _OP_TOKENS:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        op = _OP_TOKENS[tok]
        vals = self.set_values() if op in ("in", "notin") else self.exact_value()
        return (key, op, _validate_values(key, op, tuple(sorted(vals))))

    def set_values(self) -> set[str]:
        tok, lit = self.take()
        if tok != _OPAR:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.peek()
        if tok not in (_ID, _COMMA, _CPAR):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        out: set[str] = {""} if tok == _CPAR else set()
        while tok != _CPAR:  # parseIdentifiersList
            tok, lit = self.take()
            if tok not in (_ID, _COMMA):
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")
            nxt, nlit = self.peek()
            if tok == _ID:
                out.add(lit)
                if nxt not in (_CPAR, _COMMA):
                    raise SelectorError(f"found '{nlit}', expected: ',' or ')'")
            elif not out or nxt in (_CPAR, _COMMA):
                out.add("")
            tok = nxt
        self.take()  # the ')'
        return out

    def exact_value(self) -> set[str]:
        if self.peek()[0] in (_EOS, _COMMA):
            return {""}
        tok, lit = self.take()
        if tok != _ID:
            raise SelectorError(f"found '{lit}', expected: identifier")
        return {lit}


def _validate_values(key: str, op: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """The value checks of ``labels.NewRequirement``, errors aggregated as upstream."""
    errs: list[str] = []
    if op in ("gt", "lt"):
        errs += [
            _invalid(f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer")
            for i, v in enumerate(values)
            if _parse_int64(v) is None
        ]
    for i, v in enumerate(values):
        if verrs := _label_value_errors(v):
            errs.append(_invalid(f"values[{i}][{key}]", v, "; ".join(verrs)))
    uniq = list(dict.fromkeys(errs))
    if uniq:
        raise SelectorError(uniq[0] if len(uniq) == 1 else "[" + ", ".join(uniq) + "]")
    return values


_Pred = Callable[[Mapping[str, str]], bool]


def _compile(req: _Requirement) -> _Pred:
    """A closure evaluating one requirement exactly like ``Requirement.Matches``."""
    key, op, vals = req
    one, many, bound = (
        (vals[0] if vals else ""),
        frozenset(vals),
        _parse_int64(vals[0] if vals else ""),
    )
    if op in ("exists", "!"):
        return (lambda m: key in m) if op == "exists" else (lambda m: key not in m)
    if op in ("gt", "lt"):

        def gt_lt(m: Mapping[str, str]) -> bool:
            v = m.get(key)
            n = None if v is None or bound is None else _parse_int64(v)
            return n is not None and bound is not None and (n > bound if op == "gt" else n < bound)

        return gt_lt
    if op in ("!=", "notin"):
        return (
            (lambda m: m.get(key) != one) if len(vals) == 1 else (lambda m: m.get(key) not in many)
        )
    return (lambda m: m.get(key) == one) if len(vals) == 1 else (lambda m: m.get(key) in many)


class LabelSelector:
    """A parsed ``labelSelector`` (``labels.Parse``): the AND of its requirements.

    A requirement is ``(key, operator, values)``; operators are the ``selection.Operator``
    values ``exists``, ``!``, ``=``, ``==``, ``!=``, ``in``, ``notin``, ``gt``, ``lt``, and
    values are sorted and de-duplicated. Requirements are kept in canonical order, so
    equal selectors have equal requirements and equal ``str()``.
    """

    __slots__ = ("_preds", "_reqs")

    def __init__(self, requirements: Iterable[tuple[str, str, Iterable[str]]] = ()) -> None:
        """Build from already-valid requirements (no validation: use :meth:`parse`)."""
        reqs = {(k, op, tuple(sorted(set(vals)))) for k, op, vals in requirements}
        if bad := {op for _k, op, _v in reqs} - _OP_RANK.keys():
            raise ValueError(f"unknown label selector operator(s): {sorted(bad)}")
        key = lambda r: (r[0], _OP_RANK[r[1]], r[2])  # noqa: E731
        self._reqs: tuple[_Requirement, ...] = tuple(sorted(reqs, key=key))
        self._preds = tuple(_compile(r) for r in self._reqs)

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse like the apiserver (``""`` selects everything); errors: :class:`SelectorError`."""
        return cls(_Parser(text).parse()) if text else _EVERYTHING

    @property
    def requirements(self) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        """The requirements, in canonical order."""
        return self._reqs

    @property
    def empty(self) -> bool:
        """True when there is no requirement (the selector matches everything)."""
        return not self._reqs

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when every requirement holds for ``labels``."""
        for pred in self._preds:
            if not pred(labels):
                return False
        return True

    def __str__(self) -> str:
        """Canonical text in ``Requirement.String`` syntax; it parses back equal."""
        out = []
        for key, op, vals in self._reqs:
            if op in ("in", "notin"):
                out.append(f"{key} {op} ({','.join(vals)})")
            elif op in ("exists", "!"):
                out.append(key if op == "exists" else "!" + key)
            else:
                out.append(key + {"gt": ">", "lt": "<"}.get(op, op) + vals[0])
        return ",".join(out)

    def __repr__(self) -> str:
        return f"LabelSelector.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabelSelector) and self._reqs == other._reqs

    def __hash__(self) -> int:
        return hash(self._reqs)


_EVERYTHING: Final = LabelSelector()

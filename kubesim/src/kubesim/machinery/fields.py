"""Kubernetes field selectors as kube-apiserver v1.28 parses and matches them.

Pure Python (no I/O, no asyncio). Ports ``k8s.io/apimachinery/pkg/fields`` (``ParseSelector``
with backslash escaping). Which fields a kind can be selected by, and the messages for the
others, are its strategy's (``Strategy.fields``, ``Strategy.field_selector``), built from the
helpers at the end of this module. Contracts: ``SelectorError`` messages equal the
``message`` of the real 400 Status; selectors are immutable, hashable and compare
structurally.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesim.encoding.gofmt import go_quote
from kubesim.errors import SelectorError

__all__ = [
    "FieldSelector",
    "bool_field",
    "field_label_not_supported",
    "int_field",
    "known_field_selectors",
    "str_field",
]


def _split_terms(s: str) -> list[str]:
    """``fields.splitTerms``: split on unescaped commas, keeping the escapes."""
    terms, start, in_slash = [], 0, False
    for i, c in enumerate(s):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(s[start:i])
            start = i + 1
    return [*terms, s[start:]]


def _unescape(s: str) -> str:
    """``fields.UnescapeValue``, also accepting ``\\!`` (read as ``!``)."""
    if "\\" not in s and "," not in s and "=" not in s:
        return s
    out, in_slash = [], False
    for c in s:
        if in_slash:
            if c not in "\\,=!":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":  # Go prints the rune with %v: its code point
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _escape(v: str) -> str:
    """``fields.EscapeValue``."""
    return v.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


class FieldSelector:
    """A parsed ``fieldSelector`` (``fields.ParseSelector``): the AND of its terms.

    A term is ``(field, "=" | "!=", value)`` (``==`` reads as ``=``); terms are in the
    apiserver's evaluation order (sorted raw term text). Fields missing from the field
    set being matched compare as ``""``.
    """

    __slots__ = ("_compiled", "_terms")

    def __init__(self, terms: Iterable[tuple[str, str, str]] = ()) -> None:
        """Build from ``(field, op, value)`` terms, kept in the given order."""
        self._terms = tuple((f, "!=" if op == "!=" else "=", v) for f, op, v in terms)
        self._compiled = tuple((f, op == "=", v) for f, op, v in self._terms)

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        """Parse like the apiserver (``""`` selects everything); errors: :class:`SelectorError`."""
        terms: list[tuple[str, str, str]] = []
        for part in sorted(_split_terms(text)) if text else []:
            if not part:
                continue
            # the first operator occurrence splits; the field part has no escaping
            ops = ("!=", "==", "=")
            at = next(
                ((i, o) for i in range(len(part)) for o in ops if part.startswith(o, i)), None
            )
            if at is None:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
            i, op = at
            terms.append((part[:i], op, _unescape(part[i + len(op) :])))
        return cls(terms)

    @property
    def terms(self) -> tuple[tuple[str, str, str], ...]:
        """The terms, in evaluation (apiserver) order."""
        return self._terms

    @property
    def fields(self) -> frozenset[str]:
        """Names of the fields referenced."""
        return frozenset(f for f, _op, _v in self._terms)

    @property
    def empty(self) -> bool:
        """True when there is no term (the selector matches everything)."""
        return not self._terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        """True when every term holds; a missing field reads as ``""``."""
        for name, eq, value in self._compiled:
            if (fields.get(name, "") == value) is not eq:
                return False
        return True

    def __str__(self) -> str:
        """Canonical text, values escaped as ``fields.EscapeValue``; it parses back equal."""
        return ",".join(f"{f}{op}{_escape(v)}" for f, op, v in self._terms)

    def __repr__(self) -> str:
        return f"FieldSelector.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSelector) and self._terms == other._terms

    def __hash__(self) -> int:
        return hash(self._terms)


# ------------------------------------------------------------ what kinds' selectors share


def known_field_selectors(label: str) -> str:
    """The default field-label conversion's message for a label it does not know."""
    return (
        f'{go_quote(label)} is not a known field selector: only "metadata.name", '
        '"metadata.namespace"'
    )


def field_label_not_supported(label: str) -> str:
    """The message of a kind's own field-label conversion for a label it does not know."""
    return f"field label not supported: {label}"


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for p in path:
        obj = obj.get(p) if isinstance(obj, dict) else None
    return obj


def str_field(obj: Any, *path: str) -> str:
    """The string at ``path`` of a decoded object, "" when missing (as ``GetAttrs``)."""
    v = _get(obj, path)
    return v if isinstance(v, str) else ""


def bool_field(obj: Any, *path: str) -> str:
    """The boolean at ``path`` as a field value: ``"true"`` or ``"false"``."""
    return "true" if _get(obj, path) is True else "false"


def int_field(obj: Any, *path: str) -> str:
    """The integer at ``path`` as a field value: decimal, ``"0"`` when missing."""
    v = _get(obj, path)
    ok = isinstance(v, int | float) and not isinstance(v, bool) and abs(v) < float("inf")
    return str(int(v)) if ok else "0"

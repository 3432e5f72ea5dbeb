"""Request JSON decoded as the apiserver decodes it: invalid UTF-8 is not an error.

kube-apiserver decodes JSON bodies with ``sigs.k8s.io/json``, a fork of Go's
``encoding/json`` that keeps its string rules: "invalid UTF-8 or invalid UTF-16 surrogate
pairs are not treated as an error. Instead, they are replaced by the Unicode replacement
character U+FFFD" (the ``encoding/json.Unmarshal`` documentation). So a string field with
invalid bytes is accepted and stored with U+FFFD in their place, one per invalid byte (Go
decodes an invalid byte as ``utf8.RuneError`` of width 1), and a lone ``\\ud800`` escape
becomes one U+FFFD; a valid surrogate pair is the character it encodes.

:func:`loads` decodes with orjson and, only when orjson refuses the text for its encoding,
repairs it that way; any other error (a syntax error, for instance) is orjson's, for the
caller to turn into the apiserver's 400.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

import orjson

__all__ = ["loads"]

_REPLACEMENT = "\ufffd"


def _per_byte(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeDecodeError)
    return _REPLACEMENT * (error.end - error.start), error.end


codecs.register_error("kubesim-go-json", _per_byte)


def _is_encoding_error(exc: orjson.JSONDecodeError) -> bool:
    text = str(exc).lower()
    return "utf-8" in text or "surrogate" in text


def _repair(value: Any) -> Any:
    """``value`` with every lone surrogate (from a ``\\uD800``-style escape) replaced."""
    if isinstance(value, str):
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            return "".join(_REPLACEMENT if "\ud800" <= ch <= "\udfff" else ch for ch in value)
        return value
    if isinstance(value, list):
        return [_repair(v) for v in value]
    if isinstance(value, dict):
        return {_repair(k): _repair(v) for k, v in value.items()}
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name!r}")  # Go has no NaN/Infinity literals


def loads(raw: bytes) -> Any:
    """The JSON document in ``raw`` (see the module docstring); raises
    ``orjson.JSONDecodeError`` for what is not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not _is_encoding_error(exc):
            raise
        try:
            text = raw.decode("utf-8", errors="kubesim-go-json")
            return _repair(json.loads(text, parse_constant=_no_constant))
        except (ValueError, RecursionError):
            raise exc from None

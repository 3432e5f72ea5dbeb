"""Request bodies: read with kube-apiserver's limits, parsed as its decoders parse them.

* :func:`read` takes at most 3145728 bytes (``--max-request-bytes`` 3 MiB): a bigger body,
  announced or not, is not read further and gets the recorded 413 ``Request entity too
  large: limit is 3145728`` with ``Connection: close`` (25c).
* :func:`parse` turns JSON or YAML (``application/yaml``) into a document, as the real
  decoders see it: JSON nested deeper than 10000 levels is the recorded 400 ``json parse
  error: invalid character '{' exceeded max depth`` (25d), a syntax error is Go's text
  (``unexpected end of JSON input``), both wrapped as ``the object provided is
  unrecognized (must be of type <Kind>): ... (<the body's first 30 bytes>)``; duplicate
  keys are remembered for fieldValidation. YAML anchors, aliases and ``<<`` merge keys are
  expanded (a key set twice gives ``line N: key "k" already set in map``), within yaml.v2's
  alias budget: a body that would expand too much is the recorded 400 ``yaml: document
  contains excessive aliasing`` (25e), found before anything is expanded, so a
  billion-laughs body costs nothing. Timestamps stay strings, integral floats become
  integers (YAML goes through float64 to JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from kubesim.encoding import deepjson
from kubesim.errors import DeepJsonError, KubeSimApiError, status_body
from kubesim.server.limits import MAX_REQUEST_BYTES, deep_recursion
from kubesim.server.undecodable import unrecognized
from kubesim.server.yamlbody import parse_yaml

__all__ = ["Body", "go_quote_char", "parse", "read"]

_ENTITY_TOO_LARGE = f"Request entity too large: limit is {MAX_REQUEST_BYTES}"
MAX_DEPTH = 10000
_PARSE_ERROR = "couldn't get version/kind; json parse error"


@dataclass
class Body:
    """A parsed request body: the document, and what strict decoding reports about it."""

    doc: Any
    raw: bytes
    is_yaml: bool = False
    depth: int = 0
    #: per object (by ``id``) the keys given more than once (JSON)
    duplicates: Mapping[int, list[str]] = field(default_factory=dict)
    #: yaml.v2's strict findings (``line 7: key "tier" already set in map``)
    yaml_errors: list[str] = field(default_factory=list)


def too_large() -> KubeSimApiError:
    err = KubeSimApiError(413, status_body(413, _ENTITY_TOO_LARGE, "RequestEntityTooLarge"))
    err.headers["Connection"] = "close"
    return err


async def read(request: web.Request) -> bytes:
    """The request body, at most :data:`MAX_REQUEST_BYTES`; beyond that 413 (and the rest
    is never read: the connection closes)."""
    declared = request.content_length
    if declared is not None and declared > MAX_REQUEST_BYTES:
        raise too_large()
    buf = bytearray()
    while True:
        chunk = await request.content.read(1 << 16)
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > MAX_REQUEST_BYTES:
            raise too_large()


def go_quote_char(c: str) -> str:
    """Go's ``quoteChar`` (encoding/json error texts)."""
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    escapes = {
        "\a": "\\a",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\v",
        "\\": "\\\\",
    }
    if c in escapes:
        return f"'{escapes[c]}'"
    if ord(c) < 0x20 or ord(c) == 0x7F:
        return f"'\\x{ord(c):02x}'"
    return f"'{c}'"


def parse(raw: bytes, content_type: str, kind: str) -> Body:
    """The document in ``raw`` (JSON, or YAML when ``content_type`` says so); 400 as the
    apiserver answers when it does not decode. ``kind`` is the endpoint's kind."""
    if content_type == "application/yaml":
        doc, errors, depth = parse_yaml(raw, kind)
        if (b"\\u" in raw or b"\\U" in raw) and _has_surrogates(doc):
            doc = _replace_surrogates(doc)
        return Body(doc, raw, True, depth, {}, errors)
    return parse_json(raw, kind)


def parse_json(raw: bytes, kind: str) -> Body:
    """A JSON body (see :func:`parse`)."""
    depth, over = deepjson.depth(raw)
    if over >= 0:
        char = go_quote_char(chr(raw[over]))
        detail = f"invalid character {char} exceeded max depth"
        raise unrecognized(kind, f"{_PARSE_ERROR}: {detail}", raw)
    text = raw.decode("utf-8", "replace")
    dups: dict[int, list[str]] = {}
    try:
        if depth < 500:
            doc = json.loads(
                text,
                object_pairs_hook=_pairs(dups),
                parse_constant=_no_constant,
                parse_int=deepjson.json_int,
            )
        else:
            with deep_recursion(depth):
                doc, dups = deepjson.parse(text)
    except (ValueError, RecursionError):
        raise unrecognized(
            kind, f"couldn't get version/kind; json parse error: {_syntax(text)}", raw
        ) from None
    if "\\u" in text and _has_surrogates(doc):
        doc = _replace_surrogates(doc)
    return Body(doc, raw, False, depth, dups)


def _pairs(dups: dict[int, list[str]]) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            again = []
            for k, _ in pairs:
                if k in seen:
                    again.append(k)
                seen.add(k)
            dups[id(out)] = again
        return out

    return hook


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _syntax(text: str) -> str:
    """Go's encoding/json syntax error for ``text`` (which does not parse)."""
    try:
        deepjson.parse(text)
    except DeepJsonError as exc:
        pos, expected, container = exc.pos, exc.expected, exc.container
    else:  # parsed after all (e.g. NaN was refused by the fast parser)
        return "invalid character 'N' looking for beginning of value"
    if pos >= len(text):
        return "unexpected end of JSON input"
    c = text[pos]
    if c == '"' and expected in ("value", "key"):
        return _string_error(text, pos)
    if expected == "value" and c in "tfn-0123456789":
        return _literal_error(text, pos)
    where = {
        "value": "looking for beginning of value",
        "key": "looking for beginning of object key string",
        "colon": "after object key",
        "next": "after object key:value pair" if container == "object" else "after array element",
        "end": "after top-level value",
    }[expected]
    return f"invalid character {go_quote_char(c)} {where}"


def _string_error(text: str, pos: int) -> str:
    i = pos + 1
    while i < len(text):
        c = text[i]
        if c == '"':
            break
        if c == "\\":
            if i + 1 >= len(text):
                return "unexpected end of JSON input"
            esc = text[i + 1]
            if esc not in '"\\/bfnrtu':
                return f"invalid character {go_quote_char(esc)} in string escape code"
            i += 2
            continue
        if ord(c) < 0x20:
            return f"invalid character {go_quote_char(c)} in string literal"
        i += 1
    return "unexpected end of JSON input"


def _literal_error(text: str, pos: int) -> str:
    for word in ("true", "false", "null"):
        if text[pos] == word[0]:
            for j, want in enumerate(word):
                if pos + j >= len(text):
                    return "unexpected end of JSON input"
                if text[pos + j] != want:
                    got, exp = go_quote_char(text[pos + j]), go_quote_char(want)
                    return f"invalid character {got} in literal {word} (expecting {exp})"
    i = pos + (text[pos] == "-")
    if i >= len(text):
        return "unexpected end of JSON input"
    return f"invalid character {go_quote_char(text[i])} in numeric literal"


def _has_surrogates(doc: Any) -> bool:
    try:
        json.dumps(doc, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


def _replace_surrogates(doc: Any) -> Any:
    """Go decodes an unpaired surrogate escape as U+FFFD."""
    if isinstance(doc, str):
        return doc.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(doc, list):
        return [_replace_surrogates(v) for v in doc]
    if isinstance(doc, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in doc.items()}
    return doc

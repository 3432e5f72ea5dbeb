"""Protobuf bodies (``application/vnd.kubernetes.protobuf``) decoded to JSON objects; the
encoding of answers is :mod:`kubesim.encoding.protoencode`'s.

client-go's generated clients (kubectl >= 1.32 ``create namespace|configmap|secret|
deployment|job|role ...``, ``auth can-i``, ``autoscale``, and any Go controller on client-go
>= 1.32) send built-in objects as protobuf and do not retry with JSON after a 415. KubeSim
decodes the body (the ``k8s\\x00`` magic, then a ``runtime.Unknown`` whose ``raw`` is the
object's message) of every built-in kind it has a table for (:mod:`kubesim.encoding.prototypes`)
into the JSON object the same client would have sent.

A body of another kind, or with a field the v1.28 types do not have, is a
:class:`ProtobufUnsupported`: the HTTP layer answers 415 with a message that names what
was not understood (a real server would drop an unknown field without a word).

Decoding follows the Go types: a zero scalar of a non-pointer field means "unset" and is
left out; a pointer field (``PTR``) keeps its zero; an embedded struct is an object even
when empty (``"status": {}``); a zero ``Time`` is ``null``.
"""

from __future__ import annotations

import base64
import datetime
import functools
import struct
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from kubesim.encoding.prototypes import PTR, REPEATED, Field, kind_message, message
from kubesim.encoding.protowire import fields as wire_fields
from kubesim.errors import KubeSimApiError, ProtobufUnsupported, status_body

__all__ = [
    "MAGIC",
    "PROTOBUF",
    "PROTOBUF_WATCH",
    "decode_message",
    "decode_object",
    "protobuf_body",
]

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
PROTOBUF_WATCH = "application/vnd.kubernetes.protobuf;stream=watch"
#: the media types a real server lists in a 415 for a body it cannot read
ACCEPTED_BODIES = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _text(v: int | bytes) -> str:
    if not isinstance(v, bytes):
        raise ProtobufUnsupported("a string field is not length-delimited")
    return v.decode("utf-8", errors="strict")


def _bytes(v: int | bytes, what: str) -> bytes:
    if not isinstance(v, bytes):
        raise ProtobufUnsupported(f"{what} is not length-delimited")
    return v


def _only(v: int | bytes, name: str) -> dict[int, int | bytes]:
    return dict(wire_fields(_bytes(v, name)))


def _raw_json(v: int | bytes, name: str) -> Any:
    """A message whose field 1 holds raw JSON (FieldsV1, RawExtension, apiextensions JSON)."""
    raw = _bytes(_only(v, name).get(1, b""), name)
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ProtobufUnsupported(f"a {name} field does not hold JSON") from None


def _time(v: int | bytes, micro: bool = False) -> str | None:
    f = _only(v, "Time")
    seconds, nanos = f.get(1, 0), f.get(2, 0)
    if not isinstance(seconds, int) or not isinstance(nanos, int) or not (seconds or nanos):
        return None
    t = datetime.datetime.fromtimestamp(_signed(seconds), datetime.UTC)
    if micro:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos // 1000:06d}Z"
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _intstr(v: int | bytes) -> int | str:
    f = _only(v, "IntOrString")
    if f.get(1, 0) == 1:
        return _text(f.get(3, b""))
    n = f.get(2, 0)
    return _signed(n) if isinstance(n, int) else 0


def _float(v: int | bytes) -> float | int:
    raw = _bytes(v, "a double") if not isinstance(v, int) else b""
    if len(raw) != 8:
        raise ProtobufUnsupported("a double field is not 8 bytes")
    x: float = struct.unpack("<d", raw)[0]
    return int(x) if x.is_integer() else x  # as Go's encoding/json writes a float64


def _schema_union(v: int | bytes, kind: str) -> Any:
    """JSONSchemaPropsOrArray / OrBool / OrStringArray: a schema, or the other form."""
    schema: dict[str, Any] | None = None
    rest: list[Any] = []
    allows = False
    for num, item in wire_fields(_bytes(v, kind)):
        if kind == "schemaorbool" and num == 1:
            allows = bool(item)
        elif (kind == "schemaorbool" and num == 2) or (kind != "schemaorbool" and num == 1):
            schema = decode_message(_bytes(item, kind), _SCHEMA)
        elif kind == "schemaorarray" and num == 2:
            rest.append(decode_message(_bytes(item, kind), _SCHEMA))
        elif kind == "schemaorstrings" and num == 2:
            rest.append(_text(item))
        else:
            raise ProtobufUnsupported(f"field {num} of a {kind} is not supported by KubeSim")
    if schema is not None:
        return schema
    return allows if kind == "schemaorbool" else rest


_SCHEMA = "apiextensions.k8s.io/v1.JSONSchemaProps"


def _value(kind: str, msg: str, v: int | bytes) -> Any:
    """One field's value as JSON, by its kind (see :mod:`kubesim.encoding.prototypes`)."""
    if kind == "str":
        return _text(v)
    if kind == "msg":
        return decode_message(_bytes(v, msg), msg)
    if kind == "bytes":
        return base64.b64encode(_bytes(v, "a bytes field")).decode()
    if kind in ("time", "microtime"):
        return _time(v, micro=kind == "microtime")
    if kind == "quantity":
        return _text(_only(v, "Quantity").get(1, b""))
    if kind == "intstr":
        return _intstr(v)
    if kind in ("json", "raw", "rawjson"):
        return _raw_json(v, {"json": "FieldsV1", "raw": "RawExtension"}.get(kind, "JSON"))
    if kind == "float":
        return _float(v)
    if kind.startswith("schemaor"):
        return _schema_union(v, kind)
    if not isinstance(v, int):
        raise ProtobufUnsupported(f"a {kind} field is not a varint")
    return bool(v) if kind == "bool" else _signed(v)


def _map_entry(v: int | bytes, kind: str) -> tuple[str, Any]:
    f = _only(v, "map entry")
    key = _text(f.get(1, b""))
    if kind.startswith("msg:"):
        return key, decode_message(_bytes(f.get(2, b""), kind), kind[4:])
    return key, _value(kind, "", f.get(2, b""))


_ZERO: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: v == "",
    "int": lambda v: v == 0,
    "bool": lambda v: v is False,
    "float": lambda v: v == 0,
}


@functools.cache
def _by_number(name: str) -> Mapping[int, Field]:
    fields = message(name)
    if fields is None:
        raise ProtobufUnsupported(f"KubeSim does not decode protobuf {name} messages")
    return {f[0]: f for f in fields}


def decode_message(buf: bytes, name: str) -> dict[str, Any]:
    """Message ``name`` (see :func:`kubesim.encoding.prototypes.message`) as JSON, following the Go
    types."""
    spec = _by_number(name)
    out: dict[str, Any] = {}
    for num, v in wire_fields(buf):
        f = spec.get(num)
        if f is None:
            short = name.rsplit(".", 1)[-1]
            raise ProtobufUnsupported(f"field {num} of {short} is not supported by KubeSim")
        _, key, kind, msg, flags = f
        if kind == "inline":
            out.update(decode_message(_bytes(v, msg), msg))
            continue
        if kind == "map":
            k, item = _map_entry(v, msg)
            out.setdefault(key, {})[k] = item
            continue
        value = _value(kind, msg, v)
        if flags & REPEATED:
            out.setdefault(key, []).append(value)
        elif not (flags & PTR) and kind in _ZERO and _ZERO[kind](value):
            continue
        else:
            out[key] = value
    for _, key, kind, _, flags in spec.values():
        if kind == "time" and not flags & PTR and key not in out:
            out[key] = None
    return out


_UNKNOWN = "runtime.Unknown"


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON object of a protobuf request body (magic + runtime.Unknown)."""
    if not body.startswith(MAGIC):
        raise ProtobufUnsupported("the body does not start with the protobuf magic k8s\\x00")
    unknown = decode_message(body[len(MAGIC) :], _UNKNOWN)
    api_version, kind = unknown.get("apiVersion", ""), unknown.get("kind", "")
    if unknown.get("contentEncoding"):
        raise ProtobufUnsupported("a protobuf body with a content encoding is not supported")
    name = kind_message(api_version, kind)
    if name is None:
        raise ProtobufUnsupported(f"KubeSim does not decode protobuf {kind} ({api_version})")
    raw = base64.b64decode(unknown.get("raw", ""))
    return {"kind": kind, "apiVersion": api_version, **decode_message(raw, name)}


def protobuf_body(body: bytes) -> dict[str, Any]:
    """:func:`decode_object`, or the 415 a server answers for a body it cannot read (the
    message lists the media types that would be accepted, and says what was not)."""
    try:
        return decode_object(body)
    except (ProtobufUnsupported, UnicodeDecodeError, ValueError) as exc:
        msg = (
            "the body of the request was in an unknown format - accepted media types include: "
            f"{ACCEPTED_BODIES} (KubeSim: {exc})"
        )
        raise KubeSimApiError(415, status_body(415, msg, "UnsupportedMediaType")) from None

"""Built-in objects encoded as protobuf (``application/vnd.kubernetes.protobuf``), as
kube-apiserver v1.28 writes them.

A response body is the ``k8s\\x00`` magic, then a ``runtime.Unknown``: ``typeMeta``
(apiVersion, kind), ``raw`` (the object's own message) and ``contentEncoding`` and
``contentType``, both present and empty. A watch event is a 4-byte big-endian length, then
a ``metav1.WatchEvent`` (without the magic) whose ``object.raw`` is the enveloped object.

The object's message follows Go's generated marshalling, so that the bytes are the real
server's for the same object: fields in field-number order; every non-pointer field
written, zero or not (an empty string, a 0, an empty message, a zero ``Time`` as an empty
message); a pointer field only when set; map entries sorted by key. JSON fields the v1.28
types do not have are left out, as the real server never stores them.
"""

from __future__ import annotations

import base64
import datetime
import functools
import struct
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from kubesim.encoding.protobuf import MAGIC
from kubesim.encoding.prototypes import PTR, REPEATED, kind_message, message
from kubesim.encoding.protowire import key as _key
from kubesim.encoding.protowire import length_delimited as _ld
from kubesim.encoding.protowire import varint as _varint

__all__ = ["encode_message", "encode_object", "watch_frame"]

_EMPTY_STRINGS = b"\x1a\x00\x22\x00"  # Unknown.contentEncoding and contentType: ""
_SCHEMA = "apiextensions.k8s.io/v1.JSONSchemaProps"
#: the kinds written as a length-delimited message (the others are varints or doubles)
_VARINT = frozenset({"int", "bool"})


def _timestamp(value: Any) -> bytes:
    """A ``Time``/``MicroTime``: seconds and nanos, both written; the zero time is empty."""
    if not value:
        return b""
    t = datetime.datetime.fromisoformat(str(value))
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.UTC)
    seconds = int(t.replace(microsecond=0).timestamp())
    return b"\x08" + _varint(seconds) + b"\x10" + _varint(t.microsecond * 1000)


def _intstr(value: Any) -> bytes:
    if isinstance(value, str):
        return b"\x08\x01\x10\x00" + _ld(3, value.encode())
    return b"\x08\x00\x10" + _varint(int(value or 0)) + b"\x1a\x00"


def _raw(value: Any) -> bytes:
    return b"" if value is None else _ld(1, orjson.dumps(value))


def _schema_union(kind: str, value: Any) -> bytes:
    if kind == "schemaorbool":
        if isinstance(value, bool):
            return b"\x08" + (b"\x01" if value else b"\x00")
        return b"\x08\x01" + _ld(2, encode_message(value, _SCHEMA))
    if isinstance(value, Mapping):
        return _ld(1, encode_message(value, _SCHEMA))
    if kind == "schemaorarray":
        return b"".join(_ld(2, encode_message(v, _SCHEMA)) for v in value)
    return b"".join(_ld(2, str(v).encode()) for v in value)


def _payload(kind: str, msg: str, value: Any) -> bytes:
    """The bytes of a length-delimited field's value."""
    if kind == "str":
        return b"" if value is None else str(value).encode()
    if kind == "msg":
        return encode_message(value or {}, msg)
    if kind == "bytes":
        return base64.b64decode(value or "")
    if kind in ("time", "microtime"):
        return _timestamp(value)
    if kind == "quantity":
        return _ld(1, str("0" if value is None else value).encode())
    if kind == "intstr":
        return _intstr(value)
    if kind in ("json", "raw", "rawjson"):
        return _raw(value)
    if kind.startswith("schemaor"):
        return _schema_union(kind, value)
    raise ValueError(f"no protobuf encoding for a {kind} field")


def _field(tag: bytes, kind: str, msg: str, value: Any) -> bytes:
    """One field: ``tag`` (its key, for the kind's wire type), then its value."""
    if kind in _VARINT:
        return tag + _varint(int(value or 0))
    if kind == "float":
        return tag + struct.pack("<d", float(value or 0))
    payload = _payload(kind, msg, value)
    return tag + _varint(len(payload)) + payload


_ENTRY_VALUE = _key(2, 2)  # every map value of the tables is length-delimited


def _entries(tag: bytes, kind: str, value: Mapping[str, Any]) -> Iterable[bytes]:
    for name in sorted(value):
        v = value[name]
        if kind.startswith("msg:"):
            item = _ld(2, encode_message(v or {}, kind[4:]))
        elif kind == "bytes" and v is None:
            item = b""  # a nil []byte value: the key alone
        else:
            item = _field(_ENTRY_VALUE, kind, "", v)
        entry = _ld(1, name.encode()) + item
        yield tag + _varint(len(entry)) + entry


def _wire(kind: str) -> int:
    return 0 if kind in _VARINT else 1 if kind == "float" else 2


@functools.cache
def _plan(name: str) -> tuple[tuple[bytes, str, str, str, int], ...]:
    """Message ``name``'s fields as (key bytes, json name, kind, message, flags)."""
    fields = message(name)
    if fields is None:
        raise ValueError(f"no protobuf table for {name}")
    return tuple(
        (_key(num, _wire(kind)), key, kind, msg, flags) for num, key, kind, msg, flags in fields
    )


#: kinds whose unset non-pointer value Go leaves out (a nil slice of bytes)
_NIL_OMITTED = frozenset({"bytes"})


def encode_message(obj: Mapping[str, Any], name: str) -> bytes:
    """The JSON object ``obj`` as message ``name`` (see
    :func:`kubesim.encoding.prototypes.message`)."""
    out = bytearray()
    for tag, key, kind, msg, flags in _plan(name):
        if kind == "inline":
            out += _field(tag, "msg", msg, obj)
            continue
        value = obj.get(key)
        if flags & REPEATED:
            for item in value or ():
                out += _field(tag, kind, msg, item)
        elif kind == "map":
            for entry in _entries(tag, msg, value or {}):
                out += entry
        elif value is None and (flags & PTR or kind in _NIL_OMITTED):
            continue
        else:
            out += _field(tag, kind, msg, value)
    return bytes(out)


def encode_object(obj: Mapping[str, Any]) -> bytes:
    """``obj`` (a built-in kind, its List, or a ``Status``) enveloped as a response body.
    ``ValueError`` for a kind without a table (a custom resource)."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    name = kind_message(api_version, kind)
    if name is None:
        raise ValueError(f"no protobuf encoding for {kind} ({api_version})")
    type_meta = _ld(1, api_version.encode()) + _ld(2, kind.encode())
    return MAGIC + _ld(1, type_meta) + _ld(2, encode_message(obj, name)) + _EMPTY_STRINGS


def watch_frame(event_type: str, body: bytes) -> bytes:
    """One watch event: ``body`` is the enveloped object (:func:`encode_object`)."""
    event = _ld(1, event_type.encode()) + _ld(2, _ld(1, body))
    return len(event).to_bytes(4, "big") + event

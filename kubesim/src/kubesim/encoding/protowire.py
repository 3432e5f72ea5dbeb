"""The protobuf wire format, both ways, for KubeSim's encoders and decoders (objects in
:mod:`kubesim.encoding.protoencode` / :mod:`kubesim.encoding.protobuf`, OpenAPI documents in
:mod:`kubesim.discovery.openapi_v2_proto`).

Varints are unsigned 64-bit (a negative int is written as its two's complement); a field
is its key (number << 3 | wire type) and its value; wire types 0 (varint), 1 (64-bit),
2 (length-delimited) and 5 (32-bit) are read, groups are not.
"""

from __future__ import annotations

from kubesim.errors import WireError

__all__ = ["fields", "key", "length_delimited", "varint"]


_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))


def varint(n: int) -> bytes:
    """``n`` as a varint (a negative ``n`` as its 64-bit two's complement)."""
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    n &= (1 << 64) - 1
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def length_delimited(field: int, payload: bytes) -> bytes:
    """Field ``field`` holding ``payload`` (a string, bytes or a message)."""
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise WireError("truncated protobuf varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of a message in wire order: varints as ints, the
    other wire types as their bytes."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(buf):
        k, i = _read_varint(buf, i)
        num, wire = k >> 3, k & 7
        if wire == 0:
            v, i = _read_varint(buf, i)
            out.append((num, v))
            continue
        if wire == 2:
            n, i = _read_varint(buf, i)
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
        else:
            raise WireError(f"protobuf wire type {wire} is not supported")
        if i + n > len(buf):
            raise WireError("truncated protobuf field")
        out.append((num, buf[i : i + n]))
        i += n
    return out

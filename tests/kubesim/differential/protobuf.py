"""Protobuf answers compared with the recordings, which keep of a protobuf body its length,
its first 64 bytes and a summary of its ``runtime.Unknown`` envelope (28a).

A target's answer is made comparable byte for byte by putting the recorded uids and
resourceVersions back in it: it is decoded (KubeSim's decoder), the values the
:class:`~tests.kubesim.replay.Replayer` mapped are replaced by the recorded ones, and it is
encoded again (KubeSim's encoder; an encoding that loses nothing, checked first). Then its
length and first 64 bytes must be the recorded ones, and its envelope summary (read at the
wire level, without message tables) too.
"""

from __future__ import annotations

import json
from typing import Any

from kubesim.encoding.protobuf import MAGIC, decode_object
from kubesim.encoding.protoencode import encode_object
from kubesim.encoding.protowire import fields
from tests.kubesim.replay import Replayer


def envelope(body: bytes) -> dict[str, Any]:
    """The recorder's summary of an enveloped protobuf body."""
    assert body.startswith(MAGIC), f"no protobuf magic: {body[:16]!r}"
    top = fields(body[len(MAGIC) :])
    f = dict(top)
    type_meta = dict(fields(f[1])) if isinstance(f.get(1), bytes) else {}
    raw = f.get(2, b"")
    assert isinstance(raw, bytes)
    return {
        "magic_hex": MAGIC.hex(),
        "unknown_fields": [n for n, _ in top],
        "typeMeta": {
            "apiVersion": _text(type_meta.get(1, b"")),
            "kind": _text(type_meta.get(2, b"")),
        },
        "raw_len": len(raw),
        "raw_top_fields": [n for n, _ in fields(raw)],
        "contentEncoding": _text(f.get(3, b"")),
        "contentType": _text(f.get(4, b"")),
    }


def _text(v: int | bytes) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def as_recorded(body: bytes, replayer: Replayer) -> bytes:
    """``body`` with the recorded uids and resourceVersions in place of the target's."""
    obj = decode_object(body)
    assert encode_object(obj) == body, "the protobuf answer does not survive a decode"
    text = json.dumps(obj)
    for theirs, mine in replayer.uids.items():
        text = text.replace(mine, theirs)
    for theirs, mine in replayer.rvs.items():
        text = text.replace(f'"resourceVersion": "{mine}"', f'"resourceVersion": "{theirs}"')
    return encode_object(json.loads(text))


def differences(recorded: dict[str, Any], body: bytes, replayer: Replayer) -> list[str]:
    """How ``body`` differs from a recorded protobuf answer (``recorded`` holds
    ``body_raw_len`` / ``object_raw_len``, ``body_first64_hex`` and an envelope summary)."""
    out = []
    summary = recorded.get("protobuf_envelope") or recorded.get("object_envelope") or {}
    got = envelope(body)
    for key, want in summary.items():
        if key != "raw_len" and got[key] != want:
            out.append(f"envelope {key}: {got[key]!r}, recorded {want!r}")
    back = as_recorded(body, replayer)
    length = recorded.get("body_raw_len", recorded.get("object_raw_len"))
    if len(back) != length:
        out.append(f"{len(back)} bytes with the recorded uids and RVs, recorded {length}")
    head = recorded.get("body_first64_hex")
    if head and back[:64].hex() != head:
        out.append(f"first 64 bytes {back[:64].hex()}, recorded {head}")
    return out


def watch_frames(raw: bytes) -> list[tuple[str, bytes]]:
    """A protobuf watch stream's events: (type, enveloped object) per length-prefixed
    frame."""
    out = []
    i = 0
    while i < len(raw):
        n = int.from_bytes(raw[i : i + 4], "big")
        event = dict(fields(raw[i + 4 : i + 4 + n]))
        i += 4 + n
        extension = event[2]
        assert isinstance(extension, bytes)
        obj = dict(fields(extension)).get(1, b"")
        assert isinstance(obj, bytes)
        out.append((_text(event[1]), obj))
    return out

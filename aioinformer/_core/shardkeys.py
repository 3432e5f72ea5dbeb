"""Shard keys: the 64-bit hash space of KEP-5866 and the selectors that name parts of it.

What Kubernetes v1.36 documents (KEP-5866 "Server-side Sharded List and Watch", alpha,
feature gate ``ShardedListAndWatch``; kubernetes/kubernetes#136657; read from the KEP,
``k8s.io/apimachinery/pkg/sharding`` and the CEL parser in ``k8s.io/apiserver/pkg/sharding``):

* **The parameter.** ``shardSelector`` on LIST and WATCH (``ListOptions.shardSelector``),
  a CEL expression of ``shardRange(FIELD, 'START', 'END')`` calls joined by ``||``; no
  other function or operator. The server trims the text; an empty one is refused.
* **Fields.** ``object.metadata.uid`` and ``object.metadata.namespace`` only; every range
  of one selector uses the same field (the parser refuses a mix).
* **Hash.** 64-bit FNV-1a over the field's string value (its UTF-8 bytes): offset basis
  ``0xcbf29ce484222325``, prime ``0x100000001b3``, xor then multiply, mod 2**64.
* **Bounds.** String literals (``'...'``), ``'0x'`` then exactly 16 lowercase hex digits
  (``'0x0000000000000000'``; uppercase digits and shorter forms are refused), except the
  exclusive upper end 2**64, written ``'0x10000000000000000'`` (17 digits). A range is
  half-open, ``START <= hash < END``, and ``START < END`` is required.
* **Rendering.** The apimachinery selector renders ``shardRange(FIELD, 'START', 'END')``
  with ``", "`` between arguments and ``" || "`` between ranges: :attr:`ShardSelector.text`
  is exactly that, so the text sent is the text any Go client would send.
* **The echo.** A list response of a server that applied the selector carries
  ``metadata.shardInfo.selector``, "the shard selector string from the request, echoed
  back" (the v1.36 API reference, ``ShardInfo``). A server without the gate (v1.35 and
  older, or the gate off, or one instance of an HA control plane mid-upgrade) ignores the
  parameter, sends everything and no ``shardInfo``: the client must filter itself. The
  KEP also mentions "the initial sync of a WATCH"; client-go's own sharded ListWatch reads
  the echo from lists only, and so does this library: a watch carries no echo. client-go
  trusts any ``shardInfo``; this library, reading strictly, only one that names the ranges
  it sent.

:class:`ShardSelector` is this library's typed form of one selector (normalized, so two
selectors of the same set of hashes are equal); :func:`shard_hash` the hash. Buckets are
the library's unit of ownership: bucket ``b`` of ``n`` is ``[b * 2**64 // n, (b + 1) *
2**64 // n)``, and :meth:`ShardSelector.of_buckets` turns a set of buckets into the
fewest ranges.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterable
from typing import Final, Literal, TypeAlias

from aioinformer._core.errors import ConfigError

__all__ = [
    "FIELD_PATHS",
    "KEY_SPACE",
    "ShardField",
    "ShardSelector",
    "bucket_range",
    "shard_hash",
]

ShardField: TypeAlias = Literal["uid", "namespace"]
"""The object field a selector hashes: ``metadata.uid`` or ``metadata.namespace``."""

FIELD_PATHS: Final[dict[ShardField, str]] = {
    "uid": "object.metadata.uid",
    "namespace": "object.metadata.namespace",
}
"""Each field's path in the selector text."""

KEY_SPACE: Final = 1 << 64
"""The size of the hash space: hashes are in ``[0, KEY_SPACE)``."""

_OFFSET: Final = 0xCBF29CE484222325
_PRIME: Final = 0x100000001B3
_MASK: Final = KEY_SPACE - 1
_RANGE = re.compile(
    r"\s*shardRange\(\s*object\.metadata\.(uid|namespace)\s*,"
    r"\s*'(0x[0-9a-f]{16}|0x10000000000000000)'\s*,"
    r"\s*'(0x[0-9a-f]{16}|0x10000000000000000)'\s*\)\s*"
)


def shard_hash(value: str) -> int:
    """The 64-bit FNV-1a hash of ``value``'s UTF-8 bytes: where an object whose field is
    ``value`` sits in the key space (what KEP-5866 servers compute).

    Args:
        value: the field's value (an object's uid or namespace).
    """
    h = _OFFSET
    for byte in value.encode():
        h = (h ^ byte) * _PRIME & _MASK
    return h


def _bound(value: int) -> str:
    """A bound as the selector writes it: ``0x`` and 16 lowercase digits (2**64: 17)."""
    return f"0x{value:016x}"


@dataclasses.dataclass(frozen=True, slots=True)
class ShardSelector:
    """A set of hash ranges of one field: what a sharded informer lists, watches and keeps.

    Immutable and hashable. The ranges are normalized when it is made (sorted, and ranges
    that touch or overlap merged), so two selectors of the same hashes are equal and
    render the same :attr:`text`.

    Args:
        ranges: half-open ``(start, end)`` pairs, ``0 <= start < end <= 2**64``; at least
            one (a selector of nothing cannot be sent: the server refuses an empty one).
        field: the field hashed: ``"uid"`` (each object on its own) or ``"namespace"``
            (every object of a namespace together).

    Example::

        ShardSelector.of_buckets({0, 1}, 4).text
        # "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
    """

    ranges: tuple[tuple[int, int], ...]
    """The normalized ranges, in order, none touching another."""
    field: ShardField = "uid"
    """The field hashed: ``"uid"`` or ``"namespace"``."""
    _starts: tuple[int, ...] = dataclasses.field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.field not in FIELD_PATHS:
            raise ConfigError(f"shard field must be 'uid' or 'namespace', not {self.field!r}")
        ranges = sorted((int(s), int(e)) for s, e in self.ranges)
        if not ranges:
            raise ConfigError("a shard selector needs at least one range")
        merged: list[tuple[int, int]] = []
        for start, end in ranges:
            if not 0 <= start < end <= KEY_SPACE:
                raise ConfigError(
                    f"shard range [{start:#x}, {end:#x}) is not within [0, 2**64) with start < end"
                )
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        object.__setattr__(self, "ranges", tuple(merged))
        object.__setattr__(self, "_starts", tuple(s for s, _ in merged))

    @classmethod
    def of_buckets(cls, buckets: Iterable[int], n: int, field: ShardField = "uid") -> ShardSelector:
        """The selector of ``buckets`` out of ``n`` equal buckets (bucket ``b`` is
        ``[b * 2**64 // n, (b + 1) * 2**64 // n)``), adjacent buckets merged into one
        range (bucket ``n - 1`` and bucket 0 do not touch: the space is a line).

        Args:
            buckets: the bucket numbers, each in ``[0, n)``; at least one.
            n: how many buckets the key space is cut into (at least 1).
            field: the field hashed (see the class).
        """
        if n < 1:
            raise ConfigError(f"the number of buckets must be at least 1, not {n}")
        chosen = sorted(set(buckets))
        for b in chosen:
            if not 0 <= b < n:
                raise ConfigError(f"bucket {b} is not one of the {n} buckets [0, {n})")
        return cls(tuple(bucket_range(b, n) for b in chosen), field)

    @classmethod
    def parse(cls, text: str) -> ShardSelector:
        """The selector of a ``shardSelector`` text (the grammar of the module docstring:
        ``shardRange`` calls joined by ``||``, one field, canonical bounds).
        :class:`~aioinformer.ConfigError` for anything else.

        Args:
            text: the selector's text, as :attr:`text` renders it or a server echoes it.
        """
        fields: set[str] = set()
        ranges: list[tuple[int, int]] = []
        for part in text.split("||"):
            match = _RANGE.fullmatch(part)
            if match is None:
                raise ConfigError(f"not a shard selector: {text[:200]!r}")
            name, start, end = match.groups()
            fields.add(name)
            if int(start, 16) >= int(end, 16):
                raise ConfigError(f"shard range start {start} must be less than end {end}")
            ranges.append((int(start, 16), int(end, 16)))
        if len(fields) != 1:
            raise ConfigError(f"all shard ranges must use the same field: {text[:200]!r}")
        field_name: ShardField = "uid" if "uid" in fields else "namespace"
        return cls(tuple(ranges), field_name)

    @property
    def text(self) -> str:
        """The ``shardSelector`` query parameter's value (the apimachinery rendering)."""
        path = FIELD_PATHS[self.field]
        return " || ".join(
            f"shardRange({path}, '{_bound(start)}', '{_bound(end)}')" for start, end in self.ranges
        )

    @property
    def fraction(self) -> float:
        """The share of the key space it selects (0 < fraction <= 1)."""
        return sum(end - start for start, end in self.ranges) / KEY_SPACE

    def contains(self, h: int) -> bool:
        """Whether the hash ``h`` is in one of the ranges.

        Args:
            h: a hash (:func:`shard_hash`).
        """
        i = bisect.bisect_right(self._starts, h) - 1
        return i >= 0 and h < self.ranges[i][1]

    def matches(self, value: str) -> bool:
        """Whether an object whose field is ``value`` is selected
        (``contains(shard_hash(value))``).

        Args:
            value: the object's uid or namespace (per :attr:`field`).
        """
        return self.contains(shard_hash(value))

    def covers(self, other: ShardSelector) -> bool:
        """Whether every object ``other`` selects is selected by this one too (same
        field, and each of ``other``'s ranges inside one of these).

        Args:
            other: the selector compared.
        """
        if other.field != self.field:
            return False
        for start, end in other.ranges:
            i = bisect.bisect_right(self._starts, start) - 1
            if i < 0 or end > self.ranges[i][1]:
                return False
        return True

    def __str__(self) -> str:
        return self.text


def bucket_range(b: int, n: int) -> tuple[int, int]:
    """The hashes of bucket ``b`` of ``n``: ``[b * 2**64 // n, (b + 1) * 2**64 // n)``."""
    return (b * KEY_SPACE // n, (b + 1) * KEY_SPACE // n)

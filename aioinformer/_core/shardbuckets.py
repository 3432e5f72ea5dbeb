"""Shard buckets and the bucket label: how children land in the replica of their owner.

KEP-5866 hashes an object's own uid (or namespace), so a pod and the StatefulSet-shaped
owner it belongs to hash to unrelated places. The library therefore cuts the key space into
:data:`LABEL_BUCKETS` (256) fixed buckets, the unit replicas own, and names each child's
bucket in a label:

* **Buckets.** Bucket ``b`` is the hashes ``[b << 56, (b + 1) << 56)``: the bucket of a
  hash is its top byte (:func:`bucket_of`). Shard ``i`` of ``n`` (``n <= 256``) owns the
  buckets ``[i * 256 // n, (i + 1) * 256 // n)`` (:func:`shard_buckets`): bucket-aligned,
  so a set of buckets selects primaries by uid exactly
  (:func:`buckets_selector`: ``ShardSelector.of_buckets(buckets, 256)``) and their
  children by label exactly (:func:`bucket_label_selector`).
* **A primary's bucket** is that of ``shard_hash(metadata.uid)`` (:func:`uid_bucket`).
* **A child's bucket** is its controller owner's: the label :data:`SHARD_LABEL`
  (``shard.aioinformer.dev/bucket``) with the bucket as two lower-case hex digits
  (:func:`bucket_label`). The owner's bucket (:func:`owner_bucket`) is the label the owner
  carries if it has one, so grandchildren follow the root; else, if the owner has no
  controller itself (a root), the bucket of its uid; an owner that is an unlabeled child
  gives none (its root is not known from it alone: the labeler, which can read the chain,
  places such children).
* **Namespace-scoped sharding** (``field="namespace"``) needs no label: a child is in its
  owner's namespace (an owner is in its dependent's namespace or cluster-scoped), so
  ``buckets_selector(buckets, "namespace")`` selects the primaries and their children
  alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import KubeObject
from aioinformer._core.shardkeys import KEY_SPACE, ShardField, ShardSelector, shard_hash

__all__ = [
    "LABEL_BUCKETS",
    "SHARD_LABEL",
    "bucket_label",
    "bucket_label_selector",
    "bucket_of",
    "buckets_of_selector",
    "buckets_selector",
    "owner_bucket",
    "parse_bucket_label",
    "shard_buckets",
    "uid_bucket",
]

LABEL_BUCKETS: Final = 256
"""How many buckets the key space is cut into: the unit of ownership between replicas."""

SHARD_LABEL: Final = "shard.aioinformer.dev/bucket"
"""The label naming a child's bucket (its root owner's), two lower-case hex digits."""

_SHIFT: Final = 56  # 2**64 // 256 == 1 << 56
_LABEL_VALUE = re.compile(r"[0-9a-f]{2}")


def bucket_of(h: int) -> int:
    """The bucket of the hash ``h``: its top byte (``h >> 56``).

    Args:
        h: a hash in ``[0, 2**64)`` (:func:`~aioinformer.shard_hash`).
    """
    if not 0 <= h < KEY_SPACE:
        raise ConfigError(f"hash {h:#x} is not in [0, 2**64)")
    return h >> _SHIFT


def uid_bucket(uid: str) -> int:
    """The bucket of an object whose uid is ``uid`` (``bucket_of(shard_hash(uid))``).

    Args:
        uid: the object's ``metadata.uid``.
    """
    return shard_hash(uid) >> _SHIFT


def shard_buckets(i: int, n: int) -> range:
    """The buckets shard ``i`` of ``n`` owns: ``[i * 256 // n, (i + 1) * 256 // n)``
    (every bucket in exactly one shard; sizes differ by one at most).

    Args:
        i: the shard, in ``[0, n)``.
        n: how many shards, in ``[1, 256]``.
    """
    if not 1 <= n <= LABEL_BUCKETS:
        raise ConfigError(f"the number of shards must be in [1, {LABEL_BUCKETS}], not {n}")
    if not 0 <= i < n:
        raise ConfigError(f"shard {i} is not one of the {n} shards [0, {n})")
    return range(i * LABEL_BUCKETS // n, (i + 1) * LABEL_BUCKETS // n)


def _checked(buckets: Iterable[int]) -> list[int]:
    chosen = sorted(set(buckets))
    if not chosen:
        raise ConfigError("at least one bucket is needed")
    for b in chosen:
        if not 0 <= b < LABEL_BUCKETS:
            raise ConfigError(f"bucket {b} is not one of the {LABEL_BUCKETS} buckets")
    return chosen


def buckets_selector(buckets: Iterable[int], field: ShardField = "uid") -> ShardSelector:
    """The :class:`~aioinformer.ShardSelector` of ``buckets`` (of 256): what an informer
    of primaries (by uid), or of anything by namespace, lists for them.

    Args:
        buckets: bucket numbers in ``[0, 256)``; at least one.
        field: the field hashed: ``"uid"`` or ``"namespace"``.
    """
    return ShardSelector.of_buckets(_checked(buckets), LABEL_BUCKETS, field)


def buckets_of_selector(selector: ShardSelector) -> frozenset[int]:
    """The buckets a selector of whole buckets covers (the inverse of
    :func:`buckets_selector`); :class:`~aioinformer.ConfigError` if a range does not
    start and end on a bucket's bounds.

    Args:
        selector: a selector made of whole buckets of 256.
    """
    buckets: set[int] = set()
    for start, end in selector.ranges:
        if start % (1 << _SHIFT) or end % (1 << _SHIFT):
            raise ConfigError(f"{selector.text!r} does not cut the key space at bucket bounds")
        buckets.update(range(start >> _SHIFT, end >> _SHIFT))
    return frozenset(buckets)


def bucket_label(b: int) -> str:
    """The label value of bucket ``b``: two lower-case hex digits (``"0a"``).

    Args:
        b: a bucket in ``[0, 256)``.
    """
    return f"{_checked([b])[0]:02x}"


def parse_bucket_label(value: str | None) -> int | None:
    """The bucket a label value names, or None if it names none (absent, or not exactly
    two lower-case hex digits: such a value matches no bucket's label selector either).

    Args:
        value: the value of the ``shard.aioinformer.dev/bucket`` label on an object.
    """
    if value is None or not _LABEL_VALUE.fullmatch(value):
        return None
    return int(value, 16)


def bucket_label_selector(buckets: Iterable[int]) -> str:
    """The label selector of the children of ``buckets``' primaries:
    ``shard.aioinformer.dev/bucket in (00,01,...)``, values in order.

    Args:
        buckets: bucket numbers in ``[0, 256)``; at least one.
    """
    values = ",".join(f"{b:02x}" for b in _checked(buckets))
    return f"{SHARD_LABEL} in ({values})"


def owner_bucket(owner: KubeObject | Mapping[str, Any]) -> int | None:
    """The bucket ``owner``'s children carry: its own ``shard.aioinformer.dev/bucket``
    label if it has one (grandchildren follow the root), else, if it has no controller
    owner (it is a root), its uid's bucket; None for an owner that is itself an unlabeled
    child, or has no uid.

    Args:
        owner: a cached object or a body as the server answered it.
    """
    if isinstance(owner, KubeObject):
        labels: Mapping[str, str] = owner.labels
        uid, controlled = owner.uid, owner.controller_ref is not None
    else:
        meta = owner.get("metadata") or {}
        labels = meta.get("labels") or {}
        uid = meta.get("uid") or ""
        controlled = any(r.get("controller") for r in meta.get("ownerReferences") or ())
    if SHARD_LABEL in labels:
        return parse_bucket_label(labels[SHARD_LABEL])
    if controlled or not uid:
        return None
    return uid_bucket(uid)

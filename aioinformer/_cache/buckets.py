"""Index buckets: the keys an index files under one value, persistent and shared.

A :data:`Bucket` is an immutable set of object keys, shared by every snapshot that has
not changed it. Up to :data:`SMALL` keys it is a plain ``dict`` (key -> True), copied
whole when a batch changes it; above, a :class:`~aioinformer._cache.pmap.FrozenMap` with
leaves of up to :data:`LEAF` keys on average, of which a change copies the directory's
path and one leaf. Both are made of dicts of strings and True, which the cyclic GC does
not track (a FrozenMap adds one list per middle of its directory), and hold a key in
about 20-40 bytes (a HAMT, as ``immutables.Map``, takes 45-60 and one tracked node per
1.5 keys). Most buckets are small (a node's pods, bounded by the kubelet's 110; most
owners' pods; most label values'); a namespace's or a large owner's pods are not, and a
one-key change to them stays cheap at any size. (What the GC is spared and what a write
costs: ``bench/store_bench.py --per-owner 100``, bench/RESULTS.md.)

Contract: a published bucket never changes. :func:`bucket_writer` starts a private copy
of one (``w[key] = True`` adds a key, ``w.pop(key, None)`` removes one);
:func:`finish_bucket` turns it into the new bucket, or None when it is empty (an index
holds no empty buckets). A dict may outgrow SMALL within a batch; ``finish_bucket``
converts it. A bucket shrinking to :data:`SHRINK` keys or fewer becomes a dict again, so
one that hovers at the boundary does not switch every batch.
"""

from __future__ import annotations

from typing import TypeAlias

from aioinformer._cache.pmap import FrozenMap, MapWriter

__all__ = [
    "EMPTY_BUCKET",
    "LEAF",
    "SHRINK",
    "SMALL",
    "Bucket",
    "BucketWriter",
    "bucket_writer",
    "finish_bucket",
]

SMALL = 128
"""The most keys a dict bucket keeps after a batch; more and it becomes a FrozenMap."""
SHRINK = 64
"""A FrozenMap bucket left with this many keys or fewer becomes a dict."""
LEAF = 64
"""The average keys per leaf at which a FrozenMap bucket grows (a map's default is 16:
a bucket is written far less often than it is held)."""


Bucket: TypeAlias = "dict[str, bool] | FrozenMap[str, bool]"
"""One index value's keys (iterate it, ``len()`` it, test ``key in`` it; never change it)."""

BucketWriter: TypeAlias = "dict[str, bool] | MapWriter[str, bool]"
"""A bucket being changed by one batch: ``w[key] = True``, ``w.pop(key, None)``."""

EMPTY_BUCKET: Bucket = {}
"""The bucket of a value with no keys (shared: never written, :func:`bucket_writer` copies)."""


def bucket_writer(bucket: Bucket) -> BucketWriter:
    """A private, writable copy of ``bucket``."""
    if isinstance(bucket, dict):
        return dict(bucket)
    return bucket.mutate()


def finish_bucket(writer: BucketWriter) -> Bucket | None:
    """The bucket ``writer`` holds now, or None if it is empty; ``writer`` is used up."""
    if isinstance(writer, dict):
        if len(writer) > SMALL:
            return FrozenMap(writer, leaf=LEAF)
        return writer or None
    size = len(writer)
    if not size:
        return None
    if size <= SHRINK:
        return dict(writer.items())
    return writer.finish()

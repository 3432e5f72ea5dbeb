"""Index buckets: the keys an index files under one value, persistent and shared.

A :data:`Bucket` is an immutable set of object keys, shared by every snapshot that has
not changed it. Up to :data:`SMALL` keys it is a plain ``dict`` (key -> True), copied
whole when a batch changes it; above, an ``immutables.Map``, path-copied. Why two kinds:
a dict of strings and True is never tracked by the cyclic GC, while a HAMT holds about one
tracked node per 1.5 keys, which every full collection walks; and most buckets are small
(a node's pods, bounded by the kubelet's 110; most owners' pods; most label values'), where
copying a dict costs no more than a HAMT update. Large buckets stay HAMTs, whose one-key
change stays cheap at any size. (What this saves in GC time and costs per event:
``bench/store_bench.py --per-owner 100``, bench/RESULTS.md.)

Contract: a published bucket never changes. :func:`bucket_writer` starts a private copy
of one (a dict or an ``immutables`` mutation: ``w[key] = True`` adds a key,
``w.pop(key, None)`` removes one); :func:`finish_bucket` turns it into the new bucket,
or None when it is empty (an index holds no empty buckets). A dict may outgrow SMALL
within a batch; ``finish_bucket`` converts it. A bucket shrinking to :data:`SHRINK` keys
or fewer becomes a dict again, so one that hovers at the boundary does not switch every
batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import immutables

if TYPE_CHECKING:
    from immutables._protocols import MapMutation

__all__ = [
    "EMPTY_BUCKET",
    "SHRINK",
    "SMALL",
    "Bucket",
    "BucketWriter",
    "bucket_writer",
    "finish_bucket",
]

SMALL = 128
"""The most keys a dict bucket keeps after a batch; more and it becomes a HAMT."""
SHRINK = 64
"""A HAMT bucket left with this many keys or fewer becomes a dict."""

Bucket: TypeAlias = "dict[str, bool] | immutables.Map[str, bool]"
"""One index value's keys (iterate it, ``len()`` it, test ``key in`` it; never change it)."""

BucketWriter: TypeAlias = "dict[str, bool] | MapMutation[str, bool]"
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
            return immutables.Map(writer)
        return writer or None
    bucket = writer.finish()
    if not bucket:
        return None
    if len(bucket) <= SHRINK:
        return dict(bucket.items())
    return bucket

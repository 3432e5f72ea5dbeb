"""Index buckets: a set model across kept versions, the dict/FrozenMap switch, and the GC."""

from __future__ import annotations

import asyncio
import gc

from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer._cache.buckets import (
    EMPTY_BUCKET,
    SHRINK,
    SMALL,
    Bucket,
    bucket_writer,
    finish_bucket,
)
from aioinformer._cache.deltas import Replace
from aioinformer._cache.pmap import FrozenMap
from aioinformer._cache.snapshot_store import snapshot_store
from tests.support import pod_object

ops = st.lists(
    st.tuples(st.sampled_from(["add", "discard", "publish"]), st.integers(0, 3 * SMALL)),
    max_size=600,
)


@settings(max_examples=100, deadline=None)
@given(ops, st.integers(0, 3 * SMALL))
def test_matches_a_set_and_published_buckets_never_change(
    steps: list[tuple[str, int]], start: int
) -> None:
    """Sizes range over 0..3*SMALL, so buckets cross both limits in both directions."""
    model = {f"ns/p{i}" for i in range(start)}
    writer = bucket_writer(EMPTY_BUCKET)
    for key in model:
        writer[key] = True
    published: list[tuple[Bucket | None, set[str]]] = []
    for op, k in steps:
        key = f"ns/p{k}"
        if op == "add":
            writer[key] = True
            model.add(key)
        elif op == "discard":
            writer.pop(key, None)
            model.discard(key)
        else:
            bucket = finish_bucket(writer)
            published.append((bucket, set(model)))
            writer = bucket_writer(EMPTY_BUCKET if bucket is None else bucket)
    published.append((finish_bucket(writer), set(model)))
    for bucket, keys in published:
        if not keys:
            assert bucket is None  # an index keeps no empty bucket
            continue
        assert bucket is not None
        assert set(bucket) == keys and len(bucket) == len(keys)
        assert all(key in bucket for key in keys) and "ns/absent" not in bucket
        if len(keys) <= SHRINK:
            assert isinstance(bucket, dict)
        elif len(keys) > SMALL:
            assert isinstance(bucket, FrozenMap)


def test_a_bucket_becomes_a_frozen_map_above_small_and_a_dict_again_at_shrink() -> None:
    writer = bucket_writer(EMPTY_BUCKET)
    for i in range(SMALL):
        writer[f"k{i}"] = True
    small = finish_bucket(writer)
    assert isinstance(small, dict) and len(small) == SMALL

    writer = bucket_writer(small)
    writer["one-more"] = True
    big = finish_bucket(writer)
    assert isinstance(big, FrozenMap) and len(big) == SMALL + 1
    assert len(small) == SMALL and "one-more" not in small  # the old version is untouched

    writer = bucket_writer(big)
    for i in range(SMALL - SHRINK):  # down to SHRINK + 1: still a FrozenMap (hysteresis)
        assert writer.pop(f"k{i}", None) is True
    middle = finish_bucket(writer)
    assert isinstance(middle, FrozenMap) and len(middle) == SHRINK + 1

    writer = bucket_writer(middle)
    assert writer.pop("one-more", None) is True
    assert writer.pop("never-there", None) is None
    back = finish_bucket(writer)
    assert isinstance(back, dict) and set(back) == {f"k{i}" for i in range(SMALL - SHRINK, SMALL)}
    assert len(big) == SMALL + 1 and len(middle) == SHRINK + 1

    writer = bucket_writer(back)
    for key in list(back):
        writer.pop(key, None)
    assert finish_bucket(writer) is None
    assert EMPTY_BUCKET == {}


def tracked_below(root: object) -> int:
    """GC-tracked objects reachable from ``root`` (itself included), classes aside."""
    seen: set[int] = set()
    todo = [root]
    tracked = 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        tracked += gc.is_tracked(obj)
        todo.extend(gc.get_referents(obj))
    return tracked


def test_small_buckets_give_the_cyclic_gc_nothing_to_traverse() -> None:
    """5,000 pods in 50 namespaces of 100, in 100 owners of 50: the two default indexes
    hold 10,000 keys in 150 buckets, all small, so all plain dicts of strings, which the
    cyclic GC does not track; what it tracks is the outer maps, fewer objects than there
    are buckets."""
    pods = [
        pod_object(f"p{i}", f"ns-{i // 100}", i + 1, owner=f"owner-{i // 50}") for i in range(5000)
    ]

    async def indexes() -> object:
        reader, writer = snapshot_store()
        writer.apply([Replace(pods, 5000, 0.0)])
        snap = reader.snapshot()
        assert len(snap.by_index("namespace", "ns-7")) == 100
        assert len(snap.by_index("controller", "owner-7")) == 50
        return snap._indexes

    assert tracked_below(asyncio.run(indexes())) < 150

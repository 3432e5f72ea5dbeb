"""ShardSelector and shard_hash: the key space of KEP-5866 as kube-apiserver v1.36 reads it.

The hash is checked against FNV-1a 64 computed here from its definition (and its published
test vectors); the text against the apimachinery rendering, byte for byte; the buckets by
property: a set of buckets' selector holds exactly the hashes of those buckets, and the
selectors of a partition of the buckets keep every object exactly once.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer import ConfigError, ShardSelector, shard_hash
from aioinformer._core.shardkeys import KEY_SPACE, bucket_range

HALF = 1 << 63


def reference_fnv1a64(data: bytes) -> int:
    """FNV-1a 64 as its definition states it: for each octet, xor then multiply by the
    FNV prime, modulo 2**64, from the offset basis."""
    h = 14695981039346656037
    for octet in data:
        h ^= octet
        h = (h * 1099511628211) % 2**64
    return h


def bucket_of(h: int, n: int) -> int:
    """The bucket of hash ``h`` among ``n`` (``b * 2**64 // n <= h``)."""
    b = h * n // KEY_SPACE
    while bucket_range(b, n)[0] > h:
        b -= 1
    while bucket_range(b, n)[1] <= h:
        b += 1
    return b


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", 0xCBF29CE484222325), ("a", 0xAF63DC4C8601EC8C), ("foobar", 0x85944171F73967E8)],
)
def test_hash_matches_the_published_fnv1a64_vectors(value: str, expected: int) -> None:
    assert shard_hash(value) == expected


@given(st.text())
def test_hash_is_fnv1a64_of_the_utf8_bytes(value: str) -> None:
    assert shard_hash(value) == reference_fnv1a64(value.encode("utf-8"))


def test_text_is_the_apimachinery_rendering() -> None:
    half = ShardSelector.of_buckets([0], 2)
    assert half.text == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
    )
    upper = ShardSelector.of_buckets([1], 2, field="namespace")
    assert upper.text == (
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
    )
    two = ShardSelector.of_buckets([0, 2], 4)
    assert two.text == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || "
        "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')"
    )
    assert str(two) == two.text


def test_adjacent_buckets_merge_into_the_fewest_ranges() -> None:
    sel = ShardSelector.of_buckets([5, 1, 2, 3, 7], 8)
    assert sel.ranges == (
        (KEY_SPACE // 8, 4 * KEY_SPACE // 8),
        (5 * KEY_SPACE // 8, 6 * KEY_SPACE // 8),
        (7 * KEY_SPACE // 8, KEY_SPACE),
    )
    everything = ShardSelector.of_buckets(range(3), 3)
    assert everything.ranges == ((0, KEY_SPACE),) and everything.fraction == 1.0
    # bucket n - 1 and bucket 0 do not touch: the space is a line, not a ring
    assert len(ShardSelector.of_buckets([0, 3], 4).ranges) == 2


def test_equal_sets_of_hashes_are_equal_selectors() -> None:
    a = ShardSelector(((0, 10), (10, 20), (5, 15)))
    assert a == ShardSelector(((0, 20),)) and hash(a) == hash(ShardSelector(((0, 20),)))
    assert a != ShardSelector(((0, 20),), field="namespace")
    assert len({a, ShardSelector(((0, 20),))}) == 1


def test_contains_and_matches_are_half_open() -> None:
    sel = ShardSelector(((10, 20), (30, 40)))
    assert [h for h in range(45) if sel.contains(h)] == [*range(10, 20), *range(30, 40)]
    full = ShardSelector(((0, KEY_SPACE),))
    assert full.contains(KEY_SPACE - 1) and full.contains(0)
    uid = "3f1c0a52-7d0e-4d44-9f43-8b7f0e0b1f6e"
    assert ShardSelector.of_buckets([bucket_of(shard_hash(uid), 5)], 5).matches(uid)


def test_covers_is_inclusion_of_the_same_field() -> None:
    whole = ShardSelector.of_buckets([0, 1, 2], 4)
    assert whole.covers(ShardSelector.of_buckets([1], 4))
    assert whole.covers(ShardSelector.of_buckets([0, 2], 4))
    assert not whole.covers(ShardSelector.of_buckets([3], 4))
    assert not whole.covers(ShardSelector.of_buckets([2, 3], 4))
    assert not whole.covers(ShardSelector.of_buckets([1], 4, field="namespace"))


@pytest.mark.parametrize(
    "bad",
    [
        {"ranges": ()},
        {"ranges": ((5, 5),)},
        {"ranges": ((6, 5),)},
        {"ranges": ((-1, 5),)},
        {"ranges": ((0, KEY_SPACE + 1),)},
        {"ranges": ((0, 5),), "field": "name"},
    ],
)
def test_bad_selectors_are_config_errors(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ShardSelector(**bad)  # type: ignore[arg-type]


def test_bad_buckets_are_config_errors() -> None:
    for buckets, n in (([], 4), ([4], 4), ([-1], 4), ([0], 0)):
        with pytest.raises(ConfigError):
            ShardSelector.of_buckets(buckets, n)


def test_parse_reads_what_text_writes_and_what_a_server_accepts() -> None:
    sel = ShardSelector.of_buckets([0, 2, 3], 5, field="namespace")
    assert ShardSelector.parse(sel.text) == sel
    spaced = (
        "  shardRange( object.metadata.uid ,'0x0000000000000000',  '0x8000000000000000' )"
        "||shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000') "
    )
    assert ShardSelector.parse(spaced) == ShardSelector(((0, KEY_SPACE),))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",  # 16 digits only
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",
        "shardRange(object.metadata.uid, '0X0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x000000000000000A', '0x8000000000000000')",
        "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && "
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
    ],
)
def test_parse_refuses_what_the_v136_parser_refuses(text: str) -> None:
    with pytest.raises(ConfigError):
        ShardSelector.parse(text)


@settings(max_examples=60)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), min_size=1))), st.lists(st.integers(0, KEY_SPACE - 1), max_size=50))  # fmt: skip
def test_a_set_of_buckets_selects_exactly_the_hashes_of_those_buckets(
    chosen: tuple[int, set[int]], hashes: list[int]
) -> None:
    n, buckets = chosen
    sel = ShardSelector.of_buckets(buckets, n)
    edges = {e for b in buckets for e in bucket_range(b, n)}  # (and 1 inside, 1 outside)
    for h in [*hashes, *(e for e in edges if e < KEY_SPACE), *(e - 1 for e in edges if e > 0)]:
        assert sel.contains(h) == (bucket_of(h, n) in buckets), (h, n, buckets)


@settings(max_examples=50)
@given(
    st.integers(1, 16).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.integers(0, 3), min_size=n, max_size=n))
    ),
    st.lists(st.uuids().map(str), max_size=40),
)
def test_the_selectors_of_a_partition_keep_every_object_exactly_once(
    owners: tuple[int, list[int]], uids: list[str]
) -> None:
    """Buckets dealt to up to four replicas (some may get none): each object is kept by
    exactly one replica's selector."""
    n, replica_of = owners
    selectors = [
        ShardSelector.of_buckets([b for b in range(n) if replica_of[b] == r], n)
        for r in sorted(set(replica_of))
    ]
    for uid in uids:
        assert sum(sel.matches(uid) for sel in selectors) == 1, uid

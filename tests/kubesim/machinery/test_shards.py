"""Shard selectors (kubesim.machinery.shards): FNV-1a 64 against a reference computed here,
the grammar and canonical echo of k8s.io/apiserver v0.36.0's parser, its error texts, and
the ranges' half-open bounds."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.errors import SelectorError
from kubesim.machinery.shards import HASH_SPACE, ShardRange, ShardSelector, fnv1a_64

UID = "object.metadata.uid"
NS = "object.metadata.namespace"


def reference_fnv1a_64(value: str) -> int:
    """FNV-1a 64 as the FNV reference defines it, written independently of KubeSim's."""
    h = 14695981039346656037
    for byte in bytearray(value, "utf-8"):
        h ^= byte
        h = (h * 1099511628211) % 2**64
    return h


def bound(v: int) -> str:
    """A bound as the selector grammar writes it."""
    return "0x10000000000000000" if v == 2**64 else f"0x{v:016x}"


def selector_text(field: str, *ranges: tuple[int, int]) -> str:
    return " || ".join(f"shardRange({field}, '{bound(a)}', '{bound(b)}')" for a, b in ranges)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", 0xCBF29CE484222325),  # the offset basis: every cluster-scoped namespace
        ("a", 0xAF63DC4C8601EC8C),
        ("foobar", 0x85944171F73967E8),
    ],
)
def test_fnv1a_64_known_vectors(value: str, expected: int) -> None:
    assert fnv1a_64(value) == expected == reference_fnv1a_64(value)


@given(st.text())
def test_fnv1a_64_matches_the_reference(value: str) -> None:
    """UTF-8 bytes, xor then multiply, mod 2**64, for any text (uids are ASCII, namespaces
    too, but the hash is defined over bytes)."""
    assert fnv1a_64(value) == reference_fnv1a_64(value)


def test_canonical_echo_and_accepted_spellings() -> None:
    """The echo is the canonical form, whatever whitespace, quotes, parentheses or CEL
    comments the request used; the ranges stay as given, in order, duplicates included."""
    text = (
        "\n shardRange( object . metadata . uid ,\"0x8000000000000000\",'0x10000000000000000')"
        "||(shardRange(object.metadata.uid, r'0x0000000000000000', '0x0000000000000010'))"
        " || shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000010') // x\n"
    )
    sel = ShardSelector.parse(text)
    assert sel.field == UID
    assert sel.ranges == (ShardRange(2**63, 2**64), ShardRange(0, 16), ShardRange(0, 16))
    assert sel.text == (
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000') || "
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000010') || "
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000010')"
    )
    assert ShardSelector.parse(sel.text) == sel


def test_ranges_are_half_open_at_the_hash() -> None:
    """``[start, end)``: an object whose hash is the start is in, one whose hash is the end
    is out (uid field), and the namespace field hashes the namespace."""
    uid = "8e7c3f0a-2b7e-4b1d-9a56-0c9f3d1b2a44"
    h = reference_fnv1a_64(uid)
    assert ShardSelector.parse(selector_text(UID, (h, h + 1))).matches(uid, "default")
    assert not ShardSelector.parse(selector_text(UID, (h - 1, h))).matches(uid, "default")
    assert not ShardSelector.parse(selector_text(UID, (h + 1, 2**64))).matches(uid, "x")
    n = reference_fnv1a_64("team-a")
    by_ns = ShardSelector.parse(selector_text(NS, (n, n + 1)))
    assert by_ns.matches("any-uid", "team-a")
    assert not by_ns.matches(uid, "team-b")


@given(
    cuts=st.lists(st.integers(1, HASH_SPACE - 1), max_size=12, unique=True),
    values=st.lists(st.text(max_size=40), min_size=1, max_size=20),
    field=st.sampled_from([UID, NS]),
)
def test_every_object_is_in_exactly_one_part_of_a_partition(
    cuts: list[int], values: list[str], field: str
) -> None:
    """Any partition of [0, 2**64) into consecutive ranges, each part its own selector
    (some parts split further into several ``||`` ranges): every value falls in exactly
    one part."""
    points = [0, *sorted(cuts), HASH_SPACE]
    parts = list(itertools.pairwise(points))
    selectors = []
    for i, (a, b) in enumerate(parts):
        if i % 2 and b - a > 1:  # every other part as two ranges joined by ||
            mid = (a + b) // 2
            selectors.append(ShardSelector.parse(selector_text(field, (mid, b), (a, mid))))
        else:
            selectors.append(ShardSelector.parse(selector_text(field, (a, b))))
    for value in values:
        holders = [s for s in selectors if s.matches(value, value)]
        assert len(holders) == 1


@given(n=st.integers(1, 64), values=st.lists(st.text(max_size=40), min_size=1, max_size=10))
def test_every_object_is_in_exactly_one_bucket_of_n(n: int, values: list[str]) -> None:
    """The library's buckets, bucket b of n being [b * 2**64 // n, (b + 1) * 2**64 // n):
    each value is selected by exactly one, the one whose bounds hold its reference hash."""
    bounds = [(b * 2**64 // n, (b + 1) * 2**64 // n) for b in range(n)]
    buckets = [ShardSelector.parse(selector_text(UID, rng)) for rng in bounds]
    for value in values:
        (holder,) = [b for b, sel in enumerate(buckets) if sel.matches(value, "")]
        assert bounds[holder][0] <= reference_fnv1a_64(value) < bounds[holder][1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
        (" \t\n", "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
            '(did you mean "0x0000000000000000"?)',
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x80000000')",
            'hexEnd must be a 0x-prefixed 16-digit hex value, got "0x80000000" '
            '(did you mean "0x0000000080000000"?)',
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0X8000000000000000')",
            "hexEnd must have '0x' prefix, got \"0X8000000000000000\"",
        ),
        (
            "shardRange(object.metadata.uid, '0x', '0x8000000000000000')",
            "hexStart: hex value is required after '0x'",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x800000000000000A')",
            'hexEnd: invalid hex character "A" in "0x800000000000000A"',
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')",
            "hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64), got "
            '"0x20000000000000000"',
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x100000000000000000')",
            'hexEnd: hex value too long (18 chars, max 17): "100000000000000000"',
        ),
        (
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
            "shard range start 0x8000000000000000 must be less than end 0x8000000000000000",
        ),
        (
            "shardRange(object.metadata.uid, '0x10000000000000000', '0xffffffffffffffff')",
            "shard range start 0x10000000000000000 must be less than end 0xffffffffffffffff",
        ),
        (
            "shardRange(metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            'unsupported field path "metadata.uid"; supported: object.metadata.uid, '
            "object.metadata.namespace",
        ),
        (
            "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
            'unsupported field path "object.metadata.name"; supported: object.metadata.uid, '
            "object.metadata.namespace",
        ),
        (
            "shardRange('object.metadata.uid', '0x0000000000000000', '0x8000000000000000')",
            "shardRange() first argument: expected field path (e.g. object.metadata.uid), got "
            "expression kind 1",
        ),
        (
            "shardRange(object.metadata.uid, 0, '0x8000000000000000')",
            "hexStart must be a string literal, got int64",
        ),
        (
            "shardRange(object.metadata.uid, start, '0x8000000000000000')",
            "hexStart must be a string literal (e.g. '0xff'), got expression kind 2",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000')",
            "shardRange() requires exactly 3 arguments, got 2",
        ),
        (
            selector_text(UID, (0, 2**63)) + " || " + selector_text(NS, (2**63, 2**64)),
            'all shard ranges must use the same field, got "object.metadata.uid" and '
            '"object.metadata.namespace"',
        ),
        (
            selector_text(UID, (0, 2**63)) + " && " + selector_text(UID, (2**63, 2**64)),
            'unsupported function "_&&_"; only shardRange() and || are allowed',
        ),
        (
            "range(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            'unsupported function "range"; only shardRange() and || are allowed',
        ),
        ("true", "unexpected expression kind 1; expected shardRange() call or || operator"),
        (
            "object.metadata.uid",
            "unexpected expression kind 3; expected shardRange() call or || operator",
        ),
    ],
)
def test_malformed_selectors_fail_with_the_parsers_message(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        ShardSelector.parse(text)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    "text",
    [
        "shardRange(",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ||",
        "shardRange(object.metadata.uid, '0x0000000000000000, '0x8000000000000000')",
        "shardRange(object.metadata.uid; '0x0000000000000000', '0x8000000000000000')",
    ],
)
def test_syntax_errors_are_cel_parse_errors(text: str) -> None:
    """What CEL cannot parse fails as a CEL parse error (the detail is KubeSim's)."""
    with pytest.raises(SelectorError, match=r"^CEL parse error: Syntax error: "):
        ShardSelector.parse(text)

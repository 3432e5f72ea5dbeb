"""Shard buckets and the bucket label: the 256 buckets cut the key space as the selectors do,
shards of N partition them, a bucket set's label selector keeps exactly its children, and
``set_owner`` writes the owner's bucket (the root's, for grandchildren).

The property: for random owners, children, grandchildren and a random partition of the
buckets into replicas, the children a replica's label selector keeps are exactly those of
the primaries its ShardSelector keeps, and each lands in exactly one replica.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer import (
    ConfigError,
    ShardSelector,
    bucket_label,
    bucket_label_selector,
    bucket_of,
    buckets_of_selector,
    buckets_selector,
    owner_bucket,
    set_owner,
    shard_buckets,
    shard_hash,
    uid_bucket,
)
from aioinformer._core.labels import label_matcher
from aioinformer._core.shardbuckets import LABEL_BUCKETS, SHARD_LABEL, parse_bucket_label

HASHES = st.integers(0, 2**64 - 1)
BUCKET_SETS = st.frozensets(st.integers(0, 255), min_size=1)


def body(kind: str, name: str, uid: str | None = None, ns: str = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if uid is not None:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


@given(HASHES)
def test_a_hash_is_in_the_bucket_of_its_top_byte_and_in_no_other(h: int) -> None:
    b = bucket_of(h)
    assert b == h >> 56
    assert buckets_selector([b]).contains(h)
    assert not buckets_selector(set(range(256)) - {b}).contains(h)


def test_bucket_b_is_the_range_of_bucket_b_of_256_of_the_key_space() -> None:
    for b in range(LABEL_BUCKETS):
        assert buckets_selector([b]).ranges == ((b << 56, (b + 1) << 56),)
        assert buckets_selector([b]) == ShardSelector.of_buckets([b], 256)
    assert buckets_selector(range(256)).ranges == ((0, 2**64),)
    assert buckets_selector([0, 1, 3]).ranges == ((0, 2 << 56), (3 << 56, 4 << 56))


@given(st.integers(1, 256))
def test_the_shards_of_n_partition_the_buckets_in_runs(n: int) -> None:
    seen: list[int] = []
    for i in range(n):
        got = shard_buckets(i, n)
        assert got.step == 1 and len(got) in (256 // n, 256 // n + 1)
        seen.extend(got)
    assert seen == list(range(256))


def test_shard_buckets_refuses_what_is_not_a_shard() -> None:
    for i, n in [(0, 0), (0, 257), (4, 4), (-1, 4)]:
        with pytest.raises(ConfigError):
            shard_buckets(i, n)
    with pytest.raises(ConfigError):
        buckets_selector([256])
    with pytest.raises(ConfigError):
        buckets_selector([])
    with pytest.raises(ConfigError):
        bucket_of(2**64)


@given(BUCKET_SETS, st.sampled_from(["uid", "namespace"]))
def test_buckets_of_a_selector_invert_buckets_selector(buckets: frozenset[int], field: Any) -> None:
    sel = buckets_selector(buckets, field)
    assert sel.field == field and buckets_of_selector(sel) == buckets


def test_buckets_of_a_selector_not_cut_at_bucket_bounds_is_refused() -> None:
    with pytest.raises(ConfigError, match="bucket bounds"):
        buckets_of_selector(ShardSelector.of_buckets([0], 3))


@given(BUCKET_SETS, st.integers(0, 255))
def test_a_bucket_sets_label_selector_matches_exactly_its_buckets_labels(
    buckets: frozenset[int], b: int
) -> None:
    text = bucket_label_selector(buckets)
    matches = label_matcher(text)
    assert matches({SHARD_LABEL: bucket_label(b)}) == (b in buckets)
    assert not matches({}) and not matches({SHARD_LABEL: bucket_label(b).upper() + "x"})
    assert parse_bucket_label(bucket_label(b)) == b


def test_label_values_are_two_lower_case_hex_digits() -> None:
    assert [bucket_label(b) for b in (0, 10, 255)] == ["00", "0a", "ff"]
    assert bucket_label_selector([3, 1, 255]) == f"{SHARD_LABEL} in (01,03,ff)"
    for bad in (None, "", "0A", "a", "100", " 0a"):
        assert parse_bucket_label(bad) is None
    with pytest.raises(ConfigError):
        bucket_label(256)


def test_an_owners_bucket_is_its_label_else_its_uids_if_it_is_a_root() -> None:
    root = body("ConfigMap", "root", "uid-r")
    assert owner_bucket(root) == uid_bucket("uid-r") == shard_hash("uid-r") >> 56
    labeled = body("StatefulSet", "s", "uid-s")
    labeled["metadata"]["labels"] = {SHARD_LABEL: "7f"}
    assert owner_bucket(labeled) == 0x7F
    unlabeled_child = set_owner(body("StatefulSet", "u", "uid-u"), body("Other", "o", "uid-o"))
    unlabeled_child["metadata"]["labels"] = {}
    assert owner_bucket(unlabeled_child) is None
    assert owner_bucket(body("ConfigMap", "never-sent")) is None


def test_set_owner_writes_the_controllers_bucket_and_only_the_controllers() -> None:
    root = body("ConfigMap", "root", "uid-root")
    child = set_owner(body("Pod", "p"), root)
    assert child["metadata"]["labels"] == {SHARD_LABEL: bucket_label(uid_bucket("uid-root"))}
    grandchild = set_owner(body("Pod", "g"), {**child, "metadata": {**child["metadata"],
                                                                     "uid": "uid-p"}})  # fmt: skip
    assert grandchild["metadata"]["labels"][SHARD_LABEL] == bucket_label(uid_bucket("uid-root"))
    other = body("ConfigMap", "other", "uid-other")
    set_owner(child, other, controller=False)  # a plain owner places nothing
    assert child["metadata"]["labels"][SHARD_LABEL] == bucket_label(uid_bucket("uid-root"))
    set_owner(child, other)  # a new controller: its bucket
    assert child["metadata"]["labels"][SHARD_LABEL] == bucket_label(uid_bucket("uid-other"))
    unlabeled_child = body("StatefulSet", "u", "uid-u")
    unlabeled_child["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "X", "name": "x", "uid": "uid-x", "controller": True}
    ]
    set_owner(child, unlabeled_child)  # its root is unknown here: no label, the stale one goes
    assert SHARD_LABEL not in child["metadata"]["labels"]


def _replicas(parts: list[int]) -> list[frozenset[int]]:
    """A partition of the 256 buckets: ``parts[b]`` is the replica of bucket ``b``."""
    return [frozenset(b for b in range(256) if parts[b] == r) for r in sorted(set(parts))]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=12),
    st.lists(st.integers(0, 3), min_size=256, max_size=256),
    st.randoms(use_true_random=False),
)
def test_children_land_with_their_owner_in_exactly_one_replica(
    children_per_owner: list[int], parts: list[int], rnd: Any
) -> None:
    owners = [body("PodSet", f"o{i}", str(uuid.UUID(int=rnd.getrandbits(128))))
              for i in range(len(children_per_owner))]  # fmt: skip
    family: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (object, its root)
    for owner, n in zip(owners, children_per_owner, strict=True):
        for j in range(n):
            child = set_owner(body("StatefulSet", f"{owner['metadata']['name']}-{j}"), owner)
            child["metadata"]["uid"] = str(uuid.UUID(int=rnd.getrandbits(128)))
            grandchild = set_owner(body("Pod", f"{child['metadata']['name']}-0"), child)
            family += [(child, owner), (grandchild, owner)]
    replicas = _replicas(parts)
    matchers = [label_matcher(bucket_label_selector(buckets)) for buckets in replicas]
    for obj, root in family:
        homes = [r for r, matches in enumerate(matchers) if matches(obj["metadata"]["labels"])]
        assert len(homes) == 1
        assert buckets_selector(replicas[homes[0]]).matches(root["metadata"]["uid"])
    for buckets, matches in zip(replicas, matchers, strict=True):
        kept = {o["metadata"]["uid"] for o in owners if buckets_selector(buckets).matches(
            o["metadata"]["uid"])}  # fmt: skip
        assert {r["metadata"]["uid"] for o, r in family if matches(o["metadata"]["labels"])} == {
            r["metadata"]["uid"] for _, r in family if r["metadata"]["uid"] in kept
        }


def test_namespace_sharding_needs_no_label_a_child_shares_its_owners_namespace() -> None:
    sel = buckets_selector(shard_buckets(1, 4), "namespace")
    owner = body("PodSet", "o", "uid-o", ns="team-a")
    child = set_owner(body("Pod", "p", ns="team-a"), owner)
    assert sel.matches(owner["metadata"]["namespace"]) == sel.matches(
        child["metadata"]["namespace"]
    )
    with pytest.raises(ConfigError, match="share a namespace"):
        set_owner(body("Pod", "q", ns="team-b"), owner)

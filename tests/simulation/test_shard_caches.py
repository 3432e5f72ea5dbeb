"""The reference operator's replicas with sharded caches (``--coordination shard-caches``:
``Sharding(caches="sharded")``) under every fault kind: ownership is by object there (a
key maps through its primary's uid), so a write is checked against the Lease of the shard
of the object it concerns (the primary's uid, or its child's controller owner's).

``KNOWN`` seeds break an invariant on the current runtime and must keep breaking exactly
it, so a fix shows here (and the entry goes)."""

from __future__ import annotations

import pytest

from tests.simulation.test_seeds import _broken, _soak

SEEDS = 12
"""Seeds 1 to SEEDS, every invariant holding."""

KNOWN: dict[int, tuple[frozenset[str], str]] = {
    43: (
        frozenset({"two-writers"}),
        "a replica whose cache still holds a deleted primary (its watch lags) reconciles it "
        "and merge-patches it by name: the patch lands on the primary re-created under that "
        "name, whose uid is in another replica's shard (the patch carries no uid)",
    ),
    93: (frozenset({"two-writers"}), "the same, under watch lag and resets"),
}


@pytest.mark.timeout(300)
def test_every_invariant_holds_with_sharded_caches() -> None:
    code, output = _soak("--seeds", str(SEEDS), "--coordination", "shard-caches")
    assert f"{SEEDS} seeds in " in output, output
    assert code == 0 and _broken(output) == {}, output


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", sorted(KNOWN))
def test_the_known_seeds_still_break_what_they_broke(seed: int) -> None:
    code, output = _soak("--seed", str(seed), "--coordination", "shard-caches")
    assert code == 1 and _broken(output) == {seed: KNOWN[seed][0]}, output

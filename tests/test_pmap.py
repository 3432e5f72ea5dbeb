"""FrozenMap / MapWriter against a plain dict, including growth and old versions."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer._pmap import FrozenMap, MapWriter

Op = tuple[str, int, int]
ops = st.lists(
    st.tuples(st.sampled_from(["set", "pop", "publish"]), st.integers(0, 400), st.integers()),
    max_size=300,
)


def check(m: FrozenMap[str, int], model: dict[str, int]) -> None:
    assert len(m) == len(model)
    assert dict(m.items()) == model
    assert sorted(m.keys()) == sorted(model) == sorted(m)
    assert sorted(m.values()) == sorted(model.values())
    for key, value in model.items():
        assert m[key] == value and m.get(key) == value and key in m
    assert m.get("absent") is None and m.get("absent", 7) == 7 and "absent" not in m
    with pytest.raises(KeyError):
        m["absent"]
    assert m.get_all(list(model)) == list(model.values())


@settings(max_examples=150, deadline=None)
@given(ops)
def test_matches_a_dict_and_old_versions_never_change(steps: list[Op]) -> None:
    versions: list[tuple[FrozenMap[str, int], dict[str, int]]] = []
    current: FrozenMap[str, int] = FrozenMap()
    model: dict[str, int] = {}
    writer: MapWriter[str, int] = current.mutate()
    for op, k, v in steps:
        key = f"ns/{k}"
        if op == "set":
            assert writer.set(key, v) == model.get(key)
            model[key] = v
        elif op == "pop":
            assert writer.pop(key) == model.pop(key, None)
        else:
            current = writer.finish()
            versions.append((current, dict(model)))
            writer = current.mutate()
        assert len(writer) == len(model)
        assert writer.get(key) == model.get(key)
    versions.append((writer.finish(), dict(model)))
    for frozen, expected in versions:
        check(frozen, expected)


def test_grows_and_keeps_every_key() -> None:
    m: FrozenMap[str, int] = FrozenMap()
    leaves = repr(m)
    w = m.mutate()
    for i in range(5000):
        w.set(f"k{i}", i)
    grown = w.finish()
    assert repr(grown) != leaves  # more leaves than the empty map
    check(grown, {f"k{i}": i for i in range(5000)})
    check(m, {})
    assert repr(FrozenMap({f"k{i}": i for i in range(5000)})) == repr(grown)


def test_writer_is_copy_on_write() -> None:
    base = FrozenMap({f"k{i}": i for i in range(100)})
    w = base.mutate()
    w.set("k1", -1)
    w.pop("k2")
    w.set("new", 5)
    assert base["k1"] == 1 and "k2" in base and "new" not in base  # untouched until...
    new = w.finish()
    assert base["k1"] == 1 and "k2" in base and "new" not in base  # ...and after finish
    assert new["k1"] == -1 and "k2" not in new and new["new"] == 5
    assert len(base) == 100 and len(new) == 100
    with pytest.raises(IndexError):  # a finished writer cannot write any more
        w.set("k3", 0)


def test_holds_untracked_values_without_gc_tracking() -> None:
    """Leaves are plain dicts of strings here: the GC tracks none of them, only the
    directory's few middles (one per 2**(bits-2) leaves)."""
    m = FrozenMap({f"k{i}": f"v{i}" for i in range(1000)})
    w = m.mutate()
    w.set("k1", "x")
    m2 = w.finish()
    gc.collect()
    leaves = [leaf for mid in m2._dir for leaf in mid]
    assert leaves and not any(gc.is_tracked(leaf) for leaf in leaves)
    assert len(m2._dir) * len(m2._dir[0]) == len(leaves) and len(m2._dir) < len(leaves)

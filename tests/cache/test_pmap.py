"""FrozenMap / MapWriter against a plain dict, including growth and old versions."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer._cache.pmap import IN_PLACE, FrozenMap, MapWriter

Op = tuple[str, int, int]
ops = st.lists(
    st.tuples(
        st.sampled_from(["set", "set-many", "pop", "publish", "publish-and-keep"]),
        st.integers(0, 400),
        st.integers(),
    ),
    max_size=300,
)


# A writer knows which containers are its own by its records (any interpreter) or, with
# IN_PLACE, by their reference counts alone (what set/pop are then); both are tested.
WRITE_PATHS = ["recorded", "counted"] if IN_PLACE else ["recorded"]


@contextlib.contextmanager
def write_path(name: str) -> Iterator[None]:
    with mock.patch.multiple(
        MapWriter,
        set=getattr(MapWriter, f"_set_{name}"),
        pop=getattr(MapWriter, f"_pop_{name}"),
        set_many=getattr(MapWriter, f"_set_many_{name}"),
    ):
        yield


def test_set_and_pop_are_the_counted_ones_where_reference_counts_tell() -> None:
    assert (MapWriter.set is MapWriter._set_counted) is IN_PLACE
    assert (MapWriter.pop is MapWriter._pop_counted) is IN_PLACE
    assert (MapWriter.set_many is MapWriter._set_many_counted) is IN_PLACE
    assert (MapWriter.__setitem__ is MapWriter._set_counted) is IN_PLACE


@pytest.mark.parametrize("path", WRITE_PATHS)
def test_a_writer_takes_a_dicts_writes(path: str) -> None:
    """``w[key] = value`` and ``w.pop(key, default)``, as an index bucket writes."""
    with write_path(path):
        w = FrozenMap({"a": 1}).mutate()
        w["b"] = 2
        assert w.pop("a", 0) == 1 and w.pop("a", 0) == 0 and w.pop("a") is None
        assert dict(w.finish().items()) == {"b": 2}


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


@pytest.mark.parametrize("path", WRITE_PATHS)
@settings(max_examples=150, deadline=None)
@given(steps=ops, owned=st.booleans(), leaf=st.sampled_from([16, 2]))
def test_matches_a_dict_and_old_versions_never_change(
    path: str, steps: list[Op], owned: bool, leaf: int
) -> None:
    """Every published version is either kept (and must never change) or given up to the
    next writer with ``owned`` (which may then write in place what no kept version
    shares). Leaves of 2 make the maps grow several times within 400 keys."""
    with write_path(path):
        model_run(steps, owned, leaf)


def model_run(steps: list[Op], owned: bool, leaf: int = 16) -> None:
    versions: list[tuple[FrozenMap[str, int], dict[str, int]]] = []
    model: dict[str, int] = {}
    writer: MapWriter[str, int] = FrozenMap[str, int](leaf=leaf).mutate()
    for op, k, v in steps:
        key = f"ns/{k}"
        if op == "set":
            assert writer.set(key, v) == model.get(key)
            model[key] = v
        elif op == "set-many":  # a run of keys, one of them twice, as in a batch of events
            keys = [key, f"ns/{k + 1}", key, f"ns/{k + 7}"]
            values = [v, v + 1, v + 2, v + 3]
            expected = []
            for one, value in zip(keys, values, strict=True):
                expected.append(model.get(one))
                model[one] = value
            assert writer.set_many(keys, values) == expected
        elif op == "pop":
            assert writer.pop(key) == model.pop(key, None)
        else:
            current = writer.finish()
            if op == "publish-and-keep":
                versions.append((current, dict(model)))
                writer = current.mutate()
            else:
                writer = current.mutate(owned=owned)
            del current
        assert len(writer) == len(model)
        assert writer.get(key) == model.get(key)
    versions.append((writer.finish(), dict(model)))
    for frozen, expected in versions:
        check(frozen, expected)


def containers(m: FrozenMap[str, int]) -> dict[int, object]:
    return {id(m._dir): m._dir} | {id(leaf): leaf for mid in m._dir for leaf in mid}


@pytest.mark.parametrize("path", WRITE_PATHS)
def test_an_owned_writer_changes_in_place_what_nothing_else_references(path: str) -> None:
    with write_path(path):
        changes_in_place()


def changes_in_place() -> None:
    m = FrozenMap({f"k{i}": i for i in range(100)})
    before = set(containers(m))
    w = m.mutate(owned=True)
    del m  # the promise: nobody uses the map again
    w.set("k1", -1)
    w.pop("k2")
    w.set("new", 5)
    assert w.set_many(["k3", "new2", "k3"], [-3, 6, -33]) == [3, None, -3]
    new = w.finish()
    if IN_PLACE:
        assert set(containers(new)) == before  # not one container copied
    else:  # (an interpreter whose reference counts are not used: all copied)
        assert not set(containers(new)) & before
    expected = {f"k{i}": i for i in range(100) if i != 2}
    expected |= {"k1": -1, "new": 5, "k3": -33, "new2": 6}
    check(new, expected)


@pytest.mark.parametrize("path", WRITE_PATHS)
def test_an_owned_writer_copies_what_an_older_map_or_an_iterator_shares(path: str) -> None:
    with write_path(path):
        copies_what_is_shared()


def copies_what_is_shared() -> None:
    old = FrozenMap({f"k{i}": i for i in range(100)})
    w = old.mutate()
    w.set("k1", -1)
    middle = w.finish()  # shares every leaf but k1's with ``old``
    items = middle.items()  # an iterator: holds middle's directory
    first = [next(items) for _ in range(10)]
    w = middle.mutate(owned=True)
    del middle
    for i in range(100):
        w.set(f"k{i}", 1000 + i)
    newest = w.finish()
    check(old, {f"k{i}": i for i in range(100)})
    assert dict(first + list(items)) == {f"k{i}": i for i in range(100)} | {"k1": -1}
    check(newest, {f"k{i}": 1000 + i for i in range(100)})


def test_in_place_writes_are_checked_on_this_interpreter() -> None:
    """IN_PLACE is what the interpreter's reference counts support, not a version
    guess: on CPython 3.11-3.13 with the GIL it must be on (the point of the feature)."""
    expected = sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] < (3, 14)
    assert IN_PLACE is (expected and getattr(sys, "_is_gil_enabled", lambda: True)())


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


def test_a_map_keeps_its_leaf_size_through_writers_and_growth() -> None:
    """Made with ``leaf=64``, a map and the maps its writers make grow at 64 keys per leaf
    on average (4x fewer leaves than the default 16), and hold what a dict holds."""
    items = {f"k{i}": i for i in range(5000)}
    default, large = FrozenMap(items), FrozenMap(items, leaf=64)
    assert large._bits == default._bits - 1
    w = FrozenMap[str, int](leaf=64).mutate()
    for key, value in items.items():
        w.set(key, value)
    grown = w.finish()
    assert grown._bits == large._bits and grown._leaf == 64
    check(grown, items)
    w = grown.mutate()
    w.pop("k1")
    assert w.finish()._leaf == 64


@pytest.mark.parametrize("path", WRITE_PATHS)
@pytest.mark.parametrize("owned", [False, True])
def test_set_many_grows_midway_and_keeps_every_key(path: str, owned: bool) -> None:
    """One set_many call across several growth steps (the map rebuilt under the loop)."""
    with write_path(path):
        base = FrozenMap({f"k{i}": i for i in range(10)})
        w = base.mutate(owned=owned)
        keys = [f"k{i}" for i in range(5000)]
        olds = w.set_many(keys, [-i for i in range(5000)])
        assert olds == [*range(10), *[None] * 4990]
        check(w.finish(), {key: -i for i, key in enumerate(keys)})


@pytest.mark.parametrize("path", WRITE_PATHS)
def test_set_many_wants_a_value_per_key_and_writes_nothing_otherwise(path: str) -> None:
    with write_path(path):
        w = FrozenMap({"k": 1}).mutate()
        with pytest.raises(ValueError, match="2 keys for 1 values"):
            w.set_many(["k", "new"], [5])
        check(w.finish(), {"k": 1})


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

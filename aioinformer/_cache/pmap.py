"""A persistent hash map for the snapshot store: plain dict leaves under a two-level directory.

A :class:`FrozenMap` is immutable. A :class:`MapWriter` (``m.mutate()``) changes a private
copy-on-write view of it and ``finish()`` returns the new map; the old one is untouched.

Layout: ``hash(key)`` picks one of ``4**bits`` leaves, each a plain ``dict``, reached
through a directory: a top of middles, each a sequence of ``2**(bits-2)`` leaves (at
least 4). A writer copies the top once, and each middle and each leaf at most once,
the first time it writes there. ``bits`` grows with the map so that leaves hold
``leaf/4`` to ``leaf`` entries on average; ``leaf`` is 16 (a copied leaf is a few cache
lines) unless the map is made with another: larger leaves hold each key in fewer bytes
for a larger copy per write (index buckets use 64). At 16, a one-key change copies ~150
pointers at 10k keys, ~550 at 200k; a change of many scattered keys about 10 (10k) to 40
(200k) per key. A growth step (every 4x in size) rebuilds the map once (O(n), amortised
O(1) per insertion).

Why not ``immutables.Map`` (measured on the informer pipeline, ``bench/pipeline_bench.py``
under cachegrind): its HAMT nodes are GC-tracked containers, so every write that clones
one feeds the cyclic GC's young generation and, once promoted, its full collections, and
freeing the replaced nodes touches cold memory. Here the only containers are dicts, never
tracked by CPython while they hold untracked values (``gc=False`` structs, strings), and
one list or tuple per middle: ~25% fewer last-level cache misses per update.

In-place writes (``mutate(owned=True)``, Rust's ``Arc::make_mut``): when the caller holds
the only reference to the map and gives it up, the writer changes in place every
container that nothing else references (CPython's reference count tells, see
:data:`IN_PLACE`) and copies only the shared ones. A store whose snapshot no reader holds
then updates like a dict: no leaf copy, none of the siblings' reference counts touched,
no replaced leaf to free. Whatever another map, an iterator or a reader still references
is copied as before, so no map anyone can see ever changes. Where reference counts can
be trusted (:data:`IN_PLACE`) the writer asks them at every write instead of keeping
records of what it already owns: a container referenced once, from the writer's own
top or middle, is its own.

Contract: a FrozenMap never changes while anything but its owner references it; a
writer's changes are invisible until ``finish()``; a writer must not be used after
``finish()``, nor a map after ``mutate(owned=True)``. Values must not be None. Keys must
be hashable with a stable hash (the store uses ``str``). Iteration order is unspecified.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Generic, TypeVar, overload

__all__ = ["IN_PLACE", "FrozenMap", "MapWriter"]

_K = TypeVar("_K")
_V = TypeVar("_V")
_D = TypeVar("_D")

_MIN_BITS = 2  # 16 leaves
_MAX_LEAF = 16  # the default average leaf size that triggers growth: 4x more leaves

# The directory and its middles are lists: a writer fills its own and hands them over
# with ``finish()`` (no copy); only a writer that owns them (see ``_own`` and, where
# reference counts tell, ``_set_counted``) writes again.
_Dir = list[list[dict[_K, _V]]]


def _bits_for(size: int, leaf: int) -> int:
    bits = _MIN_BITS
    while size > (4**bits) * leaf:
        bits += 1
    return bits


def _shape(bits: int) -> tuple[int, int, int]:
    """``(mask, shift, low)`` for ``4**bits`` leaves: leaf ``hash & mask`` sits in middle
    ``leaf >> shift`` at ``leaf & low``. Middles are kept small (``2**(bits-2)`` leaves,
    at least 4): a batch of scattered changes copies one middle per change, the top only
    once."""
    shift = max(2, bits - 2)
    return (1 << (2 * bits)) - 1, shift, (1 << shift) - 1


def _build(items: Iterable[tuple[_K, _V]], bits: int) -> list[list[dict[_K, _V]]]:
    mask, shift, _ = _shape(bits)
    side = 1 << shift
    leaves: list[dict[_K, _V]] = [{} for _ in range(mask + 1)]
    for key, value in items:
        leaves[hash(key) & mask][key] = value
    return [leaves[m : m + side] for m in range(0, mask + 1, side)]


class FrozenMap(Generic[_K, _V]):
    """An immutable hash map (see the module docstring); ``FrozenMap()`` is empty,
    ``FrozenMap(mapping)`` holds a copy of ``mapping``'s items. ``leaf``: the average
    entries per leaf at which the map grows (it and its writers' maps keep it)."""

    __slots__ = ("_bits", "_dir", "_leaf", "_len", "_low", "_mask", "_shift")

    def __init__(self, items: dict[_K, _V] | None = None, *, leaf: int = _MAX_LEAF) -> None:
        size = len(items) if items else 0
        bits = _bits_for(size, leaf)
        self._dir: _Dir[_K, _V] = _build(items.items() if items else (), bits)
        self._bits = bits
        self._mask, self._shift, self._low = _shape(bits)
        self._len = size
        self._leaf = leaf

    @classmethod
    def _of(cls, directory: _Dir[_K, _V], bits: int, size: int, leaf: int) -> FrozenMap[_K, _V]:
        new = cls.__new__(cls)
        new._dir, new._bits, new._len, new._leaf = directory, bits, size, leaf
        new._mask, new._shift, new._low = _shape(bits)
        return new

    @overload
    def get(self, key: _K) -> _V | None: ...
    @overload
    def get(self, key: _K, default: _D) -> _V | _D: ...
    def get(self, key: _K, default: object = None) -> object:
        """The value for ``key``, or ``default``."""
        i = hash(key) & self._mask
        return self._dir[i >> self._shift][i & self._low].get(key, default)

    def __getitem__(self, key: _K) -> _V:
        """The value for ``key``; KeyError if absent."""
        i = hash(key) & self._mask
        return self._dir[i >> self._shift][i & self._low][key]

    def get_all(self, keys: Iterable[_K]) -> list[_V]:
        """The values of ``keys`` (each must be present), in their order: one call for
        many lookups."""
        directory, mask, shift, low = self._dir, self._mask, self._shift, self._low
        return [directory[(i := hash(key) & mask) >> shift][i & low][key] for key in keys]

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is present."""
        i = hash(key) & self._mask
        return key in self._dir[i >> self._shift][i & self._low]

    def __len__(self) -> int:
        """The number of keys."""
        return self._len

    def _leaves(self) -> Iterator[dict[_K, _V]]:
        return chain.from_iterable(self._dir)

    def __iter__(self) -> Iterator[_K]:
        """The keys."""
        return chain.from_iterable(self._leaves())

    def keys(self) -> Iterator[_K]:
        """The keys."""
        return chain.from_iterable(self._leaves())

    def values(self) -> Iterator[_V]:
        """The values."""
        return chain.from_iterable(leaf.values() for leaf in self._leaves())

    def items(self) -> Iterator[tuple[_K, _V]]:
        """The ``(key, value)`` pairs."""
        return chain.from_iterable(leaf.items() for leaf in self._leaves())

    def mutate(self, *, owned: bool = False) -> MapWriter[_K, _V]:
        """A writer starting from this map (``MapWriter(m)`` is the same, for a subclass
        of MapWriter).

        ``owned=True`` promises that the caller holds the only reference to this map and
        will not use it again: the writer may then change in place the containers nothing
        else references (see the module docstring).
        """
        return MapWriter(self, owned=owned)

    def __repr__(self) -> str:
        return f"<FrozenMap len={self._len} leaves={4**self._bits}>"


class MapWriter(Generic[_K, _V]):
    """Copy-on-write changes to a :class:`FrozenMap`; ``finish()`` makes the new map."""

    __slots__ = (
        "_bits",
        "_leaf",
        "_leaves",
        "_len",
        "_limit",
        "_low",
        "_mask",
        "_mids",
        "_shift",
        "_top",
    )

    def __init__(self, base: FrozenMap[_K, _V], *, owned: bool = False) -> None:
        self._bits = base._bits
        self._mask, self._shift, self._low = base._mask, base._shift, base._low
        top = base._dir
        if not (owned and IN_PLACE and _refs(top) == _SOLE):  # e.g. an iterator holds it
            top = list(top)
        self._top: _Dir[_K, _V] = top
        self._mids: dict[int, list[dict[_K, _V]]] = {}  # middle index -> ours
        self._leaves: dict[int, dict[_K, _V]] = {}  # leaf index -> ours
        self._len = base._len
        self._leaf = base._leaf
        self._limit = (4**base._bits) * base._leaf

    def __len__(self) -> int:
        """The number of keys, as changed so far."""
        return self._len

    def get(self, key: _K) -> _V | None:
        """The value for ``key`` as changed so far, or None."""
        i = hash(key) & self._mask
        return self._top[i >> self._shift][i & self._low].get(key)

    def set(self, key: _K, value: _V) -> _V | None:
        """Map ``key`` to ``value``; return the previous value (None if there was none)."""
        i = hash(key) & self._mask
        leaf = self._leaves.get(i)
        if leaf is None:
            leaf = self._own(i)
        old = leaf.get(key)
        leaf[key] = value
        if old is None:
            self._len += 1
            if self._len > self._limit:
                self._grow()
        return old

    def pop(self, key: _K, default: _V | None = None) -> _V | None:
        """Remove ``key``; return its value (``default`` if it was absent)."""
        i = hash(key) & self._mask
        if key not in self._top[i >> self._shift][i & self._low]:
            return default
        leaf = self._leaves.get(i)
        if leaf is None:
            leaf = self._own(i)
        self._len -= 1
        return leaf.pop(key)

    def set_many(self, keys: Sequence[_K], values: Sequence[_V]) -> list[_V | None]:
        """:meth:`set` each key to its value, in order; return the previous values (None
        where there was none), in order. One call for a batch of writes. ValueError (and
        nothing written) if there are not as many values as keys."""
        if len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys for {len(values)} values")
        set_ = self.set
        return [set_(key, value) for key, value in zip(keys, values)]  # noqa: B905

    __setitem__ = set  # (``w[key] = value``, as for a dict: its return value unused)
    _set_recorded = set
    _pop_recorded = pop
    _set_many_recorded = set_many

    # With IN_PLACE (see below) these replace set/pop: a container is ours to write exactly
    # when it is referenced once, from our own top or middle (copies are, from the start),
    # so its reference count answers without the writer's records: two list lookups and
    # two counts per write instead of dict lookups and a call the first time a leaf is
    # written.

    def _set_counted(self, key: _K, value: _V) -> _V | None:
        """Map ``key`` to ``value``; return the previous value (None if there was none)."""
        i = hash(key) & self._mask
        top, m, j = self._top, i >> self._shift, i & self._low
        mid = top[m]
        if _refs(mid) != _SOLE:
            mid = top[m] = list(mid)
        leaf = mid[j]
        if _refs(leaf) != _SOLE:
            leaf = mid[j] = leaf.copy()
        old = leaf.get(key)
        leaf[key] = value
        if old is None:
            self._len += 1
            if self._len > self._limit:
                self._grow()
        return old

    def _set_many_counted(self, keys: Sequence[_K], values: Sequence[_V]) -> list[_V | None]:
        """:meth:`set_many`, with the steps of :meth:`_set_counted` in one loop."""
        if len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys for {len(values)} values")
        olds: list[_V | None] = []
        append = olds.append
        top, mask, shift, low = self._top, self._mask, self._shift, self._low
        for key, value in zip(keys, values):  # noqa: B905  (as long: checked above)
            i = hash(key) & mask
            m, j = i >> shift, i & low
            mid = top[m]
            if _refs(mid) != _SOLE:
                mid = top[m] = list(mid)
            leaf = mid[j]
            if _refs(leaf) != _SOLE:
                leaf = mid[j] = leaf.copy()
            old = leaf.get(key)
            leaf[key] = value
            append(old)
            if old is None:
                self._len += 1
                if self._len > self._limit:
                    self._grow()
                    top, mask, shift, low = self._top, self._mask, self._shift, self._low
        return olds

    def _pop_counted(self, key: _K, default: _V | None = None) -> _V | None:
        """Remove ``key``; return its value (``default`` if it was absent)."""
        i = hash(key) & self._mask
        top, m, j = self._top, i >> self._shift, i & self._low
        if key not in top[m][j]:
            return default
        mid = top[m]
        if _refs(mid) != _SOLE:
            mid = top[m] = list(mid)
        leaf = mid[j]
        if _refs(leaf) != _SOLE:
            leaf = mid[j] = leaf.copy()
        self._len -= 1
        return leaf.pop(key)

    def items(self) -> Iterator[tuple[_K, _V]]:
        """The ``(key, value)`` pairs as changed so far (do not write while iterating)."""
        return chain.from_iterable(leaf.items() for leaf in chain.from_iterable(self._top))

    def finish(self) -> FrozenMap[_K, _V]:
        """The new map. The writer must not be used afterwards."""
        directory = self._top
        self._top = []  # unusable from here on (an IndexError rather than a silent write)
        self._mids = {}
        self._leaves = {}
        return FrozenMap._of(directory, self._bits, self._len, self._leaf)

    def _own(self, i: int) -> dict[_K, _V]:
        """Leaf ``i``, ours to write: the leaf itself if nothing but our middle references
        it, else a copy (and the same for its middle first). A container referenced once,
        from a container of ours, is reachable only through us; one referenced from
        anywhere else (an older map, an iterator) is shared, and copying it leaves the
        other holder's view as it was. Below a copied container everything is shared."""
        m, j = i >> self._shift, i & self._low
        mid = self._mids.get(m)
        if mid is None:
            mid = self._top[m]
            if _refs(mid) != _SOLE:  # (IN_PLACE false: the top is a copy, so never sole)
                mid = self._top[m] = list(mid)
            self._mids[m] = mid
        leaf = mid[j]
        if _refs(leaf) != _SOLE:
            leaf = mid[j] = leaf.copy()
        self._leaves[i] = leaf
        return leaf

    def _grow(self) -> None:
        """Rebuild with 4x the leaves; everything is ours afterwards."""
        bits = max(self._bits + 1, _bits_for(self._len, self._leaf))
        mids = _build(self.items(), bits)
        self._bits = bits
        self._mask, self._shift, self._low = _shape(bits)
        side = 1 << self._shift
        self._top = list(mids)
        self._mids = dict(enumerate(mids))
        self._leaves = {
            m * side + j: leaf for m, mid in enumerate(mids) for j, leaf in enumerate(mid)
        }
        self._limit = (4**bits) * self._leaf


_refs = sys.getrefcount
_SOLE = 3
"""``_refs(local) == _SOLE``: the container in local variable ``local`` is referenced only
once, from the container it was taken from (the local and the call's argument are the
other two references counted). Every check has that shape: ``x = parent[i]`` then
``_refs(x)``, in the same frame."""


def _in_place_works() -> bool:
    """Whether reference counts mean here what ``_SOLE`` assumes: CPython with the GIL and
    strong references for local variables and arguments (3.11-3.13; 3.14 may borrow them,
    free-threaded builds count differently). Checked on a live case of the same shape, not
    only on the version: a sole leaf must count ``_SOLE``, a shared one more."""
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] < (3, 14):
        return False
    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        return False
    outer: list[dict[str, int]] = [{"k": 1}]
    leaf = outer[0]
    sole = _refs(leaf) == _SOLE
    other = [leaf]
    shared = _refs(leaf) == _SOLE + 1
    del other
    return sole and shared


IN_PLACE = _in_place_works()
"""Whether ``mutate(owned=True)`` writes in place on this interpreter (else it copies)."""

if IN_PLACE:  # reference counts tell which containers are ours: no records needed
    MapWriter.set = MapWriter._set_counted  # type: ignore[method-assign]
    MapWriter.__setitem__ = MapWriter._set_counted  # type: ignore[misc]
    MapWriter.pop = MapWriter._pop_counted  # type: ignore[method-assign]
    MapWriter.set_many = MapWriter._set_many_counted  # type: ignore[method-assign]

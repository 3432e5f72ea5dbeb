"""A persistent hash map for the snapshot store: plain dict leaves under a two-level directory.

A :class:`FrozenMap` is immutable. A :class:`MapWriter` (``m.mutate()``) changes a private
copy-on-write view of it and ``finish()`` returns the new map; the old one is untouched.

Layout: ``hash(key)`` picks one of ``4**bits`` leaves, each a plain ``dict``, reached
through a directory of ``2**bits`` tuples of ``2**bits`` leaves. A writer copies the
directory's top (``2**bits`` pointers) once, and each middle tuple and each leaf at most
once, the first time it writes there. ``bits`` grows with the map so that leaves hold
4-16 entries on average (a copied leaf is a few cache lines): a one-key change copies
~100 pointers at 10k keys, ~300 at 200k. A growth step (every 4x in size) rebuilds the
map once (O(n), amortised O(1) per insertion).

Why not ``immutables.Map`` (measured on the informer pipeline, ``bench/pipeline_bench.py``
under cachegrind): its HAMT nodes are GC-tracked containers, so every write that clones
one feeds the cyclic GC's young generation and, once promoted, its full collections, and
freeing the replaced nodes touches cold memory. Here the only containers are dicts, never
tracked by CPython while they hold untracked values (``gc=False`` structs, strings), and
one tuple per ``2**bits`` leaves: ~25% fewer last-level cache misses per update.

Contract: a FrozenMap never changes; a writer's changes are invisible until ``finish()``;
a writer must not be used after ``finish()``. Values must not be None. Keys must be
hashable with a stable hash (the store uses ``str``). Iteration order is unspecified.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Generic, TypeVar, overload

__all__ = ["FrozenMap", "MapWriter"]

_K = TypeVar("_K")
_V = TypeVar("_V")
_D = TypeVar("_D")

_MIN_BITS = 2  # 16 leaves
_MAX_LEAF = 16  # average leaf size that triggers growth: 4x more leaves (average 4)

_Dir = tuple[tuple[dict[_K, _V], ...], ...]


def _bits_for(size: int) -> int:
    bits = _MIN_BITS
    while size > (4**bits) * _MAX_LEAF:
        bits += 1
    return bits


def _build(items: Iterable[tuple[_K, _V]], bits: int) -> list[list[dict[_K, _V]]]:
    side = 1 << bits
    leaves: list[dict[_K, _V]] = [{} for _ in range(side * side)]
    mask = side * side - 1
    for key, value in items:
        leaves[hash(key) & mask][key] = value
    return [leaves[m * side : (m + 1) * side] for m in range(side)]


class FrozenMap(Generic[_K, _V]):
    """An immutable hash map (see the module docstring); ``FrozenMap()`` is empty,
    ``FrozenMap(mapping)`` holds a copy of ``mapping``'s items."""

    __slots__ = ("_bits", "_dir", "_len")

    def __init__(self, items: dict[_K, _V] | None = None) -> None:
        size = len(items) if items else 0
        bits = _bits_for(size)
        self._dir: _Dir[_K, _V] = tuple(map(tuple, _build(items.items() if items else (), bits)))
        self._bits = bits
        self._len = size

    @classmethod
    def _of(cls, directory: _Dir[_K, _V], bits: int, size: int) -> FrozenMap[_K, _V]:
        new = cls.__new__(cls)
        new._dir, new._bits, new._len = directory, bits, size
        return new

    @overload
    def get(self, key: _K) -> _V | None: ...
    @overload
    def get(self, key: _K, default: _D) -> _V | _D: ...
    def get(self, key: _K, default: object = None) -> object:
        """The value for ``key``, or ``default``."""
        bits = self._bits
        i = hash(key) & ((1 << (2 * bits)) - 1)
        return self._dir[i >> bits][i & ((1 << bits) - 1)].get(key, default)

    def __getitem__(self, key: _K) -> _V:
        """The value for ``key``; KeyError if absent."""
        bits = self._bits
        i = hash(key) & ((1 << (2 * bits)) - 1)
        return self._dir[i >> bits][i & ((1 << bits) - 1)][key]

    def get_all(self, keys: Iterable[_K]) -> list[_V]:
        """The values of ``keys`` (each must be present), in their order: one call for
        many lookups."""
        bits = self._bits
        directory, mask, low = self._dir, (1 << (2 * bits)) - 1, (1 << bits) - 1
        return [directory[(i := hash(key) & mask) >> bits][i & low][key] for key in keys]

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is present."""
        bits = self._bits
        i = hash(key) & ((1 << (2 * bits)) - 1)
        return key in self._dir[i >> bits][i & ((1 << bits) - 1)]

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

    def mutate(self) -> MapWriter[_K, _V]:
        """A writer starting from this map."""
        return MapWriter(self)

    def __repr__(self) -> str:
        return f"<FrozenMap len={self._len} leaves={4**self._bits}>"


class MapWriter(Generic[_K, _V]):
    """Copy-on-write changes to a :class:`FrozenMap`; ``finish()`` makes the new map."""

    __slots__ = ("_bits", "_leaves", "_len", "_limit", "_mask", "_mids", "_top")

    def __init__(self, base: FrozenMap[_K, _V]) -> None:
        self._bits = base._bits
        self._mask = (1 << (2 * base._bits)) - 1
        self._top: list[tuple[dict[_K, _V], ...] | list[dict[_K, _V]]] = list(base._dir)
        self._mids: dict[int, list[dict[_K, _V]]] = {}  # middle index -> our copy
        self._leaves: dict[int, dict[_K, _V]] = {}  # leaf index -> our copy
        self._len = base._len
        self._limit = (4**base._bits) * _MAX_LEAF

    def __len__(self) -> int:
        """The number of keys, as changed so far."""
        return self._len

    def get(self, key: _K) -> _V | None:
        """The value for ``key`` as changed so far, or None."""
        bits = self._bits
        i = hash(key) & ((1 << (2 * bits)) - 1)
        return self._top[i >> bits][i & ((1 << bits) - 1)].get(key)

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

    def pop(self, key: _K) -> _V | None:
        """Remove ``key``; return its value (None if it was absent)."""
        bits = self._bits
        i = hash(key) & ((1 << (2 * bits)) - 1)
        if key not in self._top[i >> bits][i & ((1 << bits) - 1)]:
            return None
        leaf = self._leaves.get(i)
        if leaf is None:
            leaf = self._own(i)
        self._len -= 1
        return leaf.pop(key)

    def items(self) -> Iterator[tuple[_K, _V]]:
        """The ``(key, value)`` pairs as changed so far (do not write while iterating)."""
        return chain.from_iterable(leaf.items() for leaf in chain.from_iterable(self._top))

    def finish(self) -> FrozenMap[_K, _V]:
        """The new map. The writer must not be used afterwards."""
        top = self._top
        for m, mid in self._mids.items():
            top[m] = tuple(mid)
        directory: _Dir[_K, _V] = tuple(top)  # type: ignore[arg-type]  # all tuples now
        self._top = []  # unusable from here on (an IndexError rather than a silent write)
        self._mids = {}
        self._leaves = {}
        return FrozenMap._of(directory, self._bits, self._len)

    def _own(self, i: int) -> dict[_K, _V]:
        """Our writable copy of leaf ``i`` (copying its middle tuple first if needed)."""
        bits = self._bits
        m, j = i >> bits, i & ((1 << bits) - 1)
        mid = self._mids.get(m)
        if mid is None:
            mid = self._mids[m] = list(self._top[m])
            self._top[m] = mid
        leaf = mid[j] = mid[j].copy()
        self._leaves[i] = leaf
        return leaf

    def _grow(self) -> None:
        """Rebuild with 4x the leaves; everything is ours afterwards."""
        bits = max(self._bits + 1, _bits_for(self._len))
        mids = _build(self.items(), bits)
        side = 1 << bits
        self._bits = bits
        self._mask = (1 << (2 * bits)) - 1
        self._top = list(mids)
        self._mids = dict(enumerate(mids))
        self._leaves = {
            m * side + j: leaf for m, mid in enumerate(mids) for j, leaf in enumerate(mid)
        }
        self._limit = (4**bits) * _MAX_LEAF

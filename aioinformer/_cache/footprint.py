"""What a cache holds, in bytes: the measure behind ``InformerStatistics.cached_bytes``.

The **cached bytes** of an object are the bytes of JSON it keeps outside its typed
metadata, as held: its ``body`` as stored (the zstd frame of a compact object, the JSON of
a plain one) plus its raw ``managedFields`` (0 once dropped). Its **plain bytes** are the
same with the body uncompressed: equal to its cached bytes unless the object is compact.
These are the bytes compact mode compresses and :func:`~aioinformer.project` cuts.

Contract:

* A store's totals are the sums over the objects its snapshot holds, kept by the writer as
  it applies each batch (:class:`Tally`): O(1) per delta, no walk over the cache, exact
  after any sequence of adds, updates, deletes and relists.
* What the measure leaves out: the typed metadata (names, labels, annotations, owner
  references), the structs' and the bytes objects' headers and the map's entry. It is a
  lower bound of the memory the objects retain: tracemalloc counts the cached bytes plus
  about 1.2 KB per object for a pod with a few labels and annotations (more with large ones)
  (tests/cache/test_footprint.py checks a pod within ``cached bytes + 2 KB``;
  bench/projection_memory.py measures RSS per pod beside it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aioinformer._core.objects import KubeObject

__all__ = ["Tally", "cached_bytes", "plain_bytes", "totals"]

_STORED_BODY: Any = KubeObject.__dict__["body"].__get__  # the body slot, as stored


def cached_bytes(obj: KubeObject) -> int:
    """The bytes of JSON ``obj`` holds outside its metadata (see the module docstring)."""
    return len(_STORED_BODY(obj)) + len(obj.managed_fields)


def plain_bytes(obj: KubeObject) -> int:
    """:func:`cached_bytes` with the body uncompressed (equal unless ``obj`` is compact)."""
    plain = getattr(obj, "plain_size", None)
    if plain is None:
        return cached_bytes(obj)
    return int(plain) + len(obj.managed_fields)


def totals(objects: Iterable[KubeObject]) -> tuple[int, int]:
    """The cached and plain bytes of ``objects`` together, by a walk (for a store rebuilt
    from scratch, and for tests of the incremental sums)."""
    held = plain = 0
    for obj in objects:
        held += cached_bytes(obj)
        plain += plain_bytes(obj)
    return held, plain


class Tally:
    """What one batch changed: ``held`` is the change of the cached bytes, ``expanded``
    of (plain - cached) bytes. :func:`~aioinformer._cache.batch.apply_batch` counts plain
    objects inline (``len(obj.body) + len(obj.managed_fields)``, their cached bytes) and
    calls :meth:`other` for any other type."""

    __slots__ = ("expanded", "held")

    def __init__(self) -> None:
        self.held = 0
        self.expanded = 0

    def other(self, obj: KubeObject, sign: int) -> int:
        """The cached bytes of ``obj`` (not a plain KubeObject); counts its expansion with
        ``sign`` (+1 stored, -1 removed)."""
        held = cached_bytes(obj)
        plain = getattr(obj, "plain_size", None)
        if plain is not None:
            self.expanded += sign * (int(plain) + len(obj.managed_fields) - held)
        return held

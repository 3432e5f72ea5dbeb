"""Giving the heap's free memory back to the operating system after a sync.

A sync decodes the whole list: the pages' bodies and the transient objects are freed once
the store holds the objects, but glibc's allocator keeps most of that memory mapped (its
free chunks sit between live objects), so the process's RSS stays near the peak of the
sync instead of the size of the cache. :func:`release_free_memory` asks the allocator to
return the free pages (glibc's ``malloc_trim``; Go's runtime does the same by itself).

Contract: best effort, never raises; nothing happens where the C library has no
``malloc_trim`` (musl, macOS, Windows). The call releases the GIL while it runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

__all__ = ["release_free_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_free_memory() -> bool:
    """Return the heap's free pages to the OS; whether the C library could be asked."""
    trim = _malloc_trim()
    if trim is None:
        return False
    try:
        trim(0)
    except Exception:  # (a foreign call: nothing of it may stop the writer)
        return False
    return True

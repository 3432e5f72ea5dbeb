"""Giving the heap's free memory back to the operating system after a sync.

A sync decodes the whole list: the pages' bodies and the transient objects are freed once
the store holds the objects, but glibc's allocator keeps most of that memory mapped (its
free chunks sit between live objects), so the process's RSS stays near the peak of the
sync instead of the size of the cache. :func:`release_free_memory` asks the allocator to
return the free pages (glibc's ``malloc_trim``; Go's runtime does the same by itself).

``malloc_trim`` cannot return everything a thread's own heap holds: glibc gives each new
thread an arena of its own, and of such an arena it returns the free pages between chunks
but never the free space at its top, which a sync on a pipeline thread leaves behind
(about 100 bytes per cached pod: bench/RESULTS.md). :func:`share_main_heap` makes
threads started afterwards allocate from the main heap instead (glibc's ``M_ARENA_MAX``
set to 1), whose top ``malloc_trim`` does return.

Contract: best effort, never raises; nothing happens where the C library has no
``malloc_trim`` or ``mallopt`` (musl, macOS, Windows). ``malloc_trim`` releases the GIL
while it runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import threading
from collections.abc import Callable

__all__ = ["release_free_memory", "share_main_heap"]

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter: the most arenas threads may allocate from."""

_lock = threading.Lock()
_shared = False  # share_main_heap asked glibc already


@functools.cache
def _libc_call(name: str) -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        call: Callable[..., int] = getattr(libc, name)
    except (OSError, AttributeError):
        return None
    return call


def _malloc_trim() -> Callable[[int], int] | None:
    return _libc_call("malloc_trim")


def share_main_heap() -> bool:
    """Have the threads started from now on allocate from glibc's main heap (its arena
    limit set to 1, once per process), so that :func:`release_free_memory` can return
    what they free; whether glibc took the setting. Nothing if the process set its own
    limit (``MALLOC_ARENA_MAX``, or a ``glibc.malloc.arena_max`` tunable) or the C
    library has no ``mallopt``. Threads that already have an arena of their own keep
    it."""
    global _shared
    with _lock:
        if _shared:
            return True
        if os.environ.get("MALLOC_ARENA_MAX") or "arena_max" in os.environ.get(
            "GLIBC_TUNABLES", ""
        ):
            return False
        mallopt = _libc_call("mallopt")
        try:
            _shared = mallopt is not None and mallopt(M_ARENA_MAX, 1) == 1
        except Exception:  # (a foreign call: never the caller's failure)
            _shared = False
        return _shared


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

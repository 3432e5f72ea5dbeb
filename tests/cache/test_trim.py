"""Returning free heap memory to the OS: asked of glibc where it has malloc_trim, and
never an error where it has not; threads started after share_main_heap (and a factory's
pipeline thread, unless release_memory=False) allocate from the main heap, unless the
process set its own arena limit (each in a fresh interpreter: glibc's count of arenas)."""

from __future__ import annotations

import ctypes.util
import platform
import re

import pytest

from aioinformer._cache import trim
from aioinformer._cache.trim import release_free_memory
from tests.support import run_python

GLIBC = platform.libc_ver()[0] == "glibc"


def test_glibc_is_asked_to_trim() -> None:
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's; this C library has none")
    assert release_free_memory() is True


def test_without_malloc_trim_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    trim._libc_call.cache_clear()
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: "libdoesnotexist.so.0")
    monkeypatch.setattr(trim, "_shared", False)
    try:
        assert release_free_memory() is False
        assert trim.share_main_heap() is False  # (no mallopt either)
    finally:
        trim._libc_call.cache_clear()


def test_a_failing_trim_is_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(pad: int) -> int:
        raise OSError("no")

    monkeypatch.setattr(trim, "_malloc_trim", lambda: broken)
    assert release_free_memory() is False


ARENAS = """
import asyncio, ctypes, sys, threading
from aioinformer import ProcessSettings
from aioinformer._cache.pipeline import ThreadHost
from aioinformer._cache.trim import share_main_heap

def allocate():  # (blocks over 512 bytes come from glibc, not pymalloc)
    global kept
    kept = [bytearray(4096) for _ in range(64)]

how = sys.argv[1]
if how == "thread":
    if sys.argv[2] == "share":
        print("shared", share_main_heap(), flush=True)
    thread = threading.Thread(target=allocate)
    thread.start()
    thread.join()
else:  # a factory's pipeline thread

    async def main():
        host = ThreadHost("arenas", ProcessSettings(release_memory=sys.argv[2] == "share"))

        async def on_host():
            allocate()

        await host.run(on_host, "allocate")
        await host.aclose()

    asyncio.run(main())
ctypes.CDLL("libc.so.6").malloc_stats()
"""


async def arenas(*argv: str, env: dict[str, str] | None = None) -> tuple[str, int]:
    """Run ARENAS in a fresh interpreter: what it printed, and how many arenas glibc
    reports once its thread has allocated."""
    result = await run_python("-c", ARENAS, *argv, env=env)
    assert result.code == 0, result.err
    return result.out, len(re.findall(r"^Arena \d+:", result.err, re.M))


@pytest.mark.skipif(
    not GLIBC, reason="arenas, mallopt and malloc_stats are glibc's; this C library is another"
)
async def test_threads_started_after_share_main_heap_allocate_from_the_main_heap() -> None:
    assert await arenas("thread", "own") == ("", 2)  # glibc's default: an arena per thread
    assert await arenas("thread", "share") == ("shared True\n", 1)
    out, count = await arenas("thread", "share", env={"MALLOC_ARENA_MAX": "4"})
    assert (out, count) == ("shared False\n", 2)  # the process's own limit: left alone


@pytest.mark.skipif(
    not GLIBC, reason="arenas, mallopt and malloc_stats are glibc's; this C library is another"
)
async def test_the_pipeline_thread_shares_the_main_heap_unless_release_memory_is_off() -> None:
    assert (await arenas("host", "share"))[1] == 1
    assert (await arenas("host", "own"))[1] >= 2  # (its threads: an arena each)

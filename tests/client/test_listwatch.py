"""ListWatch: paths and resource names, list and watch errors over real HTTP (KubeSim, or a
server that answers HTML), and the line framing of a watch response, however the reads
cut it (there the body comes from a stand-in for aiohttp's StreamReader, so that every way
of cutting the bytes into reads can be tried).

The watcher's use of it (resume, relist, backoff): tests/cache/test_watcher.py; every bad
input end to end: tests/test_bad_input.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer._client.listwatch import ListWatch
from aioinformer._core.errors import DecodeError, Expired, StatusError, TransportError
from aioinformer.testing import KubeSim
from tests.support import api_client_for, html_server, pod


class Reads:
    """A response whose body arrives as the given reads (aiohttp's ``readany``)."""

    def __init__(self, reads: list[bytes]) -> None:
        self._reads = iter(reads)
        self.content = self

    async def readany(self) -> bytes:
        return next(self._reads, b"")


def framed(reads: list[bytes], limit: int = 1 << 20) -> tuple[list[list[bytes]], list[int]]:
    """What ``_lines`` yields for ``reads``, and the sizes it reported as oversized."""
    lw = ListWatch(None, "v1", "pods", max_line_bytes=limit)
    oversized: list[int] = []

    async def collect() -> list[list[bytes]]:
        gen = lw._lines(Reads(reads), None, oversized.append)  # type: ignore[arg-type]
        async with contextlib.aclosing(gen) as lines:
            return [batch async for batch in lines]

    return asyncio.run(collect()), oversized


def cut(data: bytes, points: list[int]) -> list[bytes]:
    """``data`` cut at ``points`` (positions, any order, duplicates allowed)."""
    edges = [0, *sorted({p % (len(data) + 1) for p in points}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


line_text = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x"))


@settings(max_examples=300, deadline=None)
@given(st.lists(line_text, max_size=12), st.lists(st.integers(min_value=0), max_size=12))
def test_lines_are_the_same_however_the_reads_cut_them(
    lines: list[bytes], points: list[int]
) -> None:
    """Every complete, non-empty line comes out once, whole, in order (empty lines are
    dropped); one list per read that completed any line, never an empty list."""
    data = b"".join(line + b"\n" for line in lines)
    got, oversized = framed(cut(data, points))
    assert [line for batch in got for line in batch] == [line for line in lines if line]
    assert all(got) and oversized == []
    assert all(type(line) is bytes for batch in got for line in batch)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(line_text, max_size=10),
    st.lists(st.integers(min_value=0), max_size=10),
    st.integers(min_value=1, max_value=30),
)
def test_a_line_held_back_over_the_limit_is_dropped_and_reported(
    lines: list[bytes], points: list[int], limit: int
) -> None:
    """A line is dropped, and its whole size reported, exactly when a read ends inside it
    with more than ``max_line_bytes`` of it received (held back, waiting for its newline);
    a line that a read completes is never held back, so never dropped."""
    data = b"".join(line + b"\n" for line in lines)
    reads = cut(data, points)
    ends = [sum(map(len, reads[: i + 1])) for i in range(len(reads))]
    expected, dropped, start = [], [], 0
    for line in lines:
        newline = start + len(line)  # a read ending at or before it leaves the line open
        held = max((end - start for end in ends if start < end <= newline), default=0)
        if held > limit:
            dropped.append(len(line))
        elif line:
            expected.append(line)
        start = newline + 1
    got, oversized = framed(reads, limit)
    assert [line for batch in got for line in batch] == expected
    assert oversized == dropped


def test_the_stream_may_not_end_in_the_middle_of_a_line() -> None:
    with pytest.raises(TransportError, match=r"middle of a line \(5 bytes without a newline\)"):
        framed([b'{"a":1}\n{"b"', b":"])
    assert framed([b'{"a":1}\n', b"  \n  "])[0] == [[b'{"a":1}'], [b"  "]]


# -- paths and errors over HTTP ------------------------------------------------------------------


def test_paths_and_resource_names() -> None:
    lw = ListWatch(None, "v1", "pods", namespace="team a")
    assert (lw.path, lw.resource) == ("/api/v1/namespaces/team%20a/pods", "pods")
    lw = ListWatch(None, "apps/v1", "statefulsets")
    assert (lw.path, lw.resource) == ("/apis/apps/v1/statefulsets", "statefulsets.apps")
    lw = ListWatch(None, "example.aioinformer.dev/v1", "podsets", namespace="x")
    assert lw.path == "/apis/example.aioinformer.dev/v1/namespaces/x/podsets"
    assert lw.resource == "podsets.example.aioinformer.dev"


async def test_list_410_is_watch_expired_with_the_server_message() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        for i in range(3):
            sim.create("pods", pod(f"p{i}"), "default")
        lw = ListWatch(api, "v1", "pods", namespace="default")
        _, _, token = await lw.list_page("", 1, None)
        sim.create("pods", pod("p3"), "default")
        sim.compact()
        with pytest.raises(Expired) as info:
            await lw.list_page("", 1, token)
        assert info.value.code == 410 and info.value.verb == "list"
        assert "continue parameter is too old" in str(info.value)


async def test_watch_422_names_the_reason() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        lw = ListWatch(api, "v1", "pods")
        with pytest.raises(StatusError) as info:
            async with contextlib.aclosing(lw.watch("", 5, send_initial_events=True)) as lines:
                async for _ in lines:
                    pass
        assert info.value.code == 422 and info.value.verb == "watch"
        assert "sendInitialEvents is forbidden" in str(info.value)


async def test_html_200_is_a_decode_error() -> None:
    async with html_server(200, "text/html") as url:
        async with api_client_for(url) as api:
            lw = ListWatch(api, "v1", "pods")
            with pytest.raises(DecodeError, match="not JSON"):
                await lw.list_page("", 10, None)
            with pytest.raises(DecodeError, match="watch pods in all namespaces"):
                async with contextlib.aclosing(lw.watch("1", 5)) as lines:
                    async for _ in lines:
                        pass


async def test_connection_refused_is_a_stream_error() -> None:
    async with html_server(200, "text/html") as url:
        pass  # the port is free again
    async with api_client_for(url) as api:
        with pytest.raises(TransportError, match="list pods in all namespaces: request failed"):
            await ListWatch(api, "v1", "pods").list_page("", 10, None)

"""The kernel's receive time of the bytes each socket read returns, in a benchmark's process.

:func:`install` (call it before any connection is made) turns on ``SO_TIMESTAMPNS`` for
every TCP connection asyncio's selector loops make in this process from then on, and reads
their sockets with ``recvmsg_into``: each read that returns bytes appends ``(kernel,
read)`` to :data:`READS`: when the kernel received the newest packet among those bytes,
and when this process read them (both CLOCK_MONOTONIC; the kernel stamps CLOCK_REALTIME,
converted with the two clocks' offset at the read). It is for measurement only: what a
watcher's read stamp cannot see is how long bytes waited in the kernel before the process
read them (a thread waiting for the CPU or the GIL).

:func:`socket_wait` pairs each watch event's read stamp (``ObjectDelta.received``) with
the last socket read at or before it: the kernel's time of the newest packet of that
read. That is a lower bound of the event's arrival on the socket (exact when one read
holds one event, as at ordinary rates; older packets of a bigger read arrived earlier).
"""

from __future__ import annotations

import asyncio.selector_events
import bisect
import socket
import struct
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["READS", "install", "socket_wait"]

#: (kernel receive time, read time) of every read that returned bytes, in read order.
READS: list[tuple[float, float]] = []
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_ANCILLARY = socket.CMSG_SPACE(16)
_TIMESPEC = struct.Struct("qq")


class _StampedSocket:
    """A socket whose reads note the kernel's receive time (everything else delegated)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)

    def recv_into(self, buf: Any, nbytes: int = 0, flags: int = 0) -> int:
        view = memoryview(buf)[:nbytes] if nbytes else buf
        n, ancillary, _, _ = self._sock.recvmsg_into([view], _ANCILLARY, flags)
        if n:
            _note(ancillary)
        return n

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, ancillary, _, _ = self._sock.recvmsg(bufsize, _ANCILLARY, flags)
        if data:
            _note(ancillary)
        return data


def _note(ancillary: list[tuple[int, int, bytes]]) -> None:
    read = time.monotonic()
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
            sec, nsec = _TIMESPEC.unpack(data[: _TIMESPEC.size])
            offset = time.time() - read
            READS.append((sec + nsec / 1e9 - offset, read))
            return


def install() -> None:
    """Stamp the reads of every TCP connection made from now on (idempotent)."""
    cls: Any = asyncio.selector_events._SelectorSocketTransport
    if getattr(cls, "_stamped", False):
        return
    original = cls.__init__

    def __init__(self: Any, loop: Any, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        original(self, loop, sock, *args, **kwargs)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            self._sock = _StampedSocket(sock)

    cls.__init__ = __init__
    cls._stamped = True


def socket_wait(
    receipts: Sequence[tuple[int, float]], reads: Sequence[tuple[float, float]]
) -> dict[int, float]:
    """Per received rv (first receipt): the kernel time of the last socket read at or
    before its read stamp (see the module docstring); rvs with no such read are left out."""
    times = [read for _, read in reads]
    out: dict[int, float] = {}
    for rv, received in receipts:
        if rv in out:
            continue
        i = bisect.bisect_right(times, received) - 1
        if i >= 0:
            out[rv] = reads[i][0]
    return out

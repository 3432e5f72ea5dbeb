"""Freshness waits stay honest across a reset of the server's history.

A restored etcd, or a new server at the same address, starts its resourceVersions again,
lower: RV 70 of the new history may come long after the cache reached RV 1000 of the old
one. ``wait_for_rv(70)`` must then not return the old cache at once because 1000 >= 70.
The contract (see :meth:`aioinformer.Informer.wait_for_rv`): a reset starts a new epoch; a
freshness wait returns only a state the watcher has confirmed to belong to the server's
current history (a list, or a watch that brought an event or bookmark, or whose history
check found the server at or past the watch's RV), so a wait for an RV of the new history
is satisfied only by the new history.

The server here is :class:`Restorable`: one true history, which a test resets (lower RVs,
other objects) with or without cutting the open watches, and whose lists it can hold.
A watch from an RV the server has not reached is accepted and gets nothing at all, as
kube-apiserver does (conformance 05d): the reset shows only in a list.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import web

from aioinformer import Informer, InformerFactory, WatchOptions
from aioinformer.testing import eventually
from tests.faults.hostile import event, hostile_server, list_body, pod


class Restorable:
    """Pods in namespace "default" with a history from ``base``; see the module docstring."""

    def __init__(self, objects: dict[str, int], rv: int) -> None:
        self.objects: dict[str, int] = {}
        self.log: list[tuple[int, str]] = []
        self.rv = self.base = 0
        self.changed = asyncio.Event()
        self.lists_open = asyncio.Event()
        self.lists_open.set()
        self.watches: list[web.Request] = []  # the open watches
        self.list_rvs: list[int] = []  # the RV of every list answered, in order
        self.reset(objects, rv, cut=False)

    def reset(self, objects: dict[str, int], rv: int, *, cut: bool) -> None:
        """A new history at ``rv`` holding ``objects`` (name -> RV); with ``cut``, the open
        watches are dropped (a new server), else they stay open and silent."""
        self.objects, self.log, self.rv, self.base = dict(objects), [], rv, rv
        if cut:
            self.drop_watches()
        self._wake()

    def drop_watches(self) -> None:
        """Close the open watches' connections."""
        for request in list(self.watches):
            if request.transport is not None:
                request.transport.close()

    def add(self, name: str) -> int:
        self.rv += 1
        self.objects[name] = self.rv
        self.log.append((self.rv, name))
        self._wake()
        return self.rv

    def _wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") not in ("1", "true"):
            await self.lists_open.wait()
            self.list_rvs.append(self.rv)
            items = [pod(n, rv) for n, rv in sorted(self.objects.items())]
            if request.query.get("limit") == "1":
                items = items[:1]
            return web.Response(body=list_body(items, self.rv), content_type="application/json")
        position = int(request.query["resourceVersion"])
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        self.watches.append(request)
        try:
            base = self.base
            while True:
                changed = self.changed
                if self.base != base or not base <= position:
                    await asyncio.Event().wait()  # another history: silent (05d)
                news = [(rv, n) for rv, n in self.log if rv > position]
                if news:
                    await resp.write(b"".join(event("ADDED", pod(n, rv)) for rv, n in news))
                    position = news[-1][0]
                    continue
                await changed.wait()
        finally:
            self.watches.remove(request)


def options(**kw: Any) -> WatchOptions:
    base: dict[str, Any] = {
        "min_watch_timeout": 30.0,  # the silent watch would end only after this
        "max_watch_timeout": 30.0,
        "idle_timeout": 30.0,
        "backoff_initial": 0.05,
        "backoff_maximum": 0.2,
        "backoff_jitter": 0.0,
    }
    base.update(kw)
    return WatchOptions(**base)


def names(inf: Informer) -> set[str]:
    return {o.name for o in inf.snapshot().list()}


@contextlib.asynccontextmanager
async def synced(server: Restorable, **kw: Any) -> Any:
    async with hostile_server(server.handle) as hostile, hostile.api_client() as api:
        async with InformerFactory(api, "default", watch_options=options(**kw)) as factory:
            inf = factory.informer("v1", "pods")
            await inf.wait_for_sync(timeout=10)
            await eventually(lambda: len(server.watches) == 1, "the watch")
            yield inf


async def test_a_new_server_that_accepts_the_old_rv_is_relisted_while_the_watch_is_open() -> None:
    """The watch is cut (a new server at the same address, RV 70); the resumed watch from
    1000 is accepted and gets nothing. ``wait_for_rv(70)`` returns the new history's state
    (it returned the old cache at once), and the relist comes while the silent watch is
    still open (it came only once that watch ended, ``min_watch_timeout`` later)."""
    server = Restorable({"a": 900, "b": 1000}, 1000)
    async with synced(server) as inf:
        assert names(inf) == {"a", "b"}
        server.reset({"c": 70}, 70, cut=True)
        await eventually(lambda: inf.statistics().stream_errors >= 1, "the cut noticed")
        snap = await inf.wait_for_rv(70, timeout=10)
        assert {o.name for o in snap.list()} == {"c"}
        assert snap.resource_version == 70
        found = await inf.query("namespace", "default", min_rv=70, timeout=10)
        assert [o.name for o in found] == ["c"]
        st = inf.statistics()
        assert st.history_resets == 1 and st.relists == 1
        # read-your-writes in the new history
        rv = server.add("d")
        snap = await inf.wait_for_rv(rv, timeout=10)
        assert snap.get("default/d") is not None


async def test_a_reset_under_an_open_watch_is_found_once_that_watch_drops() -> None:
    """The history is reset under an open watch, which stays open and silent (a restored
    etcd behind the same server) until it drops. From the drop on, ``wait_for_rv`` of the
    new history waits for it; the resumed watch's history check finds the reset."""
    server = Restorable({"a": 900, "b": 1000}, 1000)
    async with synced(server) as inf:
        server.reset({"c": 70}, 70, cut=False)
        server.drop_watches()
        await eventually(lambda: inf.statistics().stream_errors >= 1, "the drop noticed")
        snap = await inf.wait_for_rv(70, timeout=10)
        assert {o.name for o in snap.list()} == {"c"}
        assert inf.statistics().history_resets == 1


async def test_a_wait_during_the_relist_after_a_reset_waits_for_the_new_history() -> None:
    """The reset is found (an event below the watch's position would do the same) while
    the relist's answer is held: a wait for the new history's RV 70 started then does not
    return the old cache; it returns the relisted one."""
    server = Restorable({"a": 900, "b": 1000}, 1000)
    async with synced(server) as inf:
        server.lists_open.clear()  # the relist (and the history checks) wait
        server.reset({"c": 70}, 70, cut=True)
        await eventually(lambda: inf.statistics().stream_errors >= 1, "the cut noticed")
        await eventually(lambda: inf.statistics().watch_restarts >= 1, "the resumed watch")
        waiter = asyncio.create_task(inf.wait_for_rv(70, timeout=10))
        query = asyncio.create_task(inf.query("namespace", "default", min_rv=70, timeout=10))
        await eventually(lambda: inf.statistics().requests >= 4, "the history check sent")
        assert not waiter.done(), "returned the old history's cache"
        assert not query.done(), "queried the old history's cache"
        server.lists_open.set()
        snap = await waiter
        assert {o.name for o in snap.list()} == {"c"}
        assert [o.name for o in await query] == ["c"]
        assert inf.statistics().history_resets == 1


async def test_waits_for_rvs_of_the_same_history_are_not_held_by_a_resumed_watch() -> None:
    """No reset: after the watch is cut, the resumed watch's history check confirms the
    history, and a wait for an RV the cache already holds returns that cache."""
    server = Restorable({"a": 900, "b": 1000}, 1000)
    async with synced(server) as inf:
        server.drop_watches()
        snap = await inf.wait_for_rv(900, timeout=10)
        assert names(inf) == {"a", "b"} and snap.resource_version == 1000
        rv = server.add("d")
        snap = await inf.wait_for_rv(rv, timeout=10)
        assert snap.get("default/d") is not None
        assert inf.statistics().history_resets == 0

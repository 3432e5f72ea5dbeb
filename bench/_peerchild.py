"""One peer's process for bench/peers.py: a pod cache of one kind, driven over JSON lines.

Run as ``python -m bench._peerchild`` with ``AIOINFORMER_PEER_TOKEN`` in the environment
(never on the command line). Peers:

* ``aioinformer-snapshot``: one aioinformer pods informer (the library's: snapshots, on its
  factory's pipeline thread); ``aioinformer-locked``: the same over the harness's
  lock-based baseline (``LockedFactory``, on the caller's loop). Readers fetch one owner's
  pods through the ``controller`` index (the baseline's under its read lock).
* ``official-sharedinformer``: ``kubernetes.informer.SharedInformer`` (its own daemon
  thread, ``ObjectCache`` under an RLock); readers are threads that ``cache.list()`` and
  keep one owner's pods, as a user of that cache (it has no index) does.
* ``asyncio-watch-loop``: the loop most asyncio users write: list with kubernetes_asyncio's
  typed API into a dict keyed namespace/name, then ``watch.Watch().stream(...)`` from the
  list's resourceVersion, storing ``event["object"]``; relist on 410. Readers are tasks
  scanning the dict.

Protocol (stdin -> stdout, one JSON object per line):

1. config ``{"peer", "url", "expect", "uids", "readers"}`` -> ``{"ready": {"rss_bytes"}}``
   (imports done and the client built: the baseline RSS).
2. ``{"op": "sync"}`` -> ``{"synced": seconds, "objects", "rss_bytes", "peak_rss_bytes"}``
   once the cache holds ``expect`` pods (RSS after a garbage collection).
3. ``{"op": "readers", "on": bool}`` -> ``{"readers": calls so far}``: start / stop readers.
4. ``{"op": "wait_rv", "rv", "timeout"}`` -> ``{"reached": monotonic time or null}``: the
   time the cache first held a change at or past ``rv`` (from the apply log).
5. ``{"op": "result"}`` -> ``{"applies": [[t, rv], ...], "latencies": [...],
   "peak_rss_bytes"}``; then EOF.

Every applied change is logged as (time.monotonic(), resourceVersion) right after the
cache holds it (aioinformer: each published snapshot); the parent compares that log with
the sim's commit log.
"""

from __future__ import annotations

import asyncio
import bisect
import gc
import logging
import os
import random
import resource
import sys
import threading
import time
from typing import Any

import orjson

from aioinformer._harness.procstats import rss_bytes

TOKEN_ENV = "AIOINFORMER_PEER_TOKEN"


def peak_rss_bytes() -> int:
    """The process's peak resident set size (ru_maxrss is in KiB on Linux and lags the
    current RSS by a few pages)."""
    return max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, rss_bytes())


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.buffer.write(orjson.dumps(obj) + b"\n")
    sys.stdout.buffer.flush()


def owns(pod: Any, uid: str) -> bool:
    """Whether a kubernetes model pod is controlled by ``uid``."""
    return any(r.controller and r.uid == uid for r in pod.metadata.owner_references or ())


def configuration(client: Any, url: str) -> Any:
    """``client.Configuration`` for the sim, the token from the environment (both clients
    share this API)."""
    conf = client.Configuration()
    conf.host = url
    conf.api_key = {"BearerToken": os.environ[TOKEN_ENV]}
    conf.api_key_prefix = {"BearerToken": "Bearer"}
    return conf


class Peer:
    """What the driver needs from a peer: start, size, applied RV, readers, stop."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.applies: list[tuple[float, int]] = []
        self.latencies: list[float] = []
        self.tasks: list[asyncio.Task[None]] = []

    def log_apply(self, rv: int) -> None:
        self.applies.append((time.monotonic(), rv))

    def applied_rv(self) -> int:
        return self.applies[-1][1] if self.applies else 0

    async def start(self) -> None:
        raise NotImplementedError

    def objects(self) -> int:
        raise NotImplementedError

    async def read(self, seed: int) -> None:
        raise NotImplementedError

    def readers(self, on: bool) -> None:
        """Start (or cancel) ``readers`` tasks running :meth:`read`."""
        if on:
            self.tasks = [asyncio.create_task(self.read(i)) for i in range(self.cfg["readers"])]
        else:
            for t in self.tasks:
                t.cancel()

    async def stop(self) -> None:
        raise NotImplementedError


class AioinformerPeer(Peer):
    def __init__(self, cfg: dict[str, Any], store: str) -> None:
        super().__init__(cfg)
        from kubernetes_asyncio import client

        from aioinformer import InformerFactory
        from aioinformer._harness.informer_process import Readers
        from aioinformer._harness.locked_informer import LockedFactory

        self.api = client.ApiClient(configuration=configuration(client, cfg["url"]))
        factory_class = LockedFactory if store == "locked" else InformerFactory
        self.factory = factory_class(self.api)
        self.informer = self.factory.informer("v1", "pods")
        self.informer.on_publish(lambda _seq, rv: self.log_apply(rv))
        self.reader = Readers(self.informer, "index", cfg["uids"], 1000)
        self.reader.latencies = self.latencies
        self.read = self.reader.run_one  # type: ignore[method-assign]
        self.running: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.running = asyncio.create_task(self.factory.run())

    def objects(self) -> int:
        return self.informer.statistics().objects if self.informer.has_synced else 0

    async def stop(self) -> None:
        self.readers(False)
        if self.running is not None:
            self.running.cancel()  # the factory's only stop signal
            await asyncio.gather(self.running, return_exceptions=True)
        await self.api.close()


class WatchLoopPeer(Peer):
    """The loop most asyncio users write (kubernetes_asyncio typed API into a dict)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__(cfg)
        from kubernetes_asyncio import client

        self.api = client.ApiClient(configuration=configuration(client, cfg["url"]))
        self.v1 = client.CoreV1Api(self.api)
        self.cache: dict[str, Any] = {}
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.run())

    async def run(self) -> None:
        from kubernetes_asyncio import watch
        from kubernetes_asyncio.client.exceptions import ApiException

        while True:
            pods = await self.v1.list_pod_for_all_namespaces()
            self.cache = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pods.items}
            rv = pods.metadata.resource_version
            self.log_apply(int(rv))
            try:
                async for event in watch.Watch().stream(
                    self.v1.list_pod_for_all_namespaces, resource_version=rv
                ):
                    obj = event["object"]
                    key = f"{obj.metadata.namespace}/{obj.metadata.name}"
                    if event["type"] == "DELETED":
                        self.cache.pop(key, None)
                    else:
                        self.cache[key] = obj
                    self.log_apply(int(obj.metadata.resource_version))
            except ApiException as exc:
                if exc.status != 410:
                    raise

    def objects(self) -> int:
        return len(self.cache)

    async def read(self, seed: int) -> None:
        rnd = random.Random(seed)
        uids = self.cfg["uids"]
        while True:
            uid = rnd.choice(uids)
            t0 = time.perf_counter()
            mine = [p for p in self.cache.values() if owns(p, uid)]
            self.latencies.append(time.perf_counter() - t0)
            del mine
            await asyncio.sleep(0)

    async def stop(self) -> None:
        self.readers(False)
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        await self.api.close()


class SharedInformerPeer(Peer):
    """The official client's SharedInformer (thread-based); reader threads."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__(cfg)
        from kubernetes import client
        from kubernetes.informer import ADDED, DELETED, MODIFIED, SharedInformer

        self.api = client.ApiClient(configuration=configuration(client, cfg["url"]))
        v1 = client.CoreV1Api(self.api)
        self.informer = SharedInformer(list_func=v1.list_pod_for_all_namespaces)
        for kind in (ADDED, MODIFIED, DELETED):
            self.informer.add_event_handler(kind, self.on_event)
        self.stop_readers = threading.Event()
        self.threads: list[threading.Thread] = []

    def on_event(self, obj: Any) -> None:
        rv = int(obj.metadata.resource_version)
        if rv > self.applied_rv():  # a (re)list fires an event per item, in no RV order
            self.log_apply(rv)

    async def start(self) -> None:
        self.informer.start()

    def objects(self) -> int:
        n = len(self.informer.cache.list_keys())
        listed = int(self.informer._resource_version or 0)  # set once the list is applied
        if listed > self.applied_rv():
            self.log_apply(listed)
        return n

    def read_in_thread(self, seed: int) -> None:
        rnd = random.Random(seed)
        uids, cache = self.cfg["uids"], self.informer.cache
        while not self.stop_readers.is_set():
            uid = rnd.choice(uids)
            t0 = time.perf_counter()
            mine = [p for p in cache.list() if owns(p, uid)]
            self.latencies.append(time.perf_counter() - t0)
            del mine

    def readers(self, on: bool) -> None:
        if on:
            self.stop_readers.clear()
            self.threads = [
                threading.Thread(target=self.read_in_thread, args=(i,), daemon=True)
                for i in range(self.cfg["readers"])
            ]
            for t in self.threads:
                t.start()
        else:
            self.stop_readers.set()
            for t in self.threads:
                t.join()

    async def stop(self) -> None:
        self.readers(False)
        logging.getLogger("kubernetes.informer").setLevel(logging.CRITICAL)  # the cut stream
        self.informer._stop_event.set()
        if self.informer._watch is not None:
            self.informer._watch.stop()  # the thread is a daemon: it ends with the process


def make_peer(cfg: dict[str, Any]) -> Peer:
    peer = cfg["peer"]
    if peer.startswith("aioinformer-"):
        return AioinformerPeer(cfg, peer.removeprefix("aioinformer-"))
    if peer == "asyncio-watch-loop":
        return WatchLoopPeer(cfg)
    if peer == "official-sharedinformer":
        return SharedInformerPeer(cfg)
    raise SystemExit(f"unknown peer {peer!r}")


async def sync(peer: Peer, stdin: asyncio.StreamReader) -> dict[str, Any]:
    t0 = time.perf_counter()
    await peer.start()
    while peer.objects() < peer.cfg["expect"]:
        if stdin.at_eof():  # the parent is gone
            raise SystemExit(1)
        await asyncio.sleep(0.01)
    synced = time.perf_counter() - t0
    gc.collect()
    return {
        "synced": synced,
        "objects": peer.objects(),
        "rss_bytes": rss_bytes(),
        "peak_rss_bytes": peak_rss_bytes(),
    }


async def wait_rv(peer: Peer, rv: int, timeout: float) -> float | None:
    give_up = time.monotonic() + timeout
    while peer.applied_rv() < rv:
        if time.monotonic() > give_up:
            return None
        await asyncio.sleep(0.01)
    rvs = [r for _, r in peer.applies]
    return peer.applies[bisect.bisect_left(rvs, rv)][0]


async def main() -> None:
    logging.basicConfig(level=logging.ERROR, format="peer process: %(name)s: %(message)s")
    reader = asyncio.StreamReader(limit=64 << 20)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def receive() -> dict[str, Any]:  # (its own reader: sync() watches it for EOF)
        line = await reader.readline()
        if not line:
            raise SystemExit(0)
        msg: dict[str, Any] = orjson.loads(line)
        return msg

    peer = make_peer(await receive())
    gc.collect()
    emit({"ready": {"rss_bytes": rss_bytes()}})
    try:
        while True:
            msg = await receive()
            op = msg["op"]
            if op == "sync":
                emit(await sync(peer, reader))
            elif op == "readers":
                peer.readers(msg["on"])
                emit({"readers": len(peer.latencies)})
            elif op == "wait_rv":
                emit({"reached": await wait_rv(peer, msg["rv"], msg["timeout"])})
            elif op == "result":
                emit(
                    {
                        "applies": peer.applies,
                        "latencies": peer.latencies,
                        "peak_rss_bytes": peak_rss_bytes(),
                    }
                )
    finally:
        await peer.stop()


if __name__ == "__main__":
    asyncio.run(main())

"""Helpers shared by the tests: object factories, a fake clock, recorded transcripts, the
watcher harness (a model FIFO, a recording ListWatch), and running the command line in a
child process. ``eventually`` is the testing kit's (:func:`aioinformer.testing.eventually`).

What more than one test module needs lives here, not in a test module (KubeSim's own
wire-level readers stay with its tests in tests/kubesim). Factories come in two shapes:
request bodies for KubeSim (``pod``, ``configmap``: plain dicts) and decoded objects for
the cache layers (``pod_object``: a ``KubeObject``).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import itertools
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
import orjson
import pytest
from aiohttp import web

from aioinformer._cache.deltas import Change, ChangeType, Delta, ObjectDelta, Replace
from aioinformer._cache.index import IndexFunc
from aioinformer._cache.snapshot_store import Snapshot, snapshot_store
from aioinformer._cache.watcher import Watcher, WatchOptions
from aioinformer._client.listwatch import ListWatch
from aioinformer._core.backoff import Backoff
from aioinformer._core.objects import KubeObject, decode_object
from aioinformer._harness.locked_store import locked_store
from aioinformer.testing import eventually as eventually  # (the one bounded poll)

#: Recorded kube-apiserver v1.28 exchanges, copied into the repository (see its README).
CONFORMANCE = Path(__file__).resolve().parent / "kubesim" / "conformance"
#: The repository's root (examples/, bench/ and README.md live there).
REPO = Path(__file__).resolve().parents[1]


def transcript(name: str) -> dict[str, Any]:
    """Load one recorded kube-apiserver exchange from tests/kubesim/conformance (``"13a"`` or the
    whole file name)."""
    stem = name.removesuffix(".json")
    matches = sorted(CONFORMANCE.glob(f"{stem}*.json"))
    assert matches, f"no transcript {name!r} in {CONFORMANCE}"
    data: dict[str, Any] = json.loads(matches[0].read_text())
    return data


# -- request bodies for KubeSim ---------------------------------------------------------------


def released_lease(name: str, namespace: str) -> dict[str, Any]:
    """The body of a Lease its last holder released (what a rollout finds): a candidate
    takes it at once, where the creator of a missing Lease (a fresh deployment) leads
    only a renew deadline later."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"holderIdentity": "", "leaseDurationSeconds": 1},
    }


def pod(name: str, **labels: str) -> dict[str, Any]:
    """A minimal valid Pod body; its labels are ``labels`` (default ``app=web``)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }


def child_pod(owner_name: str, namespace: str) -> dict[str, Any]:
    """A Pod body named after its owner (``generateName``: ``OWNER-``), in ``namespace``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": f"{owner_name}-", "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }


def configmap(name: str, **data: str) -> dict[str, Any]:
    """A ConfigMap body with ``data`` (default ``v=1``)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": data or {"v": "1"},
    }


# -- decoded objects for the cache layers -------------------------------------------------------


def pod_object(
    name: str,
    ns: str = "default",
    rv: int = 1,
    *,
    app: str | None = None,
    labels: dict[str, str] | None = None,
    owner: str | None = None,
    node: str | None = None,
    generation: int | None = None,
    created: str | None = None,
) -> KubeObject:
    """A decoded Pod. ``ns=""`` makes it cluster-scoped (key "name"); ``app`` sets the
    ``app`` label (``labels`` sets them all); ``owner`` adds a controller ownerReference to
    StatefulSet ``owner`` (uid ``owner``); ``node`` sets ``spec.nodeName``; ``created``
    the creationTimestamp."""
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(rv), "uid": f"u-{ns}-{name}"}
    if ns:
        meta["namespace"] = ns
    if labels is not None or app is not None:
        meta["labels"] = {**(labels or {}), **({"app": app} if app is not None else {})}
    if owner is not None:
        ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": owner, "uid": owner}
        meta["ownerReferences"] = [{**ref, "controller": True}]
    if generation is not None:
        meta["generation"] = generation
    if created is not None:
        meta["creationTimestamp"] = created
    spec = {} if node is None else {"nodeName": node}
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    return decode_object(orjson.dumps(doc))


def delta(kind: ChangeType, obj: KubeObject, received: float = 0.0) -> ObjectDelta:
    """A FIFO delta (``received`` on the informer clock; 0.0 where no one measures lag)."""
    return ObjectDelta(kind, obj, received)


def upsert(obj: KubeObject) -> ObjectDelta:
    """An UPDATED delta: the store adds or replaces ``obj``."""
    return delta(ChangeType.UPDATED, obj)


def many_pods(n: int, rv0: int = 1) -> list[KubeObject]:
    """``n`` distinct pods ("default/p0", ...) sharing one decoded metadata (only key and
    rv differ): cheap to build in bulk."""
    base = pod_object("base", "default", rv0, owner="sts-1")
    replace = msgspec.structs.replace
    return [replace(base, key=f"default/p{i}", rv=rv0 + i) for i in range(n)]


StoreKind = Literal["snapshot", "locked"]
"""The stores the tests compare: the library's, and the benchmarks' lock-based baseline."""
STORE_KINDS: tuple[StoreKind, ...] = ("snapshot", "locked")


class Store:
    """A store's reader/writer pair (the snapshot store, or the harness's lock-based
    baseline), with the informer's way of applying a batch (the baseline under its write
    lock) as one call, and the seq of every publish noted in ``published``."""

    def __init__(self, kind: StoreKind, indexers: dict[str, IndexFunc] | None = None) -> None:
        self.kind = kind
        self.reader: Any
        self.writer: Any
        if kind == "snapshot":
            self.reader, self.writer = snapshot_store(indexers)
        else:
            self.reader, self.writer = locked_store(indexers)
        self.published: list[int] = []

    async def apply(self, batch: Sequence[Delta], changes: bool = True) -> list[Change]:
        if self.kind == "locked":
            async with self.writer.writing():
                applied: list[Change] = self.writer.apply(batch, changes=changes)
        else:
            applied = self.writer.apply(batch, changes=changes)
        if batch:
            self.published.append(self.reader.seq)
        return applied

    def snapshot(self) -> Snapshot:
        snap: Snapshot = self.reader.snapshot()
        return snap

    def read(self) -> Any:
        """``async with store.read() as view``: the baseline's read lock, or a snapshot."""
        if self.kind == "locked":
            return self.reader.read()
        return contextlib.nullcontext(self.reader.snapshot())

    @property
    def indexers(self) -> list[str]:
        names: list[str] = self.reader.indexers
        return names

    @property
    def index_errors(self) -> int:
        errors: int = self.reader.index_errors
        return errors

    async def add_indexer(self, name: str, fn: IndexFunc, **options: Any) -> None:
        before = self.reader.seq
        await self.writer.add_indexer(name, fn, **options)
        if self.reader.seq != before:
            self.published.append(self.reader.seq)


# -- waiting --------------------------------------------------------------------------------


class FakeClock:
    """A clock that moves only when told: ``clock()`` is ``clock.now``."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds``; returns the new time."""
        self.now += seconds
        return self.now


class FixedLimiter:
    """A rate limiter that always answers ``delay`` and records what it was asked;
    ``num_requeues`` is ``requeues`` if given, else how often ``when`` was asked."""

    def __init__(self, delay: float = 0.0, requeues: int | None = None) -> None:
        self.delay = delay
        self.requeues = requeues
        self.asked: list[Hashable] = []
        self.forgotten: list[Hashable] = []

    def when(self, item: Hashable) -> float:
        self.asked.append(item)
        return self.delay

    def forget(self, item: Hashable) -> None:
        self.forgotten.append(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.asked.count(item) if self.requeues is None else self.requeues


class Sleeps:
    """An injectable ``sleep``: records each delay and returns once the test releases it
    (:meth:`release`), so a test can assert the exact delays and order the retries."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self._released = 0
        self._wake = asyncio.Event()

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        mine = len(self.delays)
        while self._released < mine:
            self._wake.clear()
            await self._wake.wait()

    def release(self, n: int = 1) -> None:
        """Let ``n`` more sleeps (past or future) return."""
        self._released += n
        self._wake.set()

    def release_all(self) -> None:
        """Let every sleep return at once, from now on."""
        self.release(10**9)


# -- servers that are not KubeSim -----------------------------------------------------------


@contextlib.asynccontextmanager
async def fake_server(handler: Callable[[web.Request], Any]) -> AsyncIterator[str]:
    """An HTTP server on 127.0.0.1 (a free port) answering every request with
    ``handler``: a proxy, a login page, a server that misbehaves. Yields its URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def html_server(status: int, content_type: str) -> contextlib.AbstractAsyncContextManager[str]:
    """A server that answers everything with an HTML page (a proxy, a login page), with
    ``Retry-After: 7``."""

    async def handle(request: web.Request) -> web.Response:
        page = "<html><body><h1>Bad Gateway</h1>\n<p>upstream down</p></body></html>"
        return web.Response(
            status=status, text=page, content_type=content_type, headers={"Retry-After": "7"}
        )

    return fake_server(handle)


def api_client_for(url: str) -> Any:
    """A kubernetes_asyncio ApiClient for ``url`` (no credentials): use ``async with``."""
    from kubernetes_asyncio import client

    cfg = client.Configuration()
    cfg.host = url
    return client.ApiClient(configuration=cfg)


# -- the watcher harness ------------------------------------------------------------------------


class ModelFifo:
    """A FIFO sink that records every item and applies it to ``{key: rv}``."""

    def __init__(self) -> None:
        self.items: list[Delta] = []
        self.state: dict[str, str] = {}
        self.objects: dict[str, KubeObject] = {}

    def put_nowait(self, item: Delta) -> None:
        self.items.append(item)
        if isinstance(item, Replace):
            self.objects = {o.key: o for o in item.objects}
            self.state = {o.key: str(o.rv) for o in item.objects}
        elif isinstance(item, ObjectDelta):
            if item.type is ChangeType.DELETED:
                self.state.pop(item.obj.key, None)
                self.objects.pop(item.obj.key, None)
            else:
                self.state[item.obj.key] = str(item.obj.rv)
                self.objects[item.obj.key] = item.obj

    def put_many(self, items: Sequence[Delta]) -> None:
        for item in items:
            self.put_nowait(item)

    def of(self, cls: type[Any]) -> list[Any]:
        return [i for i in self.items if isinstance(i, cls)]


class CountingListWatch(ListWatch):
    """ListWatch that records its list pages and can run a hook before each one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pages: list[str | None] = []
        self.before_page: Callable[[str | None], None] | None = None

    async def list_page(
        self, resource_version: str, limit: int, continue_: str | None
    ) -> tuple[list[KubeObject], str, str | None]:
        self.pages.append(continue_)
        if self.before_page is not None:
            self.before_page(continue_)
        return await super().list_page(resource_version, limit, continue_)


def make_watcher(
    api: Any,
    sink: Any,
    group_version: str = "v1",
    plural: str = "pods",
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    metadata_only: bool = False,
    max_line_bytes: int = 16 * 1024 * 1024,
    **options: Any,
) -> Watcher:
    """A Watcher over a :class:`CountingListWatch`: WatchOptions fields among ``options``
    go to its options (watch timeouts of 2-3 s by default), the rest to the Watcher (a
    fast, jitter-free backoff by default)."""
    lw = CountingListWatch(
        api,
        group_version,
        plural,
        namespace=namespace,
        label_selector=label_selector,
        field_selector=field_selector,
        metadata_only=metadata_only,
        max_line_bytes=max_line_bytes,
    )
    options.setdefault("min_watch_timeout", 2)
    options.setdefault("max_watch_timeout", 3)
    fields = {k: options.pop(k) for k in list(options) if k in WatchOptions.__dataclass_fields__}
    options.setdefault("backoff", Backoff(initial=0.02, maximum=0.2, jitter=0.0))
    return Watcher(lw, sink, options=WatchOptions(**fields), **options)


@contextlib.asynccontextmanager
async def running(watcher: Watcher) -> AsyncIterator[asyncio.Task[None]]:
    """Run the watcher in a task; stop it (run() returns normally) on exit."""
    task = asyncio.create_task(watcher.run())
    try:
        yield task
    finally:
        watcher.stop()
        await task


def watch_options() -> WatchOptions:
    """Informer watch options for the integration tests: short watches, a fast backoff
    without jitter (0.05 s doubling), so retries are quick and their delays exact."""
    return WatchOptions(
        min_watch_timeout=2.0,
        max_watch_timeout=4.0,
        backoff_initial=0.05,
        backoff_maximum=10.0,
        backoff_jitter=0.0,
    )


# -- docstrings -------------------------------------------------------------------------------


def attribute_docstrings(body: Sequence[ast.stmt]) -> set[str]:
    """The names assigned in ``body`` (a module's or a class's statements) right before a
    string: the attribute docstrings griffe reads (how fields, type aliases and constants
    are documented)."""
    found: set[str] = set()
    for stmt, after in itertools.pairwise(body):
        is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        if not is_doc or not isinstance(after.value.value, str):  # type: ignore[attr-defined]
            continue
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            found.add(stmt.target.id)
        elif isinstance(stmt, ast.Assign):
            found.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return found


# -- the command line -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CliResult:
    """How a command ended: its exit status and what it wrote."""

    code: int
    out: str
    err: str


async def run_python(
    *argv: str, columns: int | None = None, env: dict[str, str] | None = None, timeout: float = 60
) -> CliResult:
    """Run ``python ARGV`` to its end (``COLUMNS=columns`` when given; killed, and the test
    failed, after ``timeout`` seconds)."""
    environ = {**os.environ, **(env or {})}
    if columns is not None:
        environ["COLUMNS"] = str(columns)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environ,
        cwd=REPO,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return CliResult(proc.returncode, out.decode(), err.decode())


async def run_cli(
    *args: str, columns: int | None = None, env: dict[str, str] | None = None, timeout: float = 60
) -> CliResult:
    """Run ``python -m aioinformer ARGS`` to its end, as :func:`run_python` does."""
    return await run_python("-m", "aioinformer", *args, columns=columns, env=env, timeout=timeout)


def rules_of(docs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The (verb, group, resource) grants of the ClusterRole and Roles, as KubeSim takes
    them (KubeSim's rules hold in every namespace: the Role's are not narrowed)."""
    return [
        (verb, group, resource)
        for d in docs
        if d["kind"] in ("ClusterRole", "Role")
        for rule in d["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    ]


LINUX_SCHEDULING = pytest.mark.skipif(
    not hasattr(os, "sched_setscheduler"),
    reason="scheduling policies (SCHED_RR) are Linux's; this platform's os module has none",
)
"""For the tests of ``pipeline_priority``: they set and read threads' policies."""


def kernel_grants_rr() -> bool:
    """Whether this process may put a thread under SCHED_RR (CAP_SYS_NICE or RLIMIT_RTPRIO)."""
    probe: list[bool] = []

    def main() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_RR | os.SCHED_RESET_ON_FORK, os.sched_param(1))
        except OSError:
            probe.append(False)
        else:
            probe.append(True)

    thread = threading.Thread(target=main)
    thread.start()
    thread.join()
    return probe[0]


def policy_of(tid: int) -> int:
    """The scheduling policy of thread ``tid`` (0: the calling one), without the
    ``SCHED_RESET_ON_FORK`` flag the kernel reports with it."""
    return os.sched_getscheduler(tid) & ~os.SCHED_RESET_ON_FORK

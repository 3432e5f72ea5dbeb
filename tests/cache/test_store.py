"""The snapshot store and the lock-based baseline against a plain-dict model, plus
isolation properties: both through the store interface (``open_store``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from unittest import mock

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer._cache import buckets as _buckets
from aioinformer._cache.deltas import Bookmark, Change, Delta, DeltaType, Item, Replace
from aioinformer._cache.fifo import RealFIFO
from aioinformer._cache.index import IndexFunc, by_controller_uid, by_field, by_label, by_namespace
from aioinformer._cache.locked_store import LockedView, LockedWriter
from aioinformer._cache.snapshot_store import Snapshot
from aioinformer._cache.store import StoreKind, StoreView, open_store
from aioinformer._core.errors import ClosedError, ConfigError
from aioinformer._core.objects import KubeObject, decode_object

STORES: list[StoreKind] = ["snapshot", "locked"]
EXTRA: dict[str, IndexFunc] = {"app": by_label("app"), "node": by_field("spec.nodeName")}


class Store:
    """A store's reader/writer pair, with the informer's way of applying a batch
    (``async with writer.writing(): writer.apply(batch)``) as one call, and the seq of
    every publish noted in ``published``."""

    def __init__(self, kind: StoreKind, indexers: dict[str, IndexFunc] | None = None) -> None:
        self.kind = kind
        self.reader, self.writer = open_store(kind, indexers)
        self.published: list[int] = []

    async def apply(self, batch: Sequence[Item], changes: bool = True) -> list[Change]:
        async with self.writer.writing():
            applied = self.writer.apply(batch, changes=changes)
        if batch:
            self.published.append(self.reader.seq)
        return applied

    def snapshot(self) -> Snapshot:
        return self.reader.snapshot()

    def read(self) -> Any:
        return self.reader.read()

    @property
    def indexers(self) -> list[str]:
        return self.reader.indexers

    @property
    def index_errors(self) -> int:
        return self.reader.index_errors

    async def add_indexer(self, name: str, fn: IndexFunc, **options: Any) -> None:
        before = self.reader.seq
        await self.writer.add_indexer(name, fn, **options)
        if self.reader.seq != before:
            self.published.append(self.reader.seq)


def pod(
    name: str,
    ns: str = "default",
    rv: int = 1,
    *,
    app: str | None = None,
    owner: str | None = None,
    node: str | None = None,
) -> KubeObject:
    """A small pod; ``ns=""`` makes it cluster-scoped (key "name")."""
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(rv), "uid": f"u-{ns}-{name}"}
    if ns:
        meta["namespace"] = ns
    if app is not None:
        meta["labels"] = {"app": app}
    if owner is not None:
        ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": owner, "uid": owner}
        meta["ownerReferences"] = [{**ref, "controller": True}]
    spec = {} if node is None else {"nodeName": node}
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    return decode_object(orjson.dumps(doc))


def delta(kind: DeltaType, obj: KubeObject) -> Delta:
    return Delta(kind, obj, time.monotonic())


def upsert(obj: KubeObject) -> Delta:
    return delta(DeltaType.UPDATED, obj)


async def view_of(store: Store) -> StoreView:
    """The current view of either store (the baseline's is read under its lock)."""
    async with store.read() as view:
        return view


# ---- the model ----------------------------------------------------------------------------

Expected = list[tuple[DeltaType, KubeObject, KubeObject | None]]


def model_apply(
    model: dict[str, KubeObject], rv: int, batch: list[Item]
) -> tuple[list[Expected], int]:
    """Reference semantics, written plainly; returns one group of changes per item."""
    groups: list[Expected] = []
    for item in batch:
        group: Expected = []
        if isinstance(item, Delta):
            obj = item.obj
            rv = obj.rv  # the store's RV is its last item's
            old = model.get(obj.key)
            if item.type is DeltaType.DELETED:
                if old is not None:
                    del model[obj.key]
                    group.append((DeltaType.DELETED, obj, old))
            else:
                model[obj.key] = obj
                group.append((DeltaType.ADDED if old is None else DeltaType.UPDATED, obj, old))
        elif isinstance(item, Replace):
            rv = item.resource_version
            fresh = {o.key: o for o in item.objects}
            tombstones = sorted(k for k in model if k not in fresh)
            for key, obj in fresh.items():
                old = model.get(key)
                if old is None:
                    group.append((DeltaType.ADDED, obj, None))
                elif old.rv != obj.rv:
                    group.append((DeltaType.UPDATED, obj, old))
                else:
                    fresh[key] = old  # unchanged: the store keeps what it has
            group += [(DeltaType.DELETED, model[k], model[k]) for k in tombstones]
            model.clear()
            model.update(fresh)
        else:
            rv = item.resource_version
        groups.append(group)
    return groups, rv


def check_changes(actual: list[Change], groups: list[Expected]) -> None:
    """Exact order and identity, except that a relist's tombstones (``obj is old``) may
    come in any order."""

    def split(
        changes: Sequence[tuple[DeltaType, KubeObject, KubeObject | None]],
    ) -> tuple[list[tuple[DeltaType, int, int]], list[tuple[str, int]]]:
        deleted = DeltaType.DELETED
        tombstones = sorted((o.key, id(o)) for t, o, old in changes if t == deleted and o is old)
        rest = [(t, id(o), id(old)) for t, o, old in changes if not (t == deleted and o is old)]
        return rest, tombstones

    i = 0
    for group in groups:
        got = [(c.type, c.obj, c.old) for c in actual[i : i + len(group)]]
        i += len(group)
        assert split(got) == split(group)
    assert i == len(actual)


def brute_index(model: dict[str, KubeObject], fn: IndexFunc) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for key, obj in model.items():
        for value in fn(obj):
            out.setdefault(value, set()).add(key)
    return out


def check_view(
    view: StoreView, model: dict[str, KubeObject], indexers: dict[str, IndexFunc]
) -> None:
    assert len(view) == len(model)
    assert sorted(view.keys()) == sorted(model)
    for key, obj in model.items():
        assert view.get(key) is obj
        assert key in view
    assert "nope/nope" not in view and view.get("nope/nope") is None
    assert {id(o) for o in view.list()} == {id(o) for o in model.values()}
    for ns in ("a", "b", "empty"):
        assert {o.key for o in view.list(ns)} == {k for k, o in model.items() if o.namespace == ns}
    for name, fn in indexers.items():
        expected = brute_index(model, fn)
        assert set(view.index_values(name)) == set(expected), name
        for value, keys in expected.items():
            assert {o.key for o in view.by_index(name, value)} == keys, (name, value)
        assert view.by_index(name, "no-such-value") == []


# ---- generation: a history of FIFO items, drawn against a projected model -----------------

KEYS = [("a", "p0"), ("a", "p1"), ("a", "p2"), ("b", "p0"), ("b", "p1"), ("", "c0")]
versions = st.tuples(
    st.sampled_from([None, "x", "y", ""]),  # app label
    st.sampled_from([None, "u1", "u2"]),  # controller uid
    st.sampled_from([None, "", "n1", "n2"]),  # spec.nodeName
)


def draw_history(data: st.DataObject) -> list[Item]:
    projected: dict[str, KubeObject] = {}
    counter = iter(range(1, 10_000))
    items: list[Item] = []
    now = time.monotonic()

    def fresh(ns: str, name: str) -> KubeObject:
        app, owner, node = data.draw(versions)
        return pod(name, ns, next(counter), app=app, owner=owner, node=node)

    for _ in range(data.draw(st.integers(1, 25))):
        step = data.draw(st.sampled_from(["delta", "delta", "delta", "replace", "bookmark"]))
        if step == "delta":
            ns, name = data.draw(st.sampled_from(KEYS))
            kind = data.draw(st.sampled_from(list(DeltaType)))
            obj = fresh(ns, name)
            items.append(Delta(kind, obj, now))
            if kind is DeltaType.DELETED:
                projected.pop(obj.key, None)
            else:
                projected[obj.key] = obj
        elif step == "replace":
            chosen = data.draw(st.lists(st.sampled_from(KEYS), unique=True))
            objs = []
            for ns, name in chosen:
                key = f"{ns}/{name}" if ns else name
                keep = key in projected and data.draw(st.booleans())
                objs.append(projected[key] if keep else fresh(ns, name))
            projected = {o.key: o for o in objs}
            items.append(Replace(objs, next(counter), now))
        else:
            items.append(Bookmark(next(counter), now))
    return items


@pytest.mark.parametrize(
    ("kind", "tiny_buckets"),
    [("snapshot", False), ("snapshot", True), ("locked", False)],
    ids=["snapshot", "snapshot-tiny-buckets", "locked"],
)
@settings(max_examples=75, deadline=None)
@given(data=st.data())
def test_fifo_and_store_match_the_model(
    kind: StoreKind, tiny_buckets: bool, data: st.DataObject
) -> None:
    """With ``tiny_buckets`` index buckets switch between dict and HAMT at 2 and 1 keys
    (rather than 128 and 64), so the few keys drawn here cross both ways."""
    if tiny_buckets:
        with mock.patch.multiple(_buckets, SMALL=2, SHRINK=1):
            run_model_history(kind, data)
    else:
        run_model_history(kind, data)


def run_model_history(kind: StoreKind, data: st.DataObject) -> None:
    history = draw_history(data)
    max_items = data.draw(st.lists(st.integers(1, 8), min_size=1, max_size=4))

    async def scenario() -> None:
        fifo = RealFIFO()
        store = Store(kind, EXTRA)
        indexers = {"namespace": by_namespace, **EXTRA, "controller": by_controller_uid}
        assert sorted(store.indexers) == sorted(indexers)
        for item in history:
            await fifo.put(item)
        fifo.close()
        model: dict[str, KubeObject] = {}
        rv, seq = 0, 0
        kept: list[tuple[Snapshot, dict[str, KubeObject], int, int]] = []
        i = 0
        while True:
            try:
                batch = await fifo.pop_batch(max_items[i % len(max_items)])
            except ClosedError:
                break
            i += 1
            changes = await store.apply(batch)
            groups, rv = model_apply(model, rv, batch)
            seq += 1
            check_changes(changes, groups)
            view = await view_of(store)
            assert (view.resource_version, view.seq) == (rv, seq)
            check_view(view, model, indexers)
            del view  # a snapshot nobody holds: the next batch may write in place
            if store.reader.supports_snapshots and data.draw(st.booleans()):
                kept.append((store.snapshot(), dict(model), rv, seq))
        for snap, state, snap_rv, snap_seq in kept:  # held snapshots never changed
            assert (snap.resource_version, snap.seq) == (snap_rv, snap_seq)
            check_view(snap, state, indexers)

    asyncio.run(scenario())


# ---- API edges ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", STORES)
async def test_edges(kind: StoreKind) -> None:
    store = Store(kind)
    assert await store.apply([]) == [] and store.reader.seq == 0  # nothing published
    changes = await store.apply([upsert(pod("p", rv=3)), delta(DeltaType.DELETED, pod("q", rv=9))])
    assert [c.type for c in changes] == [DeltaType.ADDED]  # an unknown key's deletion: no change
    assert (store.reader.seq, store.reader.resource_version) == (1, 9)  # ...but its RV counts
    await store.apply([Bookmark(4, 0.0)])
    # the store follows its last item, even backwards (only a relist brings that about)
    assert (store.reader.seq, store.reader.resource_version, len(store.reader)) == (2, 4, 1)
    view = await view_of(store)
    with pytest.raises(ConfigError, match="known indexes: controller, namespace"):
        view.by_index("nodes", "n1")
    with pytest.raises(ConfigError, match="known indexes"):
        view.index_values("nodes")
    with pytest.raises(ConfigError, match="built in"):
        Store(kind, {"namespace": by_label("ns")})
    with pytest.raises(ConfigError, match="already exists"):
        await store.add_indexer("controller", by_label("x"))
    with pytest.raises(ConfigError, match="store must be one of"):
        open_store("fast")  # type: ignore[arg-type]


async def test_batches_write_in_place_unless_someone_holds_the_snapshot() -> None:
    """Nobody holding the current snapshot, a batch reuses its map's containers (no leaf
    copied); a held snapshot (a reader across awaits, an iterator of it) makes the next
    batch copy what it changes, and what the holder sees never changes."""
    store = Store("snapshot")
    await store.apply([upsert(pod(f"p{i}", rv=i + 1)) for i in range(200)])
    in_place = store.writer.in_place_batches

    def containers() -> set[int]:
        objects = store.snapshot()._objects
        return {id(objects._dir)} | {id(leaf) for mid in objects._dir for leaf in mid}

    before = containers()
    await store.apply([upsert(pod(f"p{i}", rv=1000 + i)) for i in range(0, 200, 7)])
    assert containers() == before  # every leaf and the directory written in place
    assert store.writer.in_place_batches == in_place + 1

    held = store.snapshot()
    await store.apply([upsert(pod("p3", rv=2000)), upsert(pod("new", rv=2001))])
    assert held.get("default/p3").rv == 4 and "default/new" not in held and len(held) == 200
    assert store.snapshot().get("default/p3").rv == 2000 and len(store.snapshot()) == 201
    assert containers() != before
    assert store.writer.in_place_batches == in_place + 1  # that batch copied
    del held

    chunks = store.snapshot().iter_chunks(chunk=50)  # an iterator holds the snapshot
    first = [await anext(chunks) for _ in range(60)]
    await store.apply([delta(DeltaType.DELETED, pod(f"p{i}")) for i in range(200)])
    rest = [obj async for obj in chunks]
    assert len({o.key for o in first + rest}) == 201  # the whole snapshot, as it was
    assert store.snapshot().keys() == ["default/new"]


async def test_a_batch_interrupted_while_writing_in_place_publishes_a_consistent_state() -> None:
    """A BaseException half-way through an in-place batch (KeyboardInterrupt, MemoryError)
    cannot be undone: what the batch changed is published with every index rebuilt from
    the objects, so the store stays consistent, and the exception propagates."""

    class Interrupt(BaseException):
        pass

    interrupts = [2]  # the batch, then the rebuild

    def touchy(obj: KubeObject) -> list[str]:
        if obj.labels.get("app") == "boom" and interrupts[0]:
            interrupts[0] -= 1
            raise Interrupt
        return [obj.labels.get("app", "")]

    store = Store("snapshot", {"app": touchy})
    await store.apply([upsert(pod("a", rv=1, app="x")), upsert(pod("b", rv=2, app="x"))])
    seq = store.snapshot().seq
    with pytest.raises(Interrupt):
        await store.apply([upsert(pod("a", rv=3, app="y")), upsert(pod("c", rv=4, app="boom"))])
    snap = store.snapshot()
    assert snap.seq == seq + 1 and snap.resource_version == 2  # the RV is not advanced
    model = {o.key: o for o in snap.list()}
    assert sorted(model) == ["default/a", "default/b", "default/c"] and len(snap) == 3
    assert model["default/a"].rv == 3
    assert {o.key for o in snap.by_index("app", "y")} == {"default/a"}
    assert {o.key for o in snap.by_index("app", "x")} == {"default/b"}
    assert "boom" not in snap.index_values("app") and store.index_errors == 1
    assert sorted(snap.index_values("namespace")) == ["default"]
    assert {o.key for o in snap.by_index("namespace", "default")} == set(model)
    await store.apply([upsert(pod("c", rv=5, app="z"))])  # the writer goes on
    assert {o.key for o in store.snapshot().by_index("app", "z")} == {"default/c"}
    assert "boom" not in store.snapshot().index_values("app")


@pytest.mark.parametrize("held", [False, True], ids=["in-place", "copying"])
@pytest.mark.parametrize("bad", [object(), Delta(DeltaType.ADDED, None, 0.0), Replace([1], 1, 0.0)])  # type: ignore[arg-type,list-item]
async def test_a_malformed_item_fails_the_batch_before_it_changes_anything(
    bad: Any, held: bool
) -> None:
    store = Store("snapshot")
    await store.apply([upsert(pod("ok", rv=1))])
    holder = [store.snapshot()] if held else []  # not held: the batch would write in place
    seq = store.snapshot().seq
    with pytest.raises(TypeError, match="not a"):
        await store.apply([upsert(pod("ok", rv=2)), upsert(pod("ok2", rv=3)), bad])
    snap = store.snapshot()
    assert snap.seq == seq and snap.keys() == ["default/ok"] and snap.get("default/ok").rv == 1
    assert all(h is snap for h in holder)


@pytest.mark.parametrize("bad", [object(), Delta(DeltaType.ADDED, None, 0.0), Replace([1], 1, 0.0)])  # type: ignore[arg-type,list-item]
async def test_the_locked_store_also_checks_a_batch_before_it_changes_anything(bad: Any) -> None:
    store = Store("locked")
    await store.apply([upsert(pod("ok", rv=1))])
    with pytest.raises(TypeError, match="not a"):
        await store.apply([upsert(pod("ok", rv=2)), upsert(pod("ok2", rv=3)), bad])
    async with store.read() as view:
        assert view.seq == 1 and view.keys() == ["default/ok"]
        assert view.get("default/ok").rv == 1  # type: ignore[union-attr]


async def test_a_failing_batch_publishes_nothing() -> None:
    store = Store("snapshot")
    await store.apply([upsert(pod("ok", rv=1))])
    before = store.snapshot()
    with pytest.raises(TypeError, match="not a store item"):
        await store.apply([upsert(pod("ok2", rv=2)), object()])  # type: ignore[list-item]
    assert store.snapshot() is before and before.keys() == ["default/ok"]
    await store.apply([upsert(pod("ok2", rv=4))])
    assert sorted(store.snapshot().keys()) == ["default/ok", "default/ok2"]
    assert store.snapshot().seq == before.seq + 1


@pytest.mark.parametrize("kind", ["snapshot", "locked"])
async def test_an_index_function_that_raises_leaves_the_object_out_of_that_index(
    kind: StoreKind, caplog: pytest.LogCaptureFixture
) -> None:
    """The writer goes on: the object is stored, found by get/list and by the other
    indexes, left out of the failing one; each failure is counted and logged with the
    index name and the key. A later version the function accepts is indexed again."""

    def picky(obj: KubeObject) -> list[str]:
        if obj.labels.get("app") == "bad":
            raise ValueError("index function bug")
        return [obj.name]

    def lazy(obj: KubeObject) -> Iterator[str]:  # a generator failing half-way
        yield obj.name
        if obj.labels.get("app") == "bad":
            raise RuntimeError("half-way")

    store = Store(kind, {"picky": picky})
    await store.apply([upsert(pod("ok", rv=1)), upsert(pod("bad", rv=2, app="bad"))])
    await store.add_indexer("lazy", lazy)
    async with store.read() as view:
        assert sorted(view.keys()) == ["default/bad", "default/ok"]
        assert view.get("default/bad") is not None and len(view.list("default")) == 2
        assert view.index_values("picky") == ["ok"] and view.index_values("lazy") == ["ok"]
    assert store.index_errors == 2
    msg = next(r.getMessage() for r in caplog.records if "index 'picky'" in r.getMessage())
    assert "default/bad" in msg and "index function bug" in msg and "[1 so far]" in msg
    await store.apply([upsert(pod("bad", rv=3))])  # fixed: no longer labelled "bad"
    async with store.read() as view:
        assert sorted(view.index_values("picky")) == ["bad", "ok"]
        assert sorted(view.index_values("lazy")) == ["bad", "ok"]
    assert store.index_errors == 4  # the old version is asked again, for values to drop


async def test_locked_store_has_no_snapshots() -> None:
    with pytest.raises(ConfigError, match=r"async with informer\.read\(\)"):
        Store("locked").snapshot()


async def test_snapshot_read_takes_no_lock_and_is_the_snapshot() -> None:
    store = Store("snapshot")
    await store.apply([upsert(pod("p"))])
    async with store.read() as reader:
        assert reader is store.snapshot()


# ---- isolation ---------------------------------------------------------------------------


async def test_iter_chunks_across_awaits_sees_exactly_its_snapshot() -> None:
    store = Store("snapshot")
    await store.apply(
        [Replace([pod(f"p{i}", "a" if i % 2 else "b", i + 1) for i in range(3000)], 3000, 0.0)]
    )
    snap = store.snapshot()
    expected_all = {id(o) for o in snap.list()}
    expected_a = {id(o) for o in snap.list("a")}

    async def writer() -> None:
        for i in range(0, 3000, 7):
            await store.apply(
                [
                    delta(DeltaType.DELETED, pod(f"p{i}", "a" if i % 2 else "b", 5000 + i)),
                    upsert(pod(f"new{i}", "a", 5000 + i)),
                    upsert(pod(f"p{i + 1}", "a" if (i + 1) % 2 else "b", 5000 + i, app="changed")),
                ]
            )
            await asyncio.sleep(0)

    task = asyncio.create_task(writer())
    got_all = [id(o) async for o in snap.iter_chunks(chunk=50)]
    got_a = [id(o) async for o in snap.iter_chunks("a", chunk=50)]
    await task
    assert store.snapshot().seq > snap.seq + 1  # the writer really ran meanwhile
    assert len(got_all) == len(expected_all) and set(got_all) == expected_all
    assert len(got_a) == len(expected_a) and set(got_a) == expected_a
    with pytest.raises(ConfigError):
        [o async for o in snap.iter_chunks(chunk=0)]


def cheap_pods(n: int, rv0: int = 1) -> list[KubeObject]:
    """n distinct pods sharing one decoded metadata (only key and rv differ): cheap to build."""
    base = pod("base", "default", rv0, owner="sts-1")
    replace = msgspec.structs.replace
    return [replace(base, key=f"default/p{i}", rv=rv0 + i) for i in range(n)]


async def _iterate_while_writing(store: Store, n: int, chunk: int) -> tuple[int, list[int], int]:
    """A reader scans all n objects (yielding every chunk) while a writer applies one-update
    batches. Returns (objects read, the publish seqs seen during the scan, seq before)."""
    objects = cheap_pods(n)
    await store.apply([Replace(objects, n, 0.0)])
    published = store.published
    done = asyncio.Event()

    async def writer() -> None:
        i = 0
        while not done.is_set():
            await store.apply([upsert(msgspec.structs.replace(objects[i % n], rv=10 * n + i))])
            i += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(writer())
    await asyncio.sleep(0)
    async with store.read() as view:
        seq_before, start, read = view.seq, len(published), 0
        async for _ in view.iter_chunks(chunk=chunk):
            read += 1
        during = published[start:]
    done.set()
    await task
    return read, during, seq_before


async def test_reader_scanning_200k_snapshot_never_stops_the_writer() -> None:
    store = Store("snapshot")
    n, chunk = 200_000, 1000
    read, during, seq_before = await _iterate_while_writing(store, n, chunk)
    assert read == n
    # The writer published while the scan was in progress: about one batch per chunk,
    # each exactly one seq after the previous.
    assert len(during) >= n // chunk // 2
    assert during == list(range(seq_before + 1, seq_before + 1 + len(during)))


async def test_locked_store_reader_stalls_the_writer_for_the_whole_scan() -> None:
    store = Store("locked")
    read, during, _ = await _iterate_while_writing(store, 20_000, 1000)
    assert read == 20_000
    assert during == []  # nothing published until the read lock was released


async def test_locked_store_read_blocks_apply() -> None:
    store = Store("locked")
    order: list[str] = []
    release = asyncio.Event()
    entered = asyncio.Event()

    async def reader() -> None:
        async with store.read() as view:
            order.append(f"read seq={view.seq}")
            entered.set()
            await release.wait()
            order.append(f"read done seq={view.seq}")

    async def writer() -> None:
        await store.apply([upsert(pod("p"))])
        order.append("applied")

    r = asyncio.create_task(reader())
    await entered.wait()
    w = asyncio.create_task(writer())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not w.done() and order == ["read seq=0"]
    release.set()
    await asyncio.gather(r, w)
    assert order == ["read seq=0", "read done seq=0", "applied"]
    async with store.read() as view:
        assert isinstance(view, LockedView) and view.seq == 1 and len(view) == 1


# ---- add_indexer --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", STORES)
async def test_add_indexer_while_batches_keep_arriving(kind: StoreKind) -> None:
    store = Store(kind)
    n = 3000
    model = {o.key: o for o in (pod(f"p{i}", "a", i + 1, app=f"v{i % 5}") for i in range(n))}
    await store.apply([Replace(list(model.values()), n, 0.0)])
    published = store.published
    stop = asyncio.Event()
    rv = iter(range(10 * n, 100 * n))

    async def writer() -> None:
        i = 0
        while not stop.is_set() or i < 30:
            k = (i * 37) % n
            batch: list[Item] = [upsert(pod(f"p{k}", "a", next(rv), app=f"v{i % 7}"))]
            if i % 3 == 0:
                batch.append(delta(DeltaType.DELETED, pod(f"p{(k + 1) % n}", "a", next(rv))))
            if i % 4 == 0:
                batch.append(upsert(pod(f"extra{i}", "a", next(rv), app="v9")))
            await store.apply(batch)
            model_apply(model, 0, batch)
            i += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(writer())
    await asyncio.sleep(0)
    before = len(published)
    if kind == "snapshot":
        await store.add_indexer("app", by_label("app"), chunk=100)
        assert len(published) - before > 5  # batches were applied during the build
    else:
        await store.add_indexer("app", by_label("app"))
    stop.set()
    await task
    assert "app" in store.indexers
    check_view(await view_of(store), model, {"app": by_label("app"), "namespace": by_namespace})


async def test_add_indexer_rejects_a_name_being_built() -> None:
    store = Store("snapshot")
    await store.apply([Replace(cheap_pods(5000), 5000, 0.0)])
    first = asyncio.create_task(store.add_indexer("x", by_label("x"), chunk=10))
    await asyncio.sleep(0)
    with pytest.raises(ConfigError, match="already exists"):
        await store.add_indexer("x", by_label("x"))
    seq = store.snapshot().seq
    await first
    assert store.snapshot().seq == seq + 1
    assert store.snapshot().index_values("x") == []


def test_conformance() -> None:
    """Snapshot and LockedView both provide the reader API (also checked by mypy)."""
    readers: list[Callable[[], StoreView]] = [
        lambda: open_store("snapshot")[0].snapshot(),
        lambda: LockedView(LockedWriter()),
    ]
    for make in readers:
        view = make()
        assert (len(view), view.seq, view.resource_version, view.keys()) == (0, 0, 0, [])

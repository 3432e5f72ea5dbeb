"""Both stores behind one reader/writer API (the library's snapshot store and the harness's
lock-based baseline, through ``tests.support.Store``): against a plain-dict model, the edges
of the API, index functions that fail, add_indexer under load, and what a reader held
across awaits does to the writer. Each kind's own contract: test_snapshot_store.py and
tests/harness/test_locked_store.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from unittest import mock

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer._cache import buckets as _buckets
from aioinformer._cache.deltas import Bookmark, Change, ChangeType, Delta, ObjectDelta, Replace
from aioinformer._cache.fifo import RealFIFO
from aioinformer._cache.index import IndexFunc, by_controller_uid, by_field, by_label, by_namespace
from aioinformer._cache.snapshot_store import Snapshot, snapshot_store
from aioinformer._core.errors import ClosedError, ConfigError
from aioinformer._core.objects import KubeObject
from aioinformer._harness.locked_store import LockedView, LockedWriter
from tests.support import STORE_KINDS, Store, StoreKind, delta, many_pods, pod_object, upsert

EXTRA: dict[str, IndexFunc] = {"app": by_label("app"), "node": by_field("spec.nodeName")}


View = Snapshot | LockedView
"""What either store's reader gives: the same reader API."""


async def view_of(store: Store) -> View:
    """The current view of either store (the baseline's is read under its lock)."""
    async with store.read() as view:
        return view


# ---- the model ----------------------------------------------------------------------------

Expected = list[tuple[ChangeType, KubeObject, KubeObject | None]]


def model_apply(
    model: dict[str, KubeObject], rv: int, batch: list[Delta]
) -> tuple[list[Expected], int]:
    """Reference semantics, written plainly; returns one group of changes per item."""
    groups: list[Expected] = []
    for item in batch:
        group: Expected = []
        if isinstance(item, ObjectDelta):
            obj = item.obj
            rv = obj.rv  # the store's RV is its last item's
            old = model.get(obj.key)
            if item.type is ChangeType.DELETED:
                if old is not None:
                    del model[obj.key]
                    group.append((ChangeType.DELETED, obj, old))
            else:
                model[obj.key] = obj
                group.append((ChangeType.ADDED if old is None else ChangeType.UPDATED, obj, old))
        elif isinstance(item, Replace):
            rv = item.resource_version
            fresh = {o.key: o for o in item.objects}
            tombstones = sorted(k for k in model if k not in fresh)
            for key, obj in fresh.items():
                old = model.get(key)
                if old is None:
                    group.append((ChangeType.ADDED, obj, None))
                elif old.rv != obj.rv:
                    group.append((ChangeType.UPDATED, obj, old))
                else:
                    fresh[key] = old  # unchanged: the store keeps what it has
            group += [(ChangeType.DELETED, model[k], model[k]) for k in tombstones]
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
        changes: Sequence[tuple[ChangeType, KubeObject, KubeObject | None]],
    ) -> tuple[list[tuple[ChangeType, int, int]], list[tuple[str, int]]]:
        deleted = ChangeType.DELETED
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


def check_view(view: View, model: dict[str, KubeObject], indexers: dict[str, IndexFunc]) -> None:
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


def draw_history(data: st.DataObject) -> list[Delta]:
    projected: dict[str, KubeObject] = {}
    counter = iter(range(1, 10_000))
    items: list[Delta] = []
    now = 0.0  # receive times: no one measures lag here

    def fresh(ns: str, name: str) -> KubeObject:
        app, owner, node = data.draw(versions)
        return pod_object(name, ns, next(counter), app=app, owner=owner, node=node)

    for _ in range(data.draw(st.integers(1, 25))):
        step = data.draw(st.sampled_from(["delta", "delta", "delta", "replace", "bookmark"]))
        if step == "delta":
            ns, name = data.draw(st.sampled_from(KEYS))
            kind = data.draw(st.sampled_from(list(ChangeType)))
            obj = fresh(ns, name)
            items.append(ObjectDelta(kind, obj, now))
            if kind is ChangeType.DELETED:
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
            if kind == "snapshot" and data.draw(st.booleans()):
                kept.append((store.snapshot(), dict(model), rv, seq))
        for snap, state, snap_rv, snap_seq in kept:  # held snapshots never changed
            assert (snap.resource_version, snap.seq) == (snap_rv, snap_seq)
            check_view(snap, state, indexers)

    asyncio.run(scenario())


# ---- API edges ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_edges(kind: StoreKind) -> None:
    store = Store(kind)
    assert await store.apply([]) == [] and store.reader.seq == 0  # nothing published
    changes = await store.apply(
        [upsert(pod_object("p", rv=3)), delta(ChangeType.DELETED, pod_object("q", rv=9))]
    )
    assert [c.type for c in changes] == [ChangeType.ADDED]  # an unknown key's deletion: no change
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


@pytest.mark.parametrize("kind", STORE_KINDS)
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
    await store.apply([upsert(pod_object("ok", rv=1)), upsert(pod_object("bad", rv=2, app="bad"))])
    await store.add_indexer("lazy", lazy)
    async with store.read() as view:
        assert sorted(view.keys()) == ["default/bad", "default/ok"]
        assert view.get("default/bad") is not None and len(view.list("default")) == 2
        assert view.index_values("picky") == ["ok"] and view.index_values("lazy") == ["ok"]
    assert store.index_errors == 2
    msg = next(r.getMessage() for r in caplog.records if "index 'picky'" in r.getMessage())
    assert "default/bad" in msg and "index function bug" in msg and "[1 so far]" in msg
    await store.apply([upsert(pod_object("bad", rv=3))])  # a version the functions accept
    async with store.read() as view:
        assert sorted(view.index_values("picky")) == ["bad", "ok"]
        assert sorted(view.index_values("lazy")) == ["bad", "ok"]
    assert store.index_errors == 4  # the old version is asked again, for values to drop


# ---- a reader across awaits ---------------------------------------------------------------


@dataclass
class Scan:
    """What :func:`scan_while_writing` saw."""

    read: int
    """Objects the reader read."""
    seq_before: int
    """The seq of the state the reader read."""
    published: list[int]
    """The seqs the writer published while the scan ran."""
    writer_blocked: bool
    """Whether the writer was inside ``writing()`` and not yet done when the scan ended."""


async def scan_while_writing(store: Store, n: int, chunk: int) -> Scan:
    """A reader scans all ``n`` objects inside ``read()``, letting the loop run after each
    chunk, while a writer applies one-update batches back to back."""
    objects = many_pods(n)
    await store.apply([Replace(objects, n, 0.0)])
    done = asyncio.Event()
    attempts = applied = 0

    async def writer() -> None:
        nonlocal attempts, applied
        i = 0
        while not done.is_set():
            attempts += 1
            await store.apply([upsert(msgspec.structs.replace(objects[i % n], rv=10 * n + i))])
            applied += 1
            i += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(writer())
    await asyncio.sleep(0)  # the writer's first batch goes in before the scan starts
    async with store.read() as view:
        seq_before, start, read = view.seq, len(store.published), 0
        async for _ in view.iter_chunks(chunk=chunk):
            read += 1
        scan = Scan(read, seq_before, store.published[start:], attempts > applied)
    done.set()
    await task
    return scan


async def test_a_snapshot_reader_across_awaits_never_stops_the_writer() -> None:
    """The scan yields 200 times; the writer publishes at each yield, one seq at a time."""
    n, chunk = 200_000, 1000
    scan = await scan_while_writing(Store("snapshot"), n, chunk)
    assert scan.read == n and not scan.writer_blocked
    assert len(scan.published) == n // chunk
    assert scan.published == list(range(scan.seq_before + 1, scan.seq_before + 1 + n // chunk))


async def test_a_locked_reader_across_awaits_stalls_the_writer_for_the_whole_scan() -> None:
    scan = await scan_while_writing(Store("locked"), 20_000, 1000)
    assert scan.read == 20_000
    assert scan.writer_blocked, "the writer tried to apply during the scan"
    assert scan.published == []  # and published nothing until the read lock was released


# ---- add_indexer --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_add_indexer_while_batches_keep_arriving(kind: StoreKind) -> None:
    store = Store(kind)
    n = 3000
    model = {o.key: o for o in (pod_object(f"p{i}", "a", i + 1, app=f"v{i % 5}") for i in range(n))}
    await store.apply([Replace(list(model.values()), n, 0.0)])
    published = store.published
    stop = asyncio.Event()
    rv = iter(range(10 * n, 100 * n))

    async def writer() -> None:
        i = 0
        while not stop.is_set() or i < 30:
            k = (i * 37) % n
            batch: list[Delta] = [upsert(pod_object(f"p{k}", "a", next(rv), app=f"v{i % 7}"))]
            if i % 3 == 0:
                batch.append(
                    delta(ChangeType.DELETED, pod_object(f"p{(k + 1) % n}", "a", next(rv)))
                )
            if i % 4 == 0:
                batch.append(upsert(pod_object(f"extra{i}", "a", next(rv), app="v9")))
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


def test_conformance() -> None:
    """Snapshot and LockedView both provide the reader API."""
    readers: list[Callable[[], View]] = [
        lambda: snapshot_store()[0].snapshot(),
        lambda: LockedView(LockedWriter()),
    ]
    for make in readers:
        view = make()
        assert (len(view), view.seq, view.resource_version, view.keys()) == (0, 0, 0, [])

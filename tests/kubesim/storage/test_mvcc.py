"""KubeSim's MVCC store against a model: every past revision can be listed exactly, the
watch cache window is bounded by count and by age, and expiry floors are right."""

from __future__ import annotations

import gc

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.storage.mvcc import Event, Mvcc, Stored


def stored(mvcc: Mvcc, key: str, rv: int) -> Stored:
    ns = key.split("/", 1)[0]
    raw = b'{"metadata":{"name":"%s","resourceVersion":"%d"}}' % (key.encode(), rv)
    return Stored(key, ns, rv, raw, "uid-" + key, {}, {})


ops = st.lists(
    st.tuples(st.sampled_from(["a/x", "a/y", "a-b/z", "b/x", "a/w"]), st.booleans()),
    min_size=1,
    max_size=60,
)


@given(ops)
@settings(max_examples=150, deadline=None)
def test_every_past_revision_lists_exactly(steps: list[tuple[str, bool]]) -> None:
    mvcc = Mvcc(history_size=1000)
    ts = mvcc.type_store("things")
    snapshots: dict[int, dict[str, int]] = {mvcc.rv: {}}
    model: dict[str, int] = {}
    for key, delete in steps:
        if delete and key in model:
            ev = ts.commit(key, None)
            del model[key]
            assert ev.type == "DELETED" and ev.rv == mvcc.rv
        elif not delete:
            rv = mvcc.next_rv()
            ts.commit(key, stored(mvcc, key, rv))
            model[key] = rv
        snapshots[mvcc.rv] = dict(model)
    assert ts.keys == sorted(model)
    for rv, snap in snapshots.items():
        got = {o.key: o.rv for o in ts.iter_sorted(None, None, rv)}
        assert got == snap, rv
        keys = [o.key for o in ts.iter_sorted("a", None, rv)]
        assert keys == sorted(k for k in snap if k.startswith("a/"))
        if keys:
            after = [o.key for o in ts.iter_sorted("a", keys[0], rv)]
            assert after == keys[1:]
        for ns in (None, "a"):  # remainingItemCount without walking the rest
            listed = [o.key for o in ts.iter_sorted(ns, None, rv)]
            for i, key in enumerate(listed):
                assert ts.count_after(ns, key, rv) == len(listed) - i - 1


def test_history_is_bounded_by_count_and_sets_the_floor() -> None:
    mvcc = Mvcc(history_size=3)
    ts = mvcc.type_store("things")
    start = mvcc.rv
    assert ts.seq_after_rv(start) == 0
    for i in range(5):
        ts.commit(f"n/{i}", stored(mvcc, f"n/{i}", mvcc.next_rv()))
    assert len(ts.history) == 3
    assert ts.floor_rv == ts.history[0].rv - 1
    assert ts.seq_after_rv(start) is None, "older than the window"
    assert ts.seq_after_rv(ts.floor_rv) == ts.first_seq
    assert ts.events_since(0) is None


def test_history_is_bounded_by_age() -> None:
    now = [1000.0]
    mvcc = Mvcc(history_size=100, history_max_age=0.05, clock=lambda: now[0])
    ts = mvcc.type_store("things")
    ts.commit("n/a", stored(mvcc, "n/a", mvcc.next_rv()))
    now[0] += 0.1  # older than the window
    ts.commit("n/b", stored(mvcc, "n/b", mvcc.next_rv()))
    assert [e.key for e in ts.history] == ["n/b"]
    assert ts.evicted


def test_expire_and_compact() -> None:
    mvcc = Mvcc()
    ts = mvcc.type_store("things")
    ts.commit("n/a", stored(mvcc, "n/a", mvcc.next_rv()))
    before = mvcc.rv
    ts.commit("n/b", stored(mvcc, "n/b", mvcc.next_rv()))
    assert mvcc.compact() == mvcc.rv
    assert ts.seq_after_rv(before) is not None, "compaction leaves the watch cache alone"
    mvcc.expire_watch_caches()
    assert ts.seq_after_rv(before) is None
    assert ts.seq_after_rv(mvcc.rv) == ts.next_seq


def test_deleted_event_carries_the_last_state_with_the_new_rv() -> None:
    mvcc = Mvcc()
    ts = mvcc.type_store("things")
    ts.commit("n/a", stored(mvcc, "n/a", mvcc.next_rv()))
    ev = ts.commit("n/a", None)
    assert ev.obj.rv == mvcc.rv and ev.prev is not None and ev.prev.rv == mvcc.rv - 1
    assert ev.obj.decode()["metadata"]["resourceVersion"] == str(mvcc.rv)
    assert len(ev.obj.raw) == len(bytes(ev.obj.raw))


def test_stored_objects_and_events_are_not_tracked_by_the_gc() -> None:
    """A sim under load makes an object and an event per write: the cyclic GC must not walk
    them (as tracked objects they made its full collections take 0.3-0.5 s at 200k pods,
    stalling every watch stream of the server)."""
    mvcc = Mvcc(history_size=100)
    ts = mvcc.type_store("things")
    for _ in range(50):
        ts.commit("a/x", stored(mvcc, "a/x", mvcc.next_rv()))
    ev = ts.commit("a/x", None)
    assert ev.type == "DELETED" and ev.prev is not None
    assert (ev.rv, ev.key) == (ev.obj.rv, "a/x")  # what Event computes from its object
    deleted = ev.left_selector()
    assert deleted.rv == ev.rv and ev.left_selector() is deleted  # made once
    gc.collect()
    assert not any(isinstance(o, (Stored, Event)) for o in gc.get_objects())
    assert not gc.is_tracked(ev) and not gc.is_tracked(ev.obj) and not gc.is_tracked(deleted)

"""One object can never stall an informer.

An event or a list item the decoder cannot take, whatever the exception (nested deeper than
msgspec recurses, a resourceVersion of thousands of digits that ``int()`` refuses, an
object that is not an object), is a counted, logged skip of that item, naming its key when
it can be read; the watch goes on from the next line, and a list with a bad item still
syncs every other item. The store's writer survives an item it cannot apply. The bad bytes
come from KubeSim's fault injection; the client is the real one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from aioinformer import Informer, InformerFactory, KubeObject, WatchOptions
from aioinformer.testing import KubeSim, eventually
from tests.faults.hostile import (
    deep_bytes,
    pod,
)

DEPTH = 1500  # deeper than msgspec decodes (RecursionError); a real server stores 2000
HUGE_RV = "9" * 5000  # int() refuses it (ValueError); Go's uint64 parser too


def options() -> WatchOptions:
    return WatchOptions(min_watch_timeout=30, max_watch_timeout=40, backoff_initial=0.05)


def cached(inf: Informer) -> dict[str, int]:
    return {o.key: o.rv for o in inf.snapshot().list()}


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@dataclass
class Watching:
    sim: KubeSim
    inf: Informer


@contextlib.asynccontextmanager
async def watching(caplog: pytest.LogCaptureFixture, **kw: Any) -> AsyncIterator[Watching]:
    caplog.set_level(logging.INFO, logger="aioinformer")
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a", 0), "default")
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer("v1", "pods", **kw)
            await inf.wait_for_sync(timeout=15)
            await eventually(lambda: sim.open_watches == 1, "the watch")
            yield Watching(sim, inf)


def event_line(etype: str, obj_json: bytes) -> bytes:
    return b'{"type":"' + etype.encode() + b'","object":' + obj_json + b"}\n"


def pod_json(name: str, rv: str, spec: bytes = b"{}") -> bytes:
    meta = orjson.dumps({"name": name, "namespace": "default", "resourceVersion": rv})
    return b'{"apiVersion":"v1","kind":"Pod","metadata":' + meta + b',"spec":' + spec + b"}"


POISON_LINES = {
    "nested-1500-levels": event_line("ADDED", pod_json("deep", "7", deep_bytes(DEPTH))),
    "resourceVersion-5000-digits": event_line("MODIFIED", pod_json("huge", HUGE_RV)),
    "bookmark-5000-digits": event_line(
        "BOOKMARK", b'{"metadata":{"resourceVersion":"9' + b"9" * 4999 + b'"}}'
    ),
    "resourceVersion-over-uint64": event_line("ADDED", pod_json("big", str(1 << 64))),
    "deep-managed-fields": event_line(
        "ADDED",
        b'{"metadata":{"name":"mf","namespace":"default","resourceVersion":"8","managedFields":[{"fieldsV1":'
        + deep_bytes(DEPTH)
        + b"}]}}",
    ),
}


@pytest.mark.parametrize("line", list(POISON_LINES.values()), ids=list(POISON_LINES))
async def test_a_poison_watch_event_is_a_counted_skip_and_the_stream_goes_on(
    caplog: pytest.LogCaptureFixture, line: bytes
) -> None:
    async with watching(caplog) as w:
        before = cached(w.inf)
        restarts = w.inf.statistics().watch_restarts
        w.sim.faults.inject_line(line)
        await eventually(lambda: w.inf.statistics().decode_errors == 1, "the skip to be counted")
        # the same stream goes on: a write made now arrives on it, no re-watch, no relist
        w.sim.create("pods", pod("b", 0), "default")
        want = w.sim.versions("pods", "default")
        await eventually(lambda: {k: str(v) for k, v in cached(w.inf).items()} == want, "b")
        st = w.inf.statistics()
        assert st.watch_restarts == restarts and st.relists == 0 and st.stream_errors == 0
        assert st.last_error == "" and set(before) < set(cached(w.inf))
        (msg,) = [m for m in warnings(caplog) if "skipped a bad watch line" in m]
        assert "[1 so far]" in msg and f"{len(line) - 1} bytes" in msg
        if b'"name":"' in line[:200]:  # (a bookmark has no key to name)
            key = "default/" + line.split(b'"name":"')[1].split(b'"')[0].decode()
            assert f"object {key}" in msg, msg


async def test_a_list_with_poison_items_syncs_every_other_item(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A list body with an item nested 1,500 levels, one with a 5,000-digit resourceVersion
    and one that is not an object: the informer syncs with the others, counts three skips
    and names the two keys it can read."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    good = [pod_json(f"p{i}", str(10 + i)) for i in range(4)]
    items = [
        good[0],
        pod_json("deep", "20", deep_bytes(DEPTH)),
        good[1],
        pod_json("huge", HUGE_RV),
        b"17",
        good[2],
        good[3],
    ]
    body = (
        b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"30"},"items":['
        + b",".join(items)
        + b"]}"
    )
    async with KubeSim() as sim, sim.api_client() as api:
        sim.faults.respond_next(
            1, body, status=200, content_type="application/json", verbs=["list"]
        )
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer("v1", "pods")
            await inf.wait_for_sync(timeout=15)
            assert sorted(cached(inf)) == [f"default/p{i}" for i in range(4)]
            st = inf.statistics()
            assert st.decode_errors == 3 and st.relists == 0 and st.stream_errors == 0
    logged = [m for m in warnings(caplog) if "skipped a bad list item" in m]
    assert len(logged) == 3
    assert any("default/deep" in m and "nested too deeply" in m for m in logged), logged
    assert any("default/huge" in m and "5000 digits" in m for m in logged), logged
    assert any("key unknown" in m for m in logged), logged


async def test_a_list_resource_version_out_of_range_fails_the_list_not_the_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The list's own resourceVersion of 5,000 digits is the server's fault, not an item's:
    the list fails with a clear error (counted, backed off) and the next one syncs."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    body = (
        b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"'
        + HUGE_RV.encode()
        + b'"},"items":[]}'
    )
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a", 0), "default")
        sim.faults.respond_next(
            1, body, status=200, content_type="application/json", verbs=["list"]
        )
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer("v1", "pods")
            await inf.wait_for_sync(timeout=15)
            assert sorted(cached(inf)) == ["default/a"]
            st = inf.statistics()
            assert st.stream_errors == 1 and "5000 digits is out of range" in st.last_error


async def test_the_writer_survives_an_item_the_store_cannot_apply(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A store that fails on one object (as a bug would: the store's apply raising for the
    batches that hold it): that item is skipped, counted and logged with its key, the rest
    of its batch and every later batch are applied, and the informer keeps running."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    async with watching(caplog) as w:
        writer = w.inf._writer
        real_apply = writer.apply

        def apply(batch: Any, **kwargs: Any) -> Any:
            for item in batch:
                obj = getattr(item, "obj", None)
                if isinstance(obj, KubeObject) and obj.name == "poison":
                    raise RuntimeError("the store cannot take this object")
            return real_apply(batch, **kwargs)

        writer.apply = apply  # type: ignore[method-assign]
        w.sim.create("pods", pod("poison", 0), "default")
        w.sim.create("pods", pod("b", 0), "default")
        await eventually(lambda: "default/b" in cached(w.inf), "b, after the poison")
        w.sim.create("pods", pod("c", 0), "default")
        await eventually(lambda: "default/c" in cached(w.inf), "c")
        assert "default/poison" not in cached(w.inf)
        assert w.inf.statistics().apply_errors == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("failed to apply default/poison" in m for m in errors), errors


async def test_a_transform_that_breaks_the_object_key_is_a_transform_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A transform returning an object the store could not file (its key no longer a
    string) is caught before the store: counted as a transform error, the object skipped."""
    import msgspec

    def breaks_one(obj: KubeObject) -> KubeObject:
        if obj.name == "bad":
            return msgspec.structs.replace(obj, key=["not", "hashable"])  # type: ignore[arg-type]
        return obj

    async with watching(caplog, transform=breaks_one) as w:
        w.sim.create("pods", pod("bad", 0), "default")
        w.sim.create("pods", pod("b", 0), "default")
        await eventually(lambda: "default/b" in cached(w.inf), "b")
        st = w.inf.statistics()
        assert st.transform_errors == 1 and st.apply_errors == 0
        assert sorted(cached(w.inf)) == ["default/a", "default/b"]

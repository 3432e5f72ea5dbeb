"""Compact objects: the Compactor's training, bodies that read back exactly, reads from many
threads, the informer's compact mode over real HTTP, and the error without zstandard."""

from __future__ import annotations

import sys
import threading

import orjson
import pytest

from aioinformer import InformerFactory, drop_managed_fields
from aioinformer._core.compact import MIN_BODY, CompactObject, Compactor
from aioinformer._core.errors import ConfigError
from aioinformer._core.objects import KubeObject, decode_object
from aioinformer._harness.workload import realistic_pod
from aioinformer.testing import KubeSim


def pods(n: int, owner: str = "web") -> list[KubeObject]:
    out = []
    for i in range(n):
        pod = realistic_pod("default", owner, i, node="n1", phase="Running")
        pod["metadata"]["resourceVersion"] = str(100 + i)
        out.append(decode_object(orjson.dumps(pod)))
    return out


def test_the_first_bodies_train_the_dictionary_and_stay_plain() -> None:
    compactor = Compactor(samples=50)
    objs = pods(200)
    out = [compactor(o) for o in objs]
    assert all(type(o) is KubeObject for o in out[:50])
    assert all(type(o) is CompactObject for o in out[50:])
    assert compactor.trained and compactor.dictionary_size > 0
    for plain, compact in zip(objs[50:], out[50:], strict=True):
        assert isinstance(compact, CompactObject)
        assert compact.stored_size * 4 < len(plain.body)
        assert compact.body == plain.body
        assert compact.to_dict() == plain.to_dict() == orjson.loads(orjson.dumps(plain.to_dict()))
        assert compact.body_dict() == plain.body_dict()
        assert compact.field("spec.containers.0.image") == plain.field("spec.containers.0.image")
        assert compact.field("status.phase") == "Running"
        assert (compact.key, compact.rv, compact.metadata) == (plain.key, plain.rv, plain.metadata)
    assert compactor(out[60]) is out[60]  # compact already


def test_without_a_dictionary_bodies_are_still_compressed() -> None:
    """Two samples cannot train a dictionary: bodies are compressed without one."""
    compactor = Compactor(samples=2)
    objs = pods(5)
    out = [compactor(o) for o in objs]
    assert compactor.trained and compactor.dictionary_size == 0
    assert all(type(o) is CompactObject for o in out[2:])
    assert [o.body for o in out] == [o.body for o in objs]


def test_short_bodies_stay_plain() -> None:
    compactor = Compactor(samples=0)
    obj = decode_object(b'{"metadata":{"name":"a","resourceVersion":"1"},"spec":{}}')
    assert len(obj.body) < MIN_BODY and compactor(obj) is obj


def test_a_transform_after_compaction_keeps_the_body() -> None:
    compactor = Compactor(samples=0)
    compact = compactor(pods(1)[0])
    assert drop_managed_fields(compact).body == compact.body


def test_compact_objects_read_back_on_many_threads_at_once() -> None:
    compactor = Compactor(samples=20)
    objs = pods(300)
    out = [compactor(o) for o in objs]
    want = [o.body for o in objs]
    failures: list[str] = []
    start = threading.Barrier(4)

    def read() -> None:
        start.wait()
        for _ in range(20):
            if [o.body for o in out] != want:
                failures.append(threading.current_thread().name)
                return

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


@pytest.mark.parametrize("pipeline", ["thread", "loop"])
async def test_a_compact_informer_caches_what_the_server_holds(sim: KubeSim, pipeline: str) -> None:
    sim.create_many("pods", (realistic_pod("default", "web", i) for i in range(1100)), "default")
    async with sim.api_client() as api:
        async with InformerFactory(api, compact=True, pipeline=pipeline) as factory:  # type: ignore[arg-type]
            informer = factory.informer("v1", "pods")
            await factory.wait_for_sync(timeout=30)
            assert informer.compact
            made = sim.patch("pods", "web-3", {"metadata": {"labels": {"x": "1"}}}, "default")
            snap = await informer.wait_for_rv(made["metadata"]["resourceVersion"], timeout=10)
            objs = snap.list()
            assert sum(type(o) is CompactObject for o in objs) >= 100  # after the samples
            assert type(snap.get("default/web-3")) is CompactObject  # its new version
            for obj in objs:
                assert obj.to_dict() == sim.get("pods", obj.name, "default"), obj.key


def test_compact_mode_without_zstandard_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from aioinformer._cache.informer import _compacting

    monkeypatch.setitem(sys.modules, "zstandard", None)  # (import zstandard fails)
    monkeypatch.delitem(sys.modules, "aioinformer._core.compact")
    with pytest.raises(ConfigError, match=r"aioinformer\[compact\]"):
        _compacting(None)

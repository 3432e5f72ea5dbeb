"""An informer caches only its resource's objects; the client returns only the object asked.

A list or watch of pods answered with something else (a ConfigMap, another apiVersion, an
object of another namespace or outside the label selector, a name with ``/`` or ``.``
whose key would collide with a real pod's, invalid UTF-8 inside an object, a whole list of
another kind) is refused: counted, logged at WARNING, nothing of it cached, nothing already
cached lost, and the cache converges on the server's pods. The server is
:class:`~tests.faults.scripted.ScriptedServer` (one misbehaviour, then it behaves); the
client is the real one. A write or get answered 2xx with a Status, or with another object,
raises :class:`~aioinformer.DecodeError` (an :class:`~aioinformer.AioinformerError`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, get_args

import orjson
import pytest
from aiohttp import web

from aioinformer import AioinformerError, Client, DecodeError, InformerFactory, WatchOptions
from aioinformer._core.objects import decode_event, decode_list
from aioinformer.testing import eventually
from tests.faults.hostile import hostile_server, json_response, list_body, pod, status
from tests.faults.scripted import KIND, Alien, Foreign, ScriptedServer, Step

FOREIGN: list[Foreign] = [w for w in get_args(Foreign) if w != "huge"]


def options() -> WatchOptions:
    return WatchOptions(
        min_watch_timeout=30,
        max_watch_timeout=30,
        backoff_initial=0.01,
        backoff_maximum=0.05,
        backoff_jitter=0.0,
        header_timeout=2.0,
    )


@pytest.mark.parametrize(
    ("what", "where"),
    [(w, at) for w in FOREIGN for at in ("list", "watch") if (w, at) != ("list_kind", "watch")],
)
async def test_objects_that_are_not_the_resources_are_refused(
    what: Foreign, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    """One foreign object, its key a real pod's, in the first list or the first watch of
    a pods informer in namespace "a" with a label selector: never cached, counted,
    logged; the real pods stay cached and the cache converges. (A list's own kind is
    only a list's: on a watch, "kind" is the case.)"""
    caplog.set_level(logging.INFO, logger="aioinformer")
    alien = Step(Alien(what, collide=True))
    steps = [alien] if where == "list" else [Step(None), alien]
    server = ScriptedServer(steps, initial=3, scope="a", page_size=0)
    wrong: list[str] = []
    async with hostile_server(server.handle) as http, http.api_client() as api:
        async with InformerFactory(api, watch_options=options()) as factory:
            inf = factory.informer("v1", "pods", namespace="a", label_selector="app=web")

            def check(_seq: int, _rv: int) -> None:
                for obj in inf.snapshot().list():
                    if (obj.key, obj.rv, obj.uid) not in server.sent or obj.kind != KIND:
                        wrong.append(f"{obj.kind} {obj.key} {obj.uid}")

            inf.on_publish(check)
            await eventually(lambda: server.done, "the script to be spent")

            def converged() -> bool:
                return {o.key: o.rv for o in inf.snapshot().list()} == server.truth.versions()

            await eventually(converged, "the cache to hold the server's pods")

            def counted() -> bool:
                stats = inf.statistics()
                return stats.decode_errors + stats.stream_errors >= 1

            await eventually(counted, "the refusal to be counted")
    assert not wrong, wrong
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warned, "the refusal was not logged"
    for r in caplog.records:  # (the library's records: the server's own are not its)
        if not r.name.startswith(("aioinformer", "asyncio")):
            continue
        exc = r.exc_info[1] if isinstance(r.exc_info, tuple) else None
        assert exc is None or isinstance(exc, AioinformerError), r.getMessage()


@pytest.mark.parametrize(
    ("name", "namespace"),
    [("a/b", "default"), ("b", "default/a"), ("default/a/b", ""), (".", "default"), ("..", "")],
)
def test_names_that_would_collide_in_the_cache_are_not_objects(name: str, namespace: str) -> None:
    """kube-apiserver never stores such a name; decoded, two of them would share a key."""
    item = pod(name, 5, namespace)
    with pytest.raises(DecodeError, match="not a valid name"):
        decode_event(orjson.dumps({"type": "ADDED", "object": item}))
    items, _, _ = decode_list(list_body([item, pod("ok", 6)], 6), skip_bad=True)
    assert [o.key for o in items] == ["default/ok"] and len(items.bad) == 1


@pytest.mark.parametrize("where", [b"spec", b"managedFields"])
def test_invalid_utf8_inside_an_object_is_refused_at_decode(where: bytes) -> None:
    """Not cached to raise orjson.JSONDecodeError later from body_dict() or to_dict()."""
    obj = pod("a", 5)
    obj["metadata"]["managedFields"] = [{"manager": "@@BAD@@"}]
    obj["spec"]["note"] = "@@OK@@"
    raw = orjson.dumps(obj)
    marker = b"@@BAD@@" if where == b"managedFields" else b"@@OK@@"
    raw = raw.replace(marker, b"\xff\xfe")
    with pytest.raises(DecodeError, match="UTF-8"):
        decode_event(b'{"type":"ADDED","object":' + raw + b"}")
    items, _, _ = decode_list(b'{"kind":"PodList","items":[' + raw + b"]}", skip_bad=True)
    assert not items and len(items.bad) == 1


# -- the client -----------------------------------------------------------------------------------

DISCOVERY = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {"name": "pods", "kind": "Pod", "namespaced": True, "verbs": ["get", "create"]},
        {"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": ["get"]},
    ],
}
POD = {"apiVersion": "v1", "kind": "Pod", **pod("a", 5)}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": POD["metadata"], "data": {}}
ANSWERS: dict[str, Any] = {
    "a Status": status(200, "", "a Status in a 200"),
    "a Status of a failure": status(500, "InternalError", "a proxy's error page, as JSON"),
    "a ConfigMap": CONFIGMAP,
    "another pod": {**POD, "metadata": {**POD["metadata"], "name": "other"}},
    "a pod of another namespace": {**POD, "metadata": {**POD["metadata"], "namespace": "x"}},
}
WRITES: dict[str, Callable[[Client], Awaitable[Any]]] = {
    "get": lambda c: c.get("v1", "Pod", "a", "default"),
    "create": lambda c: c.create(POD),
    "update": lambda c: c.update(POD),
    "patch": lambda c: c.patch(POD, {"metadata": {"labels": {"x": "y"}}}),
    "apply": lambda c: c.apply(POD),
}


@pytest.mark.parametrize("answer", list(ANSWERS))
@pytest.mark.parametrize("verb", list(WRITES))
async def test_a_2xx_answer_that_is_not_the_object_is_a_decode_error(
    verb: str, answer: str
) -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path == "/api/v1":
            return json_response(orjson.dumps(DISCOVERY))
        return json_response(orjson.dumps(ANSWERS[answer]))

    async with hostile_server(handle) as http, http.api_client() as api:
        client = Client(api)
        with pytest.raises(DecodeError, match="not the object"):
            await WRITES[verb](client)

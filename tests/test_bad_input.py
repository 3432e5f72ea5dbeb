"""The bad-input catalogue: one test per entry, over real HTTP against KubeSim.

Every entry gets a clear error or a counted, logged skip, never a crash, a hang or a tight
retry loop, and nothing already cached is lost. Each test checks the same four things: the
informer keeps running (a write made afterwards reaches the cache), the cache keeps what
it had, the right counter moved, and the log says clearly what happened. Permanent errors
(401/403/404) are retried with a growing backoff, never in a tight loop, and are visible
in ``informer.statistics().last_error`` and an ERROR log naming verb, resource and namespace.

The bad bytes come from the server side (``sim.faults.inject_line``, ``respond_next``,
``cut_next``) or from real server behaviour (RBAC, revoked tokens, deleted CRDs and
namespaces); the client is the real kubernetes_asyncio one. README "Bad input and
failures" lists the same catalogue.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from aioinformer import Informer, InformerFactory
from aioinformer.testing import KubeSim, eventually
from tests.support import ModelFifo, make_watcher, pod, running, transcript
from tests.support import watch_options as options

PODSETS = "example.aioinformer.dev/v1/podsets"
STATUS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}


def cached(inf: Informer) -> dict[str, str]:
    return {o.key: str(o.rv) for o in inf.snapshot().list()}


@dataclass
class Case:
    """A synced informer on pods in "default" (pods a and b), watching."""

    sim: KubeSim
    inf: Informer
    caplog: pytest.LogCaptureFixture
    before: dict[str, str] = field(default_factory=dict)

    def assert_kept(self) -> None:
        """Nothing that was cached is lost."""
        assert cached(self.inf) == self.before

    async def assert_keeps_running(self, name: str = "z") -> None:
        """A write made now reaches the cache: the informer is alive and converges."""
        self.sim.create("pods", pod(name), "default")
        want = self.sim.versions("pods", "default")
        await eventually(lambda: cached(self.inf) == want, "convergence")

    def logged(self, level: int, *fragments: str) -> str:
        """The first record at ``level`` containing every fragment (fails if none)."""
        for r in self.caplog.records:
            msg = r.getMessage()
            if r.levelno == level and all(f in msg for f in fragments):
                return msg
        seen = "\n".join(r.getMessage() for r in self.caplog.records)
        raise AssertionError(f"no {logging.getLevelName(level)} log with {fragments}:\n{seen}")

    async def inject(self, line: bytes) -> None:
        self.sim.faults.inject_line(line + b"\n")


@contextlib.asynccontextmanager
async def watching_pods(
    caplog: pytest.LogCaptureFixture, sim: KubeSim | None = None, api: Any = None
) -> AsyncIterator[Case]:
    caplog.set_level(logging.INFO, logger="aioinformer")
    async with contextlib.AsyncExitStack() as stack:
        if sim is None:
            sim = await stack.enter_async_context(KubeSim())
        if api is None:
            api = await stack.enter_async_context(sim.api_client())
        sim.create("pods", pod("a"), "default")
        sim.create("pods", pod("b"), "default")
        factory = InformerFactory(api, "default", watch_options=options())
        await stack.enter_async_context(factory)
        inf = factory.informer("v1", "pods")
        await inf.wait_for_sync(timeout=15)
        await eventually(lambda: sim.open_watches == 1, "the watch")
        case = Case(sim, inf, caplog, cached(inf))
        assert sorted(case.before) == ["default/a", "default/b"]
        yield case


async def bad_line(caplog: pytest.LogCaptureFixture, line: bytes, why: str) -> None:
    """The common shape of a skipped watch line: counted, logged, nothing else happens."""
    async with watching_pods(caplog) as case:
        restarts = case.inf.statistics().watch_restarts
        await case.inject(line)
        await eventually(lambda: case.inf.statistics().decode_errors == 1, "the skip to be counted")
        case.assert_kept()
        await case.assert_keeps_running()
        st = case.inf.statistics()
        assert st.decode_errors == 1 and st.watch_restarts == restarts  # the stream was kept
        assert st.stream_errors == 0 and st.errors_by_code == {} and st.last_error == ""
        msg = case.logged(logging.WARNING, "pods[default]: skipped a bad watch line", why)
        assert f"{len(line)} bytes, starting {line[:20]!r}"[:-1] in msg and "[1 so far]" in msg


# -- lines that are not events ----------------------------------------------------------------


async def test_malformed_json_line(caplog: pytest.LogCaptureFixture) -> None:
    await bad_line(caplog, b'{"type":"ADDED","object":{"metadata":', "is not valid JSON")


@pytest.mark.parametrize(
    "line",
    [b"[1, 2, 3]", b'"hello"', b'{"kind":"Pod","metadata":{"name":"x"}}', b'{"type":"ADDED"}'],
    ids=["array", "string", "an-object-not-an-event", "event-without-object"],
)
async def test_valid_json_that_is_not_an_event(
    caplog: pytest.LogCaptureFixture, line: bytes
) -> None:
    why = "without an object" if b"type" in line else "not a watch event"
    await bad_line(caplog, line, why)


async def test_unknown_event_type(caplog: pytest.LogCaptureFixture) -> None:
    line = b'{"type":"SOMETHING","object":{"metadata":{"name":"x","resourceVersion":"1"}}}'
    await bad_line(caplog, line, "unknown watch event type 'SOMETHING'")


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        ({"kind": "Pod", "spec": {}}, "object without metadata"),
        ({"kind": "Pod", "metadata": {"namespace": "default", "resourceVersion": "7"}}, "name"),
        ({"kind": "Pod", "metadata": {"name": "x", "namespace": "default"}}, "resourceVersion"),
    ],
    ids=["no-metadata", "no-name", "no-resourceVersion"],
)
async def test_object_without_metadata_name_or_resource_version(
    caplog: pytest.LogCaptureFixture, obj: dict[str, Any], why: str
) -> None:
    await bad_line(caplog, orjson.dumps({"type": "ADDED", "object": obj}), why)


@pytest.mark.parametrize("rv", ["abc", "-5", "1.5"])
async def test_resource_version_not_an_integer(caplog: pytest.LogCaptureFixture, rv: str) -> None:
    meta = {"name": "a", "namespace": "default", "resourceVersion": rv}
    line = orjson.dumps({"type": "MODIFIED", "object": {"kind": "Pod", "metadata": meta}})
    await bad_line(caplog, line, f"resourceVersion {rv!r} is not an integer")


# -- watch ERROR events, sizes, cut streams -------------------------------------------------------


async def test_error_event_with_a_non_410_status(caplog: pytest.LogCaptureFixture) -> None:
    async with watching_pods(caplog) as case:
        err = {**STATUS, "message": "etcdserver: leader changed", "reason": "", "code": 500}
        await case.inject(orjson.dumps({"type": "ERROR", "object": err}))
        await eventually(lambda: case.inf.statistics().errors_by_code.get(500) == 1, "the 500")
        case.assert_kept()
        await case.assert_keeps_running()
        st = case.inf.statistics()
        assert st.relists == 0 and st.watch_restarts >= 1  # re-watched from the RV, no relist
        assert "ERROR event 500" in st.last_error and "leader changed" in st.last_error
        case.logged(
            logging.WARNING,
            'pods[default]: watch pods in namespace "default": ERROR event 500',
            "etcdserver: leader changed; retrying in",
        )


@pytest.mark.parametrize("limit", ["under", "over"])
async def test_line_of_3_mib(caplog: pytest.LogCaptureFixture, limit: str) -> None:
    """Under the line limit (16 MiB by default) a 3 MiB event is applied whole; over a
    lower limit it is skipped up to its newline, counted and logged, and the stream kept."""
    blob = "x" * (3 * 1024 * 1024)
    if limit == "under":
        async with watching_pods(caplog) as case:
            # b, the last write: its RV is the watch's (an older one would be a regression)
            current = case.sim.get("pods", "b", "default")
            big = {**current, "metadata": {**current["metadata"], "annotations": {"b": blob}}}
            await case.inject(orjson.dumps({"type": "MODIFIED", "object": big}))
            await eventually(lambda: case.inf.snapshot().get("default/b") is not None, "b")
            await eventually(
                lambda: "b" in case.inf.snapshot().get("default/b").annotations,  # type: ignore[union-attr]
                "the 3 MiB event",
            )
            assert case.inf.statistics().decode_errors == 0
            assert case.inf.snapshot().get("default/b").annotations["b"] == blob  # type: ignore[union-attr]
            await case.assert_keeps_running()
        return
    caplog.set_level(logging.INFO, logger="aioinformer")
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        sink = ModelFifo()
        w = make_watcher(api, sink, max_line_bytes=1024 * 1024)
        async with running(w):
            await w.wait_for_sync()
            await eventually(lambda: sim.open_watches == 1, "the watch")
            before, restarts = dict(sink.state), w.statistics().watch_restarts
            line = b'{"type":"ADDED","object":"' + blob.encode() + b'"}'
            sim.faults.inject_line(line + b"\n")
            await eventually(lambda: w.statistics().decode_errors == 1, "the skip")
            assert sink.state == before
            sim.create("pods", pod("b"), "default")
            await eventually(lambda: sink.state == sim.versions("pods"), "convergence")
        assert w.statistics().watch_restarts == restarts and w.statistics().stream_errors == 0
        assert f"a line of {len(line)} bytes, over the line limit" in caplog.text


async def test_chunk_cut_in_the_middle_of_a_line(caplog: pytest.LogCaptureFixture) -> None:
    async with watching_pods(caplog) as case:
        added: list[str] = []
        case.inf.add_handler(on_add=lambda obj: added.append(obj.name))
        await eventually(lambda: sorted(added) == ["a", "b"], "the initial adds")
        case.sim.faults.cut_next(1)
        case.sim.create("pods", pod("c"), "default")  # this event is cut half way
        await eventually(lambda: case.inf.statistics().stream_errors == 1, "the cut")
        assert all(cached(case.inf)[k] == v for k, v in case.before.items())
        await case.assert_keeps_running()  # c arrives whole after the resume, then z
        assert sorted(added) == ["a", "b", "c", "z"]  # each exactly once
        st = case.inf.statistics()
        assert case.sim.faults.injected["cut_mid_line"] == 1
        assert st.relists == 0 and st.decode_errors == 0 and st.watch_restarts >= 1
        assert 'watch pods in namespace "default"' in st.last_error
        case.logged(logging.WARNING, 'pods[default]: watch pods in namespace "default"', "retry")


HTML = b"<html><head><title>Sign in</title></head>\n<body><h1>Proxy login</h1></body></html>\n"


@pytest.mark.parametrize(
    ("verb", "status", "ctype"),
    [
        ("list", 200, "text/html"),
        ("watch", 502, "text/html"),
        ("watch", 200, "text/plain"),
        ("watch", 200, "application/json"),
    ],
    ids=["list-200-html", "watch-502-html", "watch-200-text", "watch-200-html-labelled-json"],
)
async def test_html_body_or_non_json_content_type(
    caplog: pytest.LogCaptureFixture, verb: str, status: int, ctype: str
) -> None:
    async with watching_pods(caplog) as case:
        sim = case.sim
        sim.faults.respond_next(2, HTML, status=status, content_type=ctype, verbs=[verb])
        if verb == "list":  # make the informer relist: its RV falls out of the history
            sim.stall_watches()
            sim.create("pods", pod("c"), "default")
            sim.expire_watch_history()
            sim.unstall_watches()
        sim.drop_watches()
        await eventually(lambda: "raw_response" in sim.faults.injected, "the fault")
        await eventually(lambda: not sim.faults.request_faults, "both bad answers served")
        case.assert_kept()
        await case.assert_keeps_running()
        st = case.inf.statistics()
        where = f'{verb} pods in namespace "default"'
        if status != 200:  # a clear StatusError, counted by code, with the page's text
            assert st.errors_by_code[status] == 2
            case.logged(logging.WARNING, where, "HTTP 502", "non-JSON error body (text/html")
        elif ctype != "application/json":  # a DecodeError: not JSON
            assert st.stream_errors >= 2
            case.logged(logging.WARNING, where, f"Content-Type {ctype!r}, not JSON")
        else:  # every line skipped, then a very short watch: backed off, not spun
            assert st.decode_errors == 4 and st.stream_errors >= 2
            case.logged(logging.WARNING, "skipped a bad watch line", "<html>")
            case.logged(logging.WARNING, where, "very short watch")
        assert where in st.last_error


# -- 401, 403, 404 ---------------------------------------------------------------------------------


def not_found() -> bytes:
    body = {
        **STATUS,
        "message": "the server could not find the requested resource",
        "reason": "NotFound",
        "details": {},
        "code": 404,
    }
    return orjson.dumps(body)


@pytest.mark.parametrize("verb", ["list", "watch"])
@pytest.mark.parametrize("code", [401, 403, 404])
async def test_401_403_404_on_list_and_on_watch(
    caplog: pytest.LogCaptureFixture, code: int, verb: str
) -> None:
    """Permanent errors: an ERROR log naming verb, resource, namespace and what is missing,
    ``stats().last_error``, a growing backoff (no tight loop), the cache kept; once the
    cause is fixed (token accepted, permission granted, resource served) it recovers."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    async with KubeSim() as sim:
        resource, plural, gv = "pods", "pods", "v1"
        all_rules = (("*", "*", "*"),)
        token = sim.add_user("carol", all_rules)
        if (verb, code) == ("list", 401):
            del sim.options.tokens[token]  # unknown at first
        elif (verb, code) == ("list", 403):
            sim.add_user("carol", (), token=token)  # no permission at first
        elif (verb, code) == ("watch", 403):
            sim.add_user("carol", (("list", "", "pods"),), token=token)  # list, not watch
        elif (verb, code) == ("list", 404):
            resource, plural, gv = PODSETS, "podsets", "example.aioinformer.dev/v1"
        cfg = sim.client_configuration()
        cfg.api_key = {"BearerToken": token}
        from kubernetes_asyncio import client

        async with client.ApiClient(configuration=cfg) as api:
            factory = InformerFactory(api, "default", watch_options=options())
            async with factory:
                inf = factory.informer(gv, plural)
                if verb == "watch":
                    sim.create("pods", pod("a"), "default")
                    await inf.wait_for_sync(timeout=15)
                    before = cached(inf)
                    assert list(before) == ["default/a"]
                    if code == 401:
                        del sim.options.tokens[token]  # revoked
                    elif code == 404:
                        sim.faults.respond_next(
                            1000,
                            not_found(),
                            status=404,
                            content_type="application/json",
                            verbs=["watch"],
                        )
                    sim.drop_watches()

                def delays() -> list[str]:
                    return [
                        r.getMessage().rsplit("retrying in ", 1)[1]
                        for r in caplog.records
                        if r.levelno == logging.ERROR and f"HTTP {code}" in r.getMessage()
                    ]

                # (the log line comes right after the count, on the watcher's thread)
                await eventually(
                    lambda: (
                        inf.statistics().errors_by_code.get(code, 0) >= 4 and len(delays()) >= 4
                    ),
                    "4 errors, logged",
                )
                # each failure waits out the next backoff delay (0.05 s doubling, as the
                # ERROR log says): a growing backoff, not a tight loop (on a loaded machine
                # the dropped watch may fail as a cut stream first, taking the first step)
                steps = [[f"{0.05 * 2**i:.1f} s" for i in range(k, k + 4)] for k in (0, 1)]
                assert delays()[:4] in steps, delays()
                st = inf.statistics()
                if verb == "watch":
                    assert cached(inf) == before and st.relists == 0
                else:
                    assert not inf.has_synced and st.objects == 0
                # fix the cause: the informer recovers by itself
                if code == 401 or (verb, code) == ("list", 403):
                    sim.add_user("carol", all_rules, token=token)
                elif code == 403:
                    sim.add_user("carol", (("list", "", "pods"), ("watch", "", "pods")), token)
                elif verb == "watch":
                    sim.faults.request_faults.clear()
                else:
                    sim.create("customresourcedefinitions", transcript("13a")["request"]["body"])
                    await sim.wait_served(PODSETS)
                await inf.wait_for_sync(timeout=30)
                if resource == "pods":
                    sim.create("pods", pod("z"), "default")
                want = sim.versions(resource, "default")
                await eventually(lambda: cached(inf) == want, "convergence", timeout=30)
        name = "podsets.example.aioinformer.dev" if resource == PODSETS else "pods"
        where = f'{verb} {name} in namespace "default": HTTP {code}'
        assert where in st.last_error
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert errors and all(where in m for m in errors), errors
        hint = {
            401: "the credentials were rejected: check the token or certificate",
            403: f'missing RBAC permission: "{verb}" on "pods" in namespace "default"; '
            'an informer needs both "list" and "watch"',
            404: "the resource is not served: is the CRD installed?",
        }[code]
        assert hint in errors[0]
        if code == 403:
            assert f'User "carol" cannot {verb} resource "pods"' in errors[0]
        assert token not in caplog.text


# -- the resource or its namespace goes away ------------------------------------------------------


async def test_crd_deleted_while_watched(caplog: pytest.LogCaptureFixture) -> None:
    """The CRs' deletions reach the cache (the server deletes them first), then the watch
    gets 404 and is retried with backoff, named clearly, until the CRD comes back."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    crd = transcript("13a")["request"]["body"]
    body = {"apiVersion": "example.aioinformer.dev/v1", "kind": "PodSet"}
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("customresourcedefinitions", crd)
        await sim.wait_served(PODSETS)
        sim.create(PODSETS, {**body, "metadata": {"name": "old"}}, "default")
        async with InformerFactory(api, watch_options=options()) as factory:
            inf = factory.informer("example.aioinformer.dev/v1", "podsets")
            await inf.wait_for_sync(timeout=15)
            assert list(cached(inf)) == ["default/old"]
            await eventually(lambda: sim.open_watches == 1, "the watch")
            sim.delete("customresourcedefinitions", crd["metadata"]["name"])
            await eventually(lambda: inf.statistics().errors_by_code.get(404, 0) >= 3, "404s")
            assert cached(inf) == {}  # the DELETED event came before the watch ended
            assert "is the CRD installed?" in inf.statistics().last_error
            sim.create("customresourcedefinitions", crd)
            await sim.wait_served(PODSETS)
            sim.create(PODSETS, {**body, "metadata": {"name": "new"}}, "default")
            want = sim.versions(PODSETS)
            await eventually(lambda: cached(inf) == want, "convergence", timeout=30)
        assert list(want) == ["default/new"]
    msg = "watch podsets.example.aioinformer.dev in all namespaces: HTTP 404"
    assert any(r.levelno == logging.ERROR and msg in r.getMessage() for r in caplog.records)


async def test_namespace_deleted_while_watched(caplog: pytest.LogCaptureFixture) -> None:
    """Its objects are deleted from the cache; the namespaced watch stays healthy (a list
    of a missing namespace is empty, not an error) and sees the namespace come back."""
    caplog.set_level(logging.INFO, logger="aioinformer")
    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("namespaces", {"metadata": {"name": "team"}})
        sim.create("pods", pod("a"), "team")
        sim.create("pods", pod("other"), "default")
        async with InformerFactory(api, watch_options=options()) as factory:
            team = factory.informer("v1", "pods", namespace="team")
            every = factory.informer("v1", "pods", namespace=None)
            await factory.wait_for_sync(timeout=15)
            await eventually(lambda: sim.open_watches == 2, "the watches")
            sim.delete("namespaces", "team")
            await eventually(lambda: cached(team) == {}, "the deletion in the namespace")
            await eventually(lambda: list(cached(every)) == ["default/other"], "everywhere")
            sim.create("namespaces", {"metadata": {"name": "team"}})
            sim.create("pods", pod("b"), "team")
            want = sim.versions("pods", "team")
            await eventually(lambda: cached(team) == want, "the namespace back")
            for inf in (team, every):
                st = inf.statistics()
                assert st.errors_by_code == {} and st.decode_errors == 0 and st.last_error == ""
                assert st.relists == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


# -- the user's own code failing ------------------------------------------------------------------


async def test_index_function_raising(caplog: pytest.LogCaptureFixture) -> None:
    """An index function that raises on some objects does not stop the writer: those
    objects are cached (get/list) but left out of that index, each failure counted and
    logged with the index, the key and the exception; the rest of the index works."""
    caplog.set_level(logging.INFO, logger="aioinformer")

    def by_owner_team(obj: Any) -> list[str]:
        return [obj.annotations["team"]]  # KeyError when the annotation is missing

    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", {**pod("a"), "metadata": {"name": "a", "annotations": {"team": "x"}}})
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer("v1", "pods", indexers={"team": by_owner_team})
            await inf.wait_for_sync(timeout=15)
            sim.create("pods", pod("b"), "default")  # no annotation: the function raises
            sim.create("pods", pod("c"), "default")
            want = sim.versions("pods", "default")
            await eventually(lambda: cached(inf) == want, "convergence")
            snap = inf.snapshot()
            assert sorted(snap.keys()) == ["default/a", "default/b", "default/c"]
            assert [o.key for o in snap.by_index("team", "x")] == ["default/a"]
            assert snap.index_values("team") == ["x"]
            assert inf.statistics().index_errors == 2
    msg = next(r.getMessage() for r in caplog.records if "index 'team'" in r.getMessage())
    assert "default/b" in msg and "KeyError('team')" in msg and "left out of that index" in msg


async def test_user_code_returning_the_wrong_shape(caplog: pytest.LogCaptureFixture) -> None:
    """A transform returning a dict, an index function returning a bare string, and a
    publish listener raising: each is counted or logged, the objects concerned are skipped
    (transform) or left out of that index, and the informer keeps following the server."""
    caplog.set_level(logging.INFO, logger="aioinformer")

    def to_dict_by_mistake(obj: Any) -> Any:
        return obj.to_dict() if obj.name == "b" else obj

    def bare_string(obj: Any) -> Any:
        return obj.name  # should be [obj.name]

    def listener(seq: int, rv: int) -> None:
        raise RuntimeError("listener bug")

    async with KubeSim() as sim, sim.api_client() as api:
        sim.create("pods", pod("a"), "default")
        async with InformerFactory(api, "default", watch_options=options()) as factory:
            inf = factory.informer(
                "v1", "pods", transform=to_dict_by_mistake, indexers={"name": bare_string}
            )
            inf.on_publish(listener)
            await inf.wait_for_sync(timeout=15)
            sim.create("pods", pod("b"), "default")  # the transform returns a dict: skipped
            sim.create("pods", pod("c"), "default")
            await eventually(lambda: "default/c" in cached(inf), "c")
            st = inf.statistics()
            assert sorted(cached(inf)) == ["default/a", "default/c"]
            assert st.transform_errors == 1 and st.index_errors == 2  # a, then c
            assert st.listener_errors >= 1  # each publish (how many batches: timing)
            assert inf.snapshot().index_values("name") == []
    assert "the transform returned a dict, not a KubeObject" in caplog.text
    assert "returned the string 'a', not strings" in caplog.text
    assert "publish listener" in caplog.text and "listener bug" in caplog.text

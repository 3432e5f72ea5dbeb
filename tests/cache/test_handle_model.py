"""Random sequences of acquire, release (one, the same twice at once, two at once), pin
and start against a model of the factory's reference counts: after every step each spec's
count is the model's (never negative), an informer is in the factory iff someone holds
it or pinned it, it runs iff it is in a running factory, and one the factory let go is
closed, never to come back (a later acquire makes a fresh one). Informers over a quiet
in-memory lister-watcher on the caller's loop, so a sequence takes milliseconds; the
HTTP side is tests/cache/test_handle.py's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer import InformerFactory, InformerHandle, InformerSpec
from aioinformer._cache.index import IndexFunc
from aioinformer._cache.informer import Informer
from aioinformer._client.rest import ApiClientLike, RestClient
from aioinformer._core.errors import StatusError
from aioinformer._core.objects import ItemList, KubeObject

SPECS = 3


class QuietListWatch:
    """Lists nothing, then watches forever without an event."""

    def __init__(self, resource: str) -> None:
        self.resource = resource
        self.namespace: str | None = None

    async def list_page(
        self, resource_version: str, limit: int, continue_: str | None
    ) -> tuple[list[KubeObject], str, str | None]:
        return ItemList(), "1", None

    async def watch(
        self,
        resource_version: str,
        timeout_seconds: int,
        *,
        send_initial_events: bool = False,
        allow_bookmarks: bool = True,
        idle_timeout: float | None = None,
        on_oversized: Callable[[int], None] | None = None,
    ) -> AsyncGenerator[list[bytes], None]:
        await asyncio.Event().wait()
        yield []  # (never reached)

    def error_from_status(self, status: Mapping[str, Any], verb: str) -> StatusError:
        raise AssertionError("a quiet watch has no ERROR event")


class QuietFactory(InformerFactory):
    def _new_informer(
        self, spec: InformerSpec, indexers: Mapping[str, IndexFunc] | None
    ) -> Informer:
        return Informer(QuietListWatch(spec.plural), name=spec.name, host=self.host)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("acquire"), st.integers(0, SPECS - 1)),
        st.tuples(st.just("release"), st.integers(0, 10)),
        st.tuples(st.just("release-twice"), st.integers(0, 10)),
        st.tuples(st.just("release-two"), st.integers(0, 10)),
        st.tuples(st.just("pin"), st.integers(0, SPECS - 1)),
        st.tuples(st.just("start"), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=100, deadline=None)
@given(ops=OPS)
def test_acquire_and_release_follow_the_reference_count_model(
    ops: list[tuple[str, int]],
) -> None:
    asyncio.run(_scenario(ops))


class NoServer:
    """An API client never used: the quiet lister-watchers send no request."""

    configuration = None
    default_headers: dict[str, str] = {}


async def _scenario(ops: list[tuple[str, int]]) -> None:
    f = QuietFactory(RestClient(cast(ApiClientLike, NoServer())), pipeline="loop")
    holders = [0] * SPECS  # the model
    pinned = [False] * SPECS
    handles: list[tuple[int, InformerHandle]] = []
    seen: list[Informer] = []
    runner: asyncio.Task[None] | None = None

    def check() -> None:
        current = {inf.plural: inf for inf in f.informers}
        assert all(count > 0 for count in f._holders.values()), "a count at 0 is dropped"
        for i in range(SPECS):
            assert holders[i] >= 0
            inf = current.get(f"r{i}")
            assert (inf is not None) == (holders[i] > 0 or pinned[i]), (i, holders, pinned)
            if inf is None:
                continue
            assert f.holders(inf) == holders[i] and f.is_pinned(inf) == pinned[i]
            assert not inf.closed
            assert (inf in f._tasks) == (runner is not None), "runs iff the factory runs"
        for inf in seen:
            if inf not in current.values():
                assert inf.closed, f"{inf.name}: let go, but not closed"
        for i, handle in handles:
            assert handle.informer is current[f"r{i}"], "a live handle holds the current one"

    async def release(*picked: tuple[int, InformerHandle]) -> None:
        for entry in set(picked):
            handles.remove(entry)
            holders[entry[0]] -= 1
        await asyncio.gather(*(handle.release() for _, handle in picked))

    try:
        for op, n in ops:
            if op == "acquire":
                handle = f.acquire("v1", f"r{n}")
                handles.append((n, handle))
                holders[n] += 1
                if handle.informer not in seen:
                    seen.append(handle.informer)
            elif op == "pin":
                inf = f.informer("v1", f"r{n}")
                pinned[n] = True
                if inf not in seen:
                    seen.append(inf)
            elif op == "start" and runner is None:
                runner = asyncio.create_task(f.run())
                await asyncio.sleep(0)  # (it starts every informer it holds)
            elif op == "release" and handles:
                await release(handles[n % len(handles)])
            elif op == "release-twice" and handles:
                entry = handles[n % len(handles)]
                await release(entry, entry)
            elif op == "release-two" and len(handles) >= 2:
                a, b = n % len(handles), (n + 1) % len(handles)
                await release(handles[a], handles[b])
            check()
    finally:
        if runner is not None:
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
        await asyncio.gather(*(handle.release() for _, handle in handles))
    assert all(inf.closed for inf in seen if runner is not None or inf not in f.informers)

"""A paged list slower than compaction still syncs; so does one larger than a page's cap.

KubeSim serves 50 pods 5 to a page, 0.3 s per request, and compacts every 0.5 s of
writes: a paged list (3 s) always outlives its continue token. Like client-go's pager
(``FullListIfExpired``), the watcher answers the expired token with one list without
paging and syncs; only if that fails too does it back off.

``max_list_bytes`` bounds each response body (a bomb, a body that never ends), not the
sum of a list's pages: a list many times the cap in all, each page within it, syncs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

from aioinformer import InformerFactory, WatchOptions
from aioinformer._client.listwatch import ListWatch
from aioinformer.testing import KubeSim, eventually
from tests.faults.hostile import (
    pod,
)

SPEC = {"spec": {"containers": [{"name": "c", "image": "x"}]}}


async def compacting(sim: KubeSim, every: float) -> None:
    """Write a configmap and compact, every ``every`` seconds (what etcd does to a busy
    cluster)."""
    n = 0
    while True:
        await asyncio.sleep(every)
        sim.create("configmaps", {"metadata": {"name": f"tick{n}"}}, "default")
        sim.compact()
        n += 1


@pytest.mark.parametrize("full_list_fails_once", [False, True], ids=["full-list", "then-500"])
async def test_a_paged_list_slower_than_compaction_syncs_with_one_full_list(
    caplog: pytest.LogCaptureFixture, full_list_fails_once: bool
) -> None:
    caplog.set_level(logging.INFO, logger="aioinformer")
    opts = WatchOptions(page_size=5, backoff_initial=0.05, backoff_jitter=0.0)
    async with KubeSim() as sim, sim.api_client() as api:
        for i in range(50):
            sim.create("pods", SPEC | pod(f"p{i:02}", 0), "default")
        sim.faults.set_latency(0.3, path_contains="/pods")
        compactor = asyncio.create_task(compacting(sim, 0.5))
        try:
            async with InformerFactory(api, "default", watch_options=opts) as factory:
                inf = factory.informer("v1", "pods")
                if full_list_fails_once:
                    # the full list after the expired token fails: back off, then again
                    await eventually(
                        lambda: inf.statistics().errors_by_code.get(410, 0) >= 1, "the 410"
                    )
                    sim.fail_next(1, 500, verbs=["list"])
                await inf.wait_for_sync(timeout=30)
                assert len(inf.snapshot()) == 50
                st = inf.statistics()
                assert st.errors_by_code.get(410, 0) >= 1
                if full_list_fails_once:
                    assert st.errors_by_code.get(500) == 1
        finally:
            compactor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await compactor
    assert "listing everything in one request" in caplog.text


async def test_a_list_larger_in_all_than_max_list_bytes_syncs_page_by_page() -> None:
    async with KubeSim() as sim, sim.api_client() as api:
        for i in range(50):
            sim.create("pods", SPEC | pod(f"p{i:02}", 0), "default")
        lw = ListWatch(api, "v1", "pods", namespace="default")
        pages, cont = [], None
        while True:
            items, _, cont = await lw.list_page("", 5, cont)
            pages.append(items.nbytes)
            if cont is None:
                break
        whole, _, _ = await lw.list_page("", 0, None)
        cap = 2 * max(pages)  # every page fits; the whole list is about 5 caps
        assert len(pages) == 10 and whole.nbytes > 4 * cap, (pages, whole.nbytes)
        opts = WatchOptions(page_size=5, max_list_bytes=cap)
        async with InformerFactory(api, "default", watch_options=opts) as factory:
            inf = factory.informer("v1", "pods")
            await inf.wait_for_sync(timeout=30)
            assert len(inf.snapshot()) == 50
            assert inf.statistics().stream_errors == 0

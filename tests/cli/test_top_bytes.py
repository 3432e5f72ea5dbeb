"""Bytes per informer where people look: ``top``'s columns (its table from a live informer's
statistics, in process), the ``/metrics`` gauges of a running Manager, and ``top
--project`` / ``--compact`` run as a user runs them (a bad path: one line, status 2)."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sys
from pathlib import Path

import aiohttp
import pytest
from rich.console import Console

from aioinformer import InformerFactory, Manager, ShardSelector
from aioinformer._cli.inspect import _shard, human_bytes, top_table
from aioinformer._harness.workload import realistic_pod
from aioinformer.testing import KubeSim, eventually
from tests.support import run_cli


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (3 * 2**20 + 2**19, "3.5 MiB"),
     (5 * 2**30, "5.0 GiB"), (2**42, "4096.0 GiB")],
)  # fmt: skip
def test_human_bytes(n: int, text: str) -> None:
    assert human_bytes(n) == text


async def test_top_shows_each_informers_bytes(sim: KubeSim) -> None:
    sim.create_many("pods", (realistic_pod("default", "web", i) for i in range(20)), "default")
    async with sim.api_client() as api, InformerFactory(api) as factory:
        pods = factory.informer("v1", "pods", namespace="default")
        await factory.wait_for_sync(timeout=10)
        stats = pods.statistics()
        console = Console(file=io.StringIO(), width=250, color_system=None)
        console.print(top_table(console, [stats]))
    text: str = console.file.getvalue()  # type: ignore[attr-defined]
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    row = next(line for line in text.splitlines() if line.startswith("│"))
    cells = dict(
        zip(
            [c.strip() for c in header.strip("┃ ").split("┃")],
            [c.strip() for c in row.strip("│ ").split("│")],
            strict=True,
        )
    )
    assert stats.cached_bytes > 20 * 1000
    assert cells["cached bytes"] == human_bytes(stats.cached_bytes)
    assert cells["bytes/object"] == human_bytes(stats.cached_bytes / 20)
    assert cells["plain bytes"] == human_bytes(stats.plain_bytes)


async def test_metrics_export_each_informers_bytes(sim: KubeSim) -> None:
    sim.create_many("pods", (realistic_pod("default", "web", i) for i in range(10)), "default")
    async with sim.api_client() as api:
        manager = Manager(api, metrics_port=0, blocked_loop_threshold=None)
        pods = manager.informer("v1", "pods", namespace="default")
        async with manager, aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{manager.bound_metrics_port}/metrics"
            async with http.get(url) as resp:
                text = await resp.text()
            stats = pods.statistics()
    series = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(
            ("aioinformer_informer_cached_bytes", "aioinformer_informer_plain_bytes")
        )
    }
    assert series == {
        'aioinformer_informer_cached_bytes{informer="pods[default]"}': stats.cached_bytes,
        'aioinformer_informer_plain_bytes{informer="pods[default]"}': stats.plain_bytes,
    }
    assert stats.cached_bytes > 10 * 1000


async def top_rows(kubeconfig: Path, *args: str) -> dict[str, str]:
    """Run ``top ARGS pods`` until it printed a table with the informer synced, interrupt
    it; the last table's cells by header."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aioinformer", "top", "--kubeconfig", str(kubeconfig),
        "--interval", "0.2", "-n", "default", *args, "pods",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "COLUMNS": "250"},
    )  # fmt: skip
    printed: list[str] = []

    async def read() -> None:
        assert proc.stdout is not None
        async for line in proc.stdout:
            printed.append(line.decode())

    def tables() -> list[str]:
        return "".join(printed).split("aioinformer top at ")

    reader = asyncio.create_task(read())
    try:
        await eventually(
            lambda: len(tables()) > 2 and " yes " in tables()[-2], "a synced table", timeout=60
        )
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        await asyncio.wait_for(reader, 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        reader.cancel()
    lines = tables()[-2].splitlines()
    header = next(line for line in lines if line.startswith("┃"))
    row = next(line for line in lines if line.startswith("│"))
    return dict(
        zip(
            [c.strip() for c in header.strip("┃ ").split("┃")],
            [c.strip() for c in row.strip("│ ").split("│")],
            strict=True,
        )
    )


def size(text: str) -> float:
    number, unit = text.split()
    return float(number) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]


async def test_top_shows_what_a_projection_holds(sim: KubeSim, tmp_path: Path) -> None:
    sim.create_many("pods", (realistic_pod("default", "web", i) for i in range(30)), "default")
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc")
    plain = await top_rows(kubeconfig)
    projected = await top_rows(kubeconfig, "--project", "spec.nodeName", "--project", "status")
    assert plain["objects"] == projected["objects"] == "30"
    assert size(plain["bytes/object"]) > 2000
    assert size(projected["bytes/object"]) < 200


async def test_top_refuses_a_bad_path_in_one_line(tmp_path: Path) -> None:
    result = await run_cli(
        "top", "--kubeconfig", str(tmp_path / "none"), "--project", "spec.containers.0", "pods"
    )
    assert result.code == 2, result.err
    assert result.err.strip().splitlines() == [
        "python -m aioinformer top: project(): 'spec.containers.0': list items cannot be "
        "picked; keep the list ('spec.containers')"
    ]


async def test_a_parked_informer_shows_in_metrics_and_top(sim: KubeSim) -> None:
    sim.create_many("pods", (realistic_pod("default", "web", i) for i in range(10)), "default")
    async with sim.api_client() as api:
        manager = Manager(api, metrics_port=0, blocked_loop_threshold=None)
        pods = manager.informer(
            "v1", "pods", namespace="default", shards=ShardSelector.of_buckets([0], 1)
        )
        async with manager, aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{manager.bound_metrics_port}/metrics"

            async def parked() -> float:
                async with http.get(url) as resp:
                    text = await resp.text()
                (line,) = [ln for ln in text.splitlines() if ln.startswith(PARKED)]
                return float(line.rsplit(" ", 1)[1])

            assert await parked() == 0.0
            assert _shard(pods.statistics()) == "client 100%"
            await pods.park(timeout=10)
            assert await parked() == 1.0
            assert _shard(pods.statistics()) == "parked"


PARKED = "aioinformer_informer_parked{"

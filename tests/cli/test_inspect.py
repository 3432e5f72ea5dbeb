"""``python -m aioinformer dump`` and ``top`` against KubeSim through a kubeconfig, as a user
runs them: dump's lines (brief and ``--full``), top's table at 80 columns and wide (names in
full, brackets included), and every failure in one line."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from aioinformer.testing import KubeSim, eventually
from tests.support import configmap, pod, run_cli


def token_free(text: str, token: str) -> bool:
    return token not in text


async def test_dump_prints_every_object_and_a_summary(sim: KubeSim, tmp_path: Path) -> None:
    for i in range(3):
        sim.create("pods", pod(f"p{i}", app="web" if i else "db"), "default")
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc")
    result = await run_cli("dump", "--kubeconfig", str(kubeconfig), "pods")
    assert result.code == 0, result.err
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert lines[:-1] == [{"key": k, "resourceVersion": v} for k, v in sim.versions("pods").items()]
    assert lines[-1]["count"] == 3 and int(lines[-1]["resourceVersion"]) >= max(
        int(v) for v in sim.versions("pods").values()
    )
    result = await run_cli("dump", "--kubeconfig", str(kubeconfig), "-l", "app=web", "v1/pods")
    assert [json.loads(x)["key"] for x in result.out.splitlines()[:-1]] == [
        "default/p1",
        "default/p2",
    ]
    assert token_free(result.out + result.err, sim.token)


async def test_dump_full_prints_the_whole_objects(
    sim: KubeSim, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    sim.create("namespaces", {"metadata": {"name": "other"}})
    sim.create("pods", pod("a"), "default")
    sim.create("pods", pod("b"), "other")
    sim.create("configmaps", configmap("c"), "default")
    kubeconfig = str(sim.write_kubeconfig(tmp_path / "kc"))
    async with http.get("/api/v1/pods") as resp:
        served = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p
            for p in (await resp.json())["items"]
        }
    result = await run_cli("dump", "--kubeconfig", kubeconfig, "--full", "po")
    assert result.code == 0, result.err
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert lines[-1]["count"] == 2
    objects = lines[:-1]
    assert [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objects] == [
        "default/a",
        "other/b",
    ]
    for obj in objects:
        assert list(obj)[:2] == ["apiVersion", "kind"]
        assert (obj["apiVersion"], obj["kind"]) == ("v1", "Pod")
        want = served[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"]
        assert "managedFields" in want["metadata"]
        want = {**want, "metadata": {**want["metadata"]}}
        del want["metadata"]["managedFields"]
        assert {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")} == {
            k: v for k, v in want.items() if k not in ("apiVersion", "kind")
        }
    result = await run_cli("dump", "--kubeconfig", kubeconfig, "--full", "--show-managed-fields",
                           "-n", "other", "pods")  # fmt: skip
    assert result.code == 0, result.err
    (only, summary) = [json.loads(line) for line in result.out.splitlines()]
    assert only["metadata"]["name"] == "b" and summary["count"] == 1
    assert only["metadata"]["managedFields"] == served["other/b"]["metadata"]["managedFields"]
    result = await run_cli("dump", "--kubeconfig", kubeconfig, "--full", "-n", "other", "ns")
    names = [json.loads(line)["metadata"].get("name") for line in result.out.splitlines()[:-1]]
    assert "default" in names and "other" in names  # -n does not narrow a cluster-scoped kind


async def test_dump_reports_a_clear_error_without_the_token(sim: KubeSim, tmp_path: Path) -> None:
    nobody = sim.add_user("nobody")
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc", user_token=nobody)
    result = await run_cli("dump", "--kubeconfig", str(kubeconfig), "--timeout", "2", "pods")
    assert result.code in (1, 2)
    last = result.err.splitlines()[-1]
    assert last.startswith("python -m aioinformer dump: ") and "Forbidden" in last
    assert "Traceback" not in result.err
    assert token_free(result.out + result.err, nobody) and token_free(result.err, sim.token)


def not_a_kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "garbage"
    path.write_text("users:\n- name: u\n  user: {token: SECRET-IN-FILE\n")
    return path


@pytest.mark.parametrize("command", ["dump", "top"])
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kubeconfig", "/nonexistent"], "kubeconfig /nonexistent: no such file"),
        (["--kubeconfig", "GARBAGE"], "kubeconfig GARBAGE: not valid YAML: "),
        (["--kubeconfig", "SIM", "--context", "nope"], "kubeconfig SIM, context 'nope': "),
    ],
)
async def test_a_bad_kubeconfig_is_one_line(
    sim: KubeSim, tmp_path: Path, command: str, args: list[str], message: str
) -> None:
    paths = {
        "GARBAGE": str(not_a_kubeconfig(tmp_path)),
        "SIM": str(sim.write_kubeconfig(tmp_path / "kc")),
    }
    args = [paths.get(a, a) for a in args]
    result = await run_cli(command, *args, "pods")
    assert result.code == 2 and result.out == ""
    (line,) = result.err.splitlines()
    for placeholder, path in paths.items():
        message = message.replace(placeholder, path)
    assert line.startswith(f"python -m aioinformer {command}: {message}")
    assert "SECRET-IN-FILE" not in result.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["dump", "foos"], "the server has no resource 'foos'"),
        (["dump", "podz"], "the server has no resource 'podz': did you mean pods?"),
        (["top", "pods", "apps/v2/deployments"], "apps serves v1, not v2 (asked for deployments in apps/v2)"),
        (["dump", "a/b/c/d"], "bad resource 'a/b/c/d': use NAME, NAME.GROUP, VERSION/NAME or GROUP/VERSION/NAME"),
    ],
)  # fmt: skip
async def test_an_unknown_resource_is_one_line_at_once(
    sim: KubeSim, tmp_path: Path, argv: list[str], message: str
) -> None:
    kubeconfig = str(sim.write_kubeconfig(tmp_path / "kc"))
    command, *resources = argv
    result = await run_cli(command, "--kubeconfig", kubeconfig, *resources, timeout=30)
    assert result.code == 2 and result.out == ""
    assert result.err == f"python -m aioinformer {command}: {message}\n"
    assert sim.open_watches == 0  # nothing was started


async def top(
    sim: KubeSim,
    kubeconfig: Path,
    columns: int,
    *args: str,
    enough: Callable[[list[str]], bool] | None = None,
) -> str:
    """Run ``top ARGS`` until it has printed a table with every informer synced (or what
    ``enough`` accepts, given the tables printed so far), interrupt it, return what it
    printed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aioinformer", "top", "--kubeconfig", str(kubeconfig),
        "--interval", "0.2", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "COLUMNS": str(columns)},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    printed: list[str] = []

    async def read() -> None:
        assert proc.stdout is not None
        async for line in proc.stdout:
            printed.append(line.decode())

    def synced_table_printed() -> bool:
        tables = "".join(printed).split("aioinformer top at ")
        if enough is not None:
            return enough(tables[1:-1])  # (whole tables)
        return len(tables) > 2 and " no " not in tables[-2]  # a whole table, all synced

    reader = asyncio.create_task(read())
    try:
        await eventually(
            synced_table_printed, "top to print a table of synced informers", timeout=60
        )
        proc.send_signal(signal.SIGINT)
        err = await asyncio.wait_for(proc.stderr.read(), 30)
        await asyncio.wait_for(reader, 30)
        code = await asyncio.wait_for(proc.wait(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        reader.cancel()
    out = "".join(printed)
    assert code == 0, err.decode()
    assert token_free(out + err.decode(), sim.token)
    return out


def last_table(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The headers and the rows (by informer) of the last table ``top`` printed."""
    chunk = text.rsplit("aioinformer top at ", 1)[-1]

    def cells(line: str, bar: str) -> list[str]:
        return [c.strip() for c in line.strip(f"{bar} ").split(bar)]

    headers = next(cells(line, "┃") for line in chunk.splitlines() if line.startswith("┃"))
    rows = {}
    for line in chunk.splitlines():
        if line.startswith("│"):
            row = cells(line, "│")
            if row[0]:
                rows[row[0]] = row
            else:  # a folded cell continues on the next line
                pytest.fail(f"a cell of top's table was folded: {line!r}")
    return headers, rows


@pytest.mark.parametrize("columns", [80, 220])
async def test_top_shows_a_table_that_fits_the_terminal(
    sim: KubeSim, tmp_path: Path, columns: int
) -> None:
    sim.create("pods", pod("t"), "default")
    sim.create("configmaps", configmap("c1"), "default")
    sim.create("configmaps", configmap("c2"), "default")
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc")
    text = await top(sim, kubeconfig, columns, "-n", "default", "po", "configmaps", "leases")
    assert text.count("aioinformer top at ") >= 3  # not a terminal: a table per interval
    wide = [line for line in text.splitlines() if len(line) > columns]
    assert not wide, f"lines wider than {columns} columns: {wide}"
    headers, rows = last_table(text)
    assert headers[:3] == ["informer", "synced", "objects"] and "staleness" in headers
    assert set(rows) == {
        "pods[default]",
        "configmaps[default]",
        "leases.coordination.k8s.io[default]",
    }
    objects = {name: row[1:3] for name, row in rows.items()}
    assert objects == {
        "pods[default]": ["yes", "1"],
        "configmaps[default]": ["yes", "2"],
        "leases.coordination.k8s.io[default]": ["yes", "0"],
    }
    staleness = headers.index("staleness")
    assert all(row[staleness].endswith(" ms") for row in rows.values())
    all_headers = ["informer", "synced", "objects", "RV", "deltas/s", "FIFO", "peak",
                   "staleness", "cached bytes", "bytes/object", "plain bytes", "relists",
                   "restarts", "decode errors", "shard", "kept", "dropped"]  # fmt: skip
    if columns >= 140:
        assert headers == all_headers and "not shown" not in text
    else:
        assert len(headers) < len(all_headers)
        assert "not shown at this width: " in text


def test_top_table_columns_are_chosen_by_priority() -> None:
    """In process, at every width from 210 down to 64: the table fits, the informer name is
    whole, and columns go least important first; narrower, the name folds (never "…")."""
    import io

    from rich.console import Console

    from aioinformer import InformerStatistics
    from aioinformer._cli.inspect import TOP_COLUMNS, top_table

    stats = [
        InformerStatistics(
            name="statefulsets.apps[kube-system]", objects=123456,
            resource_version=98765432, seq=3, has_synced=True, fifo_depth=2, fifo_peak=9,
            staleness=0.25, deltas_per_second=1500.0, applied_total=10, batches=3,
            in_place_batches=3, relists=1, watch_restarts=4, decode_errors=5,
        )
    ]  # fmt: skip
    kept: list[tuple[str, ...]] = []
    for width in range(210, 63, -1):
        console = Console(file=io.StringIO(), width=width, color_system=None)
        console.print(top_table(console, stats))
        text: Any = console.file.getvalue()  # type: ignore[attr-defined]
        assert all(len(line) <= width for line in text.splitlines()), text
        assert "statefulsets.apps[kube-system]" in text, text
        headers, _ = last_table("aioinformer top at " + text)
        kept.append(tuple(headers))
    shown = {c.header for c in TOP_COLUMNS} | {c.short for c in TOP_COLUMNS if c.short}
    order = list(dict.fromkeys(kept))
    assert all(set(h) <= shown for h in order)
    assert order[0] == tuple(c.header for c in TOP_COLUMNS)
    assert ("informer", "synced", "objects", "FIFO", "staleness") in order
    assert order[-1] == ("informer", "synced", "objects", "stale")
    console = Console(file=io.StringIO(), width=40, color_system=None)
    console.print(top_table(console, stats))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    first = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    assert "".join(first) == "statefulsets.apps[kube-system]" and "…" not in text


async def test_top_on_a_terminal_redraws_one_table_in_place(sim: KubeSim, tmp_path: Path) -> None:
    """On a terminal (a pseudo-terminal here) top is a live table: redrawn in place with
    cursor moves, at the terminal's width, until Ctrl-C; exit 0."""
    import pty
    import re

    sim.create("pods", pod("t"), "default")
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc")
    master, slave = pty.openpty()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aioinformer", "top", "--kubeconfig", str(kubeconfig),
        "--interval", "0.1", "-n", "default", "pods",
        stdin=slave, stdout=slave, stderr=slave, env={**os.environ, "COLUMNS": "80"},
    )  # fmt: skip
    os.close(slave)
    received = bytearray()

    def read() -> None:
        try:
            received.extend(os.read(master, 65536))
        except OSError:  # the child closed the terminal
            asyncio.get_running_loop().remove_reader(master)

    def screen() -> str:
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", received.decode(errors="replace"))

    def last_row() -> list[str]:
        lines = screen().replace("\r", "\n").splitlines()
        row = next(line for line in reversed(lines) if line.startswith("│ pods[default]"))
        return [c.strip() for c in row.strip("│ ").split("│")]

    def redrawn_synced() -> bool:
        return screen().count("│ pods[default]") >= 2 and last_row()[1:3] == ["yes", "1"]

    loop = asyncio.get_running_loop()
    loop.add_reader(master, read)
    try:
        await eventually(redrawn_synced, "top redrawn, the informer synced", timeout=60)
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 0, screen()
    finally:
        loop.remove_reader(master)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        os.close(master)
    assert b"\x1b[" in received  # drawn with cursor moves, not printed table after table
    assert "aioinformer top at" not in screen()
    lines = screen().replace("\r", "\n").splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert last_row()[1:3] == ["yes", "1"]


def test_the_shard_option_reads_buckets_of_n() -> None:
    from aioinformer import ShardSelector
    from aioinformer._cli.inspect import shard_arg

    assert shard_arg("0/4") == ShardSelector.of_buckets([0], 4)
    assert shard_arg("0,2/4") == ShardSelector.of_buckets([0, 2], 4)
    for bad in ("4/4", "0", "a/4", "0/0", "/4"):
        with pytest.raises(argparse.ArgumentTypeError):
            shard_arg(bad)


async def test_top_shows_a_sharded_informers_mode_share_and_dropped(sim: KubeSim) -> None:
    import io

    from rich.console import Console

    from aioinformer import InformerFactory, ShardSelector
    from aioinformer._cli.inspect import top_table

    for i in range(20):
        sim.create("pods", pod(f"p{i}"), "default")
    async with sim.api_client() as api, InformerFactory(api) as factory:
        inf = factory.informer("v1", "pods", shards=ShardSelector.of_buckets([0], 4))
        plain = factory.informer("v1", "configmaps")
        await factory.wait_for_sync(timeout=10)
        stats = [inf.statistics(), plain.statistics()]
    console = Console(file=io.StringIO(), width=250, color_system=None)
    console.print(top_table(console, stats))
    text: str = console.file.getvalue()  # type: ignore[attr-defined]
    lines = text.splitlines()
    header = [c.strip() for c in next(x for x in lines if x.startswith("┃")).strip("┃ ").split("┃")]
    rows = [[c.strip() for c in x.strip("│ ").split("│")] for x in lines if x.startswith("│")]
    cells = [dict(zip(header, row, strict=True)) for row in rows]
    assert cells[0]["shard"] == "client 25%" and cells[0]["dropped"] == str(20 - stats[0].objects)
    assert cells[0]["kept"] == str(stats[0].objects) != "0"
    assert cells[1]["shard"] == "-" and cells[1]["dropped"] == "-" and cells[1]["kept"] == "-"


def lease(name: str, holder: str, renewed: datetime, **annotations: str) -> dict[str, Any]:
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": stamp,
                 "acquireTime": stamp, "leaseTransitions": 2},
    }  # fmt: skip


async def test_top_shows_the_shard_ring_from_the_leases(sim: KubeSim, tmp_path: Path) -> None:
    """``top --lease-name`` reads the shard Leases: each shard's holder, whether it is
    ready there, its buckets, its renewal (or expiry), a missing Lease, the live replicas."""
    now, old = datetime.now(UTC), datetime.now(UTC) - timedelta(hours=1)
    ready, buckets = "shard.aioinformer.dev/ready", "shard.aioinformer.dev/buckets"
    sim.create("namespaces", {"metadata": {"name": "ops"}})
    for body in [
        lease("op-shard-0", "a", now, **{ready: "true", buckets: "00-3f"}),
        lease("op-shard-1", "b", old, **{ready: "true", buckets: "40-7f"}),  # expired
        lease("op-shard-3", "", now, **{ready: "true"}),  # released (a stale annotation)
        lease("op-member-a", "a", now),
        lease("op-member-b", "b", old),
        lease("other-shard-0", "z", now, **{ready: "true"}),
    ]:
        sim.create("leases", body, "ops")
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc")

    def enough(tables: list[str]) -> bool:
        return len(tables) >= 2

    text = await top(sim, kubeconfig, 200, "--lease-name", "op", "--lease-namespace", "ops",
                     enough=enough)  # fmt: skip
    headers, rows = last_table(text)
    assert headers == ["shard", "holder", "ready", "buckets", "renewed", "transitions"]
    assert rows["0"][1:4] == ["a", "yes", "00-3f"] and rows["0"][4].endswith(" s ago")
    assert rows["1"][1:4] == ["b", "no", "40-7f"] and rows["1"][4].startswith("expired, ")
    assert rows["2"][1:5] == ["?", "no", "-", "missing"]
    assert rows["3"][1:4] == ["(released)", "no", "-"]
    assert set(rows) == {"0", "1", "2", "3"}
    assert "1 of 4 shards ready; live replicas: a" in text.rsplit("aioinformer top at ", 1)[-1]


def test_top_needs_a_resource_or_a_lease_name(capsys: pytest.CaptureFixture[str]) -> None:
    from aioinformer._cli import inspect
    from aioinformer._cli.main import build_parser

    assert inspect.run(build_parser().parse_args(["top", "--kubeconfig", "nowhere"])) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "python -m aioinformer top: name a RESOURCE to watch, or --lease-name NAME\n"

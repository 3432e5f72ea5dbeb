"""``python -m aioinformer dump`` against KubeSim through a kubeconfig, as a user runs it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from aioinformer._cli.inspect import parse_resource
from aioinformer._core.errors import ConfigError
from aioinformer.testing import KubeSim
from tests.support import eventually


def test_parse_resource() -> None:
    assert parse_resource("pods") == ("v1", "pods")
    assert parse_resource("statefulsets") == ("apps/v1", "statefulsets")
    assert parse_resource("v1/configmaps") == ("v1", "configmaps")
    assert parse_resource("apps/v1/statefulsets") == ("apps/v1", "statefulsets")
    assert parse_resource("example.aioinformer.dev/v1/podsets") == (
        "example.aioinformer.dev/v1",
        "podsets",
    )
    with pytest.raises(ConfigError):
        parse_resource("a/b/c/d")


async def run_cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_dump_prints_every_object_and_a_summary(sim: KubeSim, tmp_path: Path) -> None:
    for i in range(3):
        sim.create(
            "pods",
            {
                "metadata": {"name": f"p{i}", "labels": {"app": "web" if i else "db"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
            "default",
        )
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc")
    code, out, err = await run_cli("dump", "--kubeconfig", str(kubeconfig), "pods")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[:-1] == [{"key": k, "resourceVersion": v} for k, v in sim.versions("pods").items()]
    assert lines[-1]["count"] == 3 and int(lines[-1]["resourceVersion"]) >= max(
        int(v) for v in sim.versions("pods").values()
    )
    code, out, _ = await run_cli(
        "dump", "--kubeconfig", str(kubeconfig), "-l", "app=web", "v1/pods"
    )
    assert [json.loads(x)["key"] for x in out.splitlines()[:-1]] == ["default/p1", "default/p2"]
    assert token_free(out + err, sim.token)


async def test_dump_reports_a_clear_error_without_the_token(sim: KubeSim, tmp_path: Path) -> None:
    nobody = sim.add_user("nobody")
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc", user_token=nobody)
    code, out, err = await run_cli(
        "dump", "--kubeconfig", str(kubeconfig), "--timeout", "2", "pods"
    )
    assert code == 1
    assert "not synced" in err
    assert token_free(out + err, nobody) and token_free(out + err, sim.token)


def token_free(text: str, token: str) -> bool:
    return token not in text


async def test_top_shows_a_table_until_interrupted(sim: KubeSim, tmp_path: Path) -> None:
    import signal

    sim.create(
        "pods",
        {"metadata": {"name": "t"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        "default",
    )
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        "top",
        "--kubeconfig",
        str(kubeconfig),
        "--interval",
        "0.1",
        "pods",
        "configmaps",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )
    try:
        # both informers watching: both have synced, and the SIGINT handler is installed
        await eventually(lambda: sim.open_watches >= 2, "top to watch both resources", 60)
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    text = out.decode()
    assert "aioinformer top" in text
    rows = {
        cells[0]: cells[1:3]
        for line in text.splitlines()
        if (cells := [c.strip() for c in line.strip("│ ").split("│")]) and len(cells) == 11
    }
    assert rows == {"pods": ["yes", "1"], "configmaps": ["yes", "0"]}  # synced, objects
    assert token_free(text + err.decode(), sim.token)

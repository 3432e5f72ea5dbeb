"""``python -m aioinformer sim``: what keeps it from serving is one line and exit status 2."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aioinformer import InformerFactory, ShardSelector
from aioinformer._cli.main import build_parser
from aioinformer._client.config import load_api_client
from tests.support import run_cli


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port of 127.0.0.1 something listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


async def test_a_port_in_use_is_one_line(taken_port: int) -> None:
    result = await run_cli("sim", "--port", str(taken_port))
    assert result.code == 2
    assert result.err == (
        f"python -m aioinformer sim: cannot serve on 127.0.0.1:{taken_port}: Address already in use\n"
    )
    assert "KubeSim serving" not in result.out


async def test_a_missing_token_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = await run_cli("sim", "--port", "0", "--token-file", str(missing))
    assert result.code == 2 and result.out == ""
    assert result.err == (
        f"python -m aioinformer sim: cannot read the token file: [Errno 2] No such file or "
        f"directory: '{missing}'\n"
    )


def test_event_ttl_takes_seconds() -> None:
    """``--event-ttl`` is kube-apiserver's default 3600 unless given; 0 is allowed (keep
    Events), a negative or non-numeric value is a usage error."""
    parser = build_parser()
    assert parser.parse_args(["sim"]).event_ttl == 3600.0
    assert parser.parse_args(["sim", "--event-ttl", "90.5"]).event_ttl == 90.5
    assert parser.parse_args(["sim", "--event-ttl", "0"]).event_ttl == 0.0


async def test_a_bad_event_ttl_is_a_usage_error() -> None:
    for value, why in (("-1", "must be 0 or more seconds, not -1"), ("soon", "not a number")):
        result = await run_cli("sim", "--port", "0", "--event-ttl", value)
        assert result.code == 2 and result.out == ""
        assert f"argument --event-ttl: {why}" in result.err


@pytest.mark.parametrize(
    ("gates", "why"),
    [
        ("Nope=true", "unrecognized feature gate: Nope"),
        ("ShardedListAndWatch", "missing bool value for ShardedListAndWatch"),
        ("ShardedListAndWatch=yes", "invalid value of ShardedListAndWatch=yes"),
    ],
)
async def test_a_bad_feature_gate_is_one_line(gates: str, why: str) -> None:
    result = await run_cli("sim", "--port", "0", "--feature-gates", gates)
    assert result.code == 2 and result.out == ""
    assert result.err.startswith(f"python -m aioinformer sim: --feature-gates: {why}"), result.err
    assert result.err.count("\n") == 1, result.err


async def test_the_sharded_list_gate_serves_shard_selectors(tmp_path: Path) -> None:
    """``--feature-gates ShardedListAndWatch=true``: a sharded informer's list is echoed,
    so it runs in server mode (the gate is off by default: client mode, as in
    tests/cache/test_sharded_informer.py)."""
    kubeconfig = tmp_path / "sim.kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aioinformer", "sim", "--port", "0", "--plain-http",
        "--kubeconfig-out", str(kubeconfig), "--feature-gates", "ShardedListAndWatch=true",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line.decode().startswith("kubeconfig written to"), line
        async with await load_api_client(str(kubeconfig)) as api:
            factory = InformerFactory(api)
            pods = factory.informer("v1", "pods", shards=ShardSelector.of_buckets([0], 2))
            async with factory:
                await factory.wait_for_sync(timeout=30)
                assert pods.statistics().shard_mode == "server"
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        code = await asyncio.wait_for(proc.wait(), 30)
    assert code == 0

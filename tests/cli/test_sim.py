"""``python -m aioinformer sim``: what keeps it from serving is one line and exit status 1."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

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
    assert result.code == 1
    assert result.err == (
        f"python -m aioinformer sim: cannot serve on 127.0.0.1:{taken_port}: Address already in use\n"
    )
    assert "KubeSim serving" not in result.out


async def test_a_missing_token_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = await run_cli("sim", "--port", "0", "--token-file", str(missing))
    assert result.code == 1 and result.out == ""
    assert result.err == (
        f"python -m aioinformer sim: cannot read the token file: [Errno 2] No such file or "
        f"directory: '{missing}'\n"
    )

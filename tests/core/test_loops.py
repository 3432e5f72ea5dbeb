"""Which event loop (aioinformer/_core/loops.py and its front door ``aioinformer.run``):
uvloop's when asked for or installed, asyncio's when not, a clear error when uvloop is asked
for and missing, and never an event loop policy (a process-wide setting)."""

from __future__ import annotations

import asyncio
import sys

import pytest
import uvloop

import aioinformer
from aioinformer import ConfigError
from aioinformer._core.loops import new_event_loop


@pytest.fixture
def without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import uvloop`` fails, as where it is not installed."""
    monkeypatch.setitem(sys.modules, "uvloop", None)


@pytest.mark.parametrize(("asked", "is_uvloop"), [(None, True), (True, True), (False, False)])
def test_the_loop_asked_for(asked: bool | None, is_uvloop: bool) -> None:
    policy = asyncio.get_event_loop_policy()
    loop = new_event_loop(asked)
    try:
        assert isinstance(loop, uvloop.Loop) is is_uvloop
        assert isinstance(loop, asyncio.AbstractEventLoop) and not loop.is_closed()
    finally:
        loop.close()
    assert asyncio.get_event_loop_policy() is policy  # no policy installed


@pytest.mark.usefixtures("without_uvloop")
def test_without_uvloop() -> None:
    loop = new_event_loop()  # None: asyncio's, quietly
    try:
        assert not isinstance(loop, uvloop.Loop)
    finally:
        loop.close()
    with pytest.raises(ConfigError, match="uvloop was asked for and is not installed") as info:
        new_event_loop(uvloop=True)
    assert info.value.__context__ is None  # no ImportError chained onto the message


@pytest.mark.parametrize(("asked", "is_uvloop"), [(None, True), (True, True), (False, False)])
def test_run_runs_main_on_that_loop_and_returns_its_result(
    asked: bool | None, is_uvloop: bool
) -> None:
    async def main() -> bool:
        return isinstance(asyncio.get_running_loop(), uvloop.Loop)

    assert aioinformer.run(main(), uvloop=asked) is is_uvloop


@pytest.mark.usefixtures("without_uvloop")
def test_run_asked_for_a_missing_uvloop_raises_and_closes_main() -> None:
    async def main() -> None:
        pytest.fail("ran without the loop asked for")

    coro = main()
    with pytest.raises(ConfigError, match="uvloop was asked for"):
        aioinformer.run(coro, uvloop=True)
    assert coro.cr_frame is None  # closed: no "never awaited" warning

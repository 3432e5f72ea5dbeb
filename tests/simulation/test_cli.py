"""``python -m aioinformer soak --simulation``: a broken seed exits 1 and prints the
command that replays it; that command replays it exactly, from any process (the command
runs itself again under PYTHONHASHSEED=0 when started under another); a bad argument
exits 2 with one line."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from aioinformer._cli.main import main

TARGET = "tests.simulation.operators:handler_writer"


def _soak(argv: list[str], hash_seed: str | None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = hash_seed
    done = subprocess.run(
        [sys.executable, "-m", "aioinformer", "soak", *argv],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


@pytest.mark.timeout(240)
def test_a_broken_seed_exits_1_and_its_replay_command_replays_it() -> None:
    code, out = _soak(["--simulation", "--target", TARGET, "--seed", "3"], hash_seed="7")
    assert code == 1, out
    verdict = re.search(r"^seed 3 \(.*trace (\w+)\): BROKEN: two-writers", out, re.M)
    assert verdict is not None, out
    replay = re.search(r"replay: (python -m aioinformer soak .*)$", out, re.M)
    assert replay is not None, out
    assert replay.group(1) == f"python -m aioinformer soak --simulation --target {TARGET} --seed 3"
    again_code, again = _soak(shlex.split(replay.group(1))[4:], hash_seed="0")
    assert again_code == 1, again
    assert verdict.group(0) in again, f"first run:\n{out}\nreplay:\n{again}"
    violations = [line for line in out.splitlines() if "two-writers:" in line]
    assert violations == [line for line in again.splitlines() if "two-writers:" in line]
    assert violations


def test_seeds_print_a_summary_and_exit_0_when_every_invariant_holds() -> None:
    code, out = _soak(
        ["--simulation", "--seeds", "2", "--first-seed", "5", "--duration", "15"], "0"
    )
    assert code == 0, out
    assert "2 seeds in " in out and "2 ok, 0 broken" in out, out
    assert "seeds broken, by invariant: none" in out and "fault steps played: " in out, out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--faults", "lost_answer,meteor"], "unknown fault kinds ['meteor']"),
        (["--without", "gremlins"], "unknown fault kinds ['gremlins']"),
        (["--seeds", "0"], "need --seeds >= 1"),
        (["--target", "tests/simulation/nowhere.py:build"], "no such file"),
        (["--target", f"{TARGET}", "--workload", "NOPE"], "no Workload named 'NOPE'"),
    ],
)
def test_a_bad_argument_exits_2_with_one_line(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["soak", "--simulation", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err

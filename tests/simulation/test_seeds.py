"""CI's seeds of the simulation: the reference operator's replicas under every fault kind,
``SEEDS`` seeds in ``CHUNKS`` runs of ``python -m aioinformer soak --simulation`` (what a
user runs, under its fixed PYTHONHASHSEED, so a failing seed's replay line reproduces it
exactly). Every invariant must hold on every seed. ``soak --simulation --seeds 5000`` runs
more of them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SEEDS = 160
"""Seeds CI runs (about 0.25 s of CPU each): seeds 1 to SEEDS."""
CHUNKS = 4
PER_CHUNK = SEEDS // CHUNKS


@pytest.mark.timeout(240)
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_every_invariant_holds_on_every_seed(chunk: int) -> None:
    first = 1 + chunk * PER_CHUNK
    argv = [
        sys.executable, "-m", "aioinformer", "soak", "--simulation",
        "--seeds", str(PER_CHUNK), "--first-seed", str(first),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # (else the command runs itself again so)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=230, check=False, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"seeds {first}..{first + PER_CHUNK - 1}:\n{output}"
    assert f"{PER_CHUNK} seeds in " in output and f"{PER_CHUNK} ok, 0 broken" in output, output

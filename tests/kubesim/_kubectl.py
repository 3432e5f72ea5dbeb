"""Running the real kubectl against KubeSim from a test: binaries, kubeconfig, timeouts.

kubectl runs as a subprocess on the test's event loop (KubeSim serves on the same loop, so
a blocking call would deadlock); it is killed if it outlives its timeout. Tests that use it
skip with a clear reason when the binary is absent.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

SDK_BIN = Path("/usr/lib/google-cloud-sdk/bin")


def kubectl_binary(version: str | None = None) -> str:
    """The kubectl binary for ``version`` ("1.28", "1.33") or the one on PATH; skips the
    test when it is not installed."""
    if version is not None:
        path = SDK_BIN / f"kubectl.{version}"
        if path.exists():
            return str(path)
        pytest.skip(f"kubectl {version} not installed ({path} missing)")
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl not installed")
    return found


@dataclass
class Result:
    code: int
    out: str
    err: str


class Kubectl:
    """One kubectl binary bound to a kubeconfig, with its own discovery cache directory."""

    def __init__(self, binary: str, kubeconfig: Path, cache_dir: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir

    async def run(self, *args: str, stdin: str | None = None, timeout: float = 30.0) -> Result:
        """Run ``kubectl ARGS``; a kubectl still running after ``timeout`` is killed and the
        test fails."""
        proc = await asyncio.create_subprocess_exec(
            self.binary,
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.cache_dir),
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": str(self.cache_dir), "KUBECONFIG": str(self.kubeconfig)},
        )
        try:
            out, err = await asyncio.wait_for(
                proc.communicate(stdin.encode() if stdin is not None else None), timeout
            )
        except TimeoutError:
            pytest.fail(f"kubectl {' '.join(args)} did not finish within {timeout}s")
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proc.returncode is not None
        return Result(proc.returncode, out.decode(), err.decode())

    async def ok(self, *args: str, stdin: str | None = None, timeout: float = 30.0) -> str:
        """Run and require exit status 0; returns stdout."""
        res = await self.run(*args, stdin=stdin, timeout=timeout)
        assert res.code == 0, f"kubectl {' '.join(args)} failed ({res.code}): {res.err}"
        return res.out

"""Running the real kubectl against KubeSim in tests (a subprocess per command)."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from aioinformer.testing import KubeSim

_SDK = Path("/usr/lib/google-cloud-sdk/bin")


def find_kubectl(min_minor: int = 28) -> str | None:
    """A kubectl of version 1.<min_minor> or newer: the SDK's versioned binaries first, then
    ``kubectl`` on PATH (whatever it is)."""
    for minor in range(min_minor, 40):
        candidate = _SDK / f"kubectl.1.{minor}"
        if candidate.exists():
            return str(candidate)
    return shutil.which("kubectl")


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


class Kubectl:
    """``kubectl --kubeconfig <sim's kubeconfig> ...`` as a subprocess."""

    def __init__(self, binary: str, kubeconfig: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig

    async def __call__(self, *args: str, stdin: str | None = None, timeout: float = 60) -> Result:
        proc = await asyncio.create_subprocess_exec(
            self.binary,
            "--kubeconfig",
            str(self.kubeconfig),
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "KUBECACHEDIR": str(self.kubeconfig.parent / "cache")},
        )
        try:
            out, err = await asyncio.wait_for(
                proc.communicate(stdin.encode() if stdin is not None else None), timeout
            )
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        return Result(proc.returncode or 0, out.decode(), err.decode())

    async def ok(self, *args: str, stdin: str | None = None, timeout: float = 60) -> str:
        """Run and require success; the stdout."""
        result = await self(*args, stdin=stdin, timeout=timeout)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result.stdout


@asynccontextmanager
async def kubectl_sim(tmp: Path, *, min_minor: int = 28) -> AsyncIterator[tuple[KubeSim, Kubectl]]:
    """A TLS KubeSim (kubectl sends its bearer token over https only) and a kubectl for it;
    skips the test when no kubectl is installed."""
    binary = find_kubectl(min_minor)
    if binary is None:
        pytest.skip(f"kubectl (1.{min_minor} or newer) is not installed")
    async with KubeSim(tls=True) as sim:
        yield sim, Kubectl(binary, sim.write_kubeconfig(tmp / "kubeconfig"))

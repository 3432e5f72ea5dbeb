"""Running the real kubectl against KubeSim from a test: binaries, kubeconfig, timeouts.

Two ways to run it: :meth:`Kubectl.run` (async) as a subprocess on the test's event loop,
for a KubeSim serving on that same loop (a blocking call would deadlock), and
:meth:`Kubectl.call` (blocking) for a sim in another process. Either way a kubectl still
running after its timeout is killed and the test fails; each binary gets its own discovery
cache directory. Tests that use kubectl skip with a clear reason when it is absent.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from aioinformer.testing import KubeSim

SDK_BIN = Path("/usr/lib/google-cloud-sdk/bin")


def installed_versions() -> list[str]:
    """The versioned kubectl binaries installed ("1.27" ... "1.33"), oldest first."""
    found = [p.name.removeprefix("kubectl.") for p in SDK_BIN.glob("kubectl.1.*")]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def versions_to_test() -> list[str]:
    """1.28 (the recorded server's version) and the newest installed, when present; the
    tests parametrized over them skip when neither is."""
    have = installed_versions()
    chosen = [v for v in ("1.28",) if v in have] + have[-1:]
    return sorted(set(chosen), key=have.index) or ["1.28"]


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


def find_kubectl(min_minor: int = 28) -> str | None:
    """A kubectl of version 1.<min_minor> or newer: the SDK's versioned binaries first, then
    ``kubectl`` on PATH (whatever it is)."""
    for minor in range(min_minor, 40):
        candidate = SDK_BIN / f"kubectl.1.{minor}"
        if candidate.exists():
            return str(candidate)
    return shutil.which("kubectl")


@dataclass
class Result:
    """What one kubectl run gave: exit status, stdout, stderr."""

    code: int
    out: str
    err: str


class Kubectl:
    """One kubectl binary bound to a kubeconfig, with its own discovery cache directory
    (``cache_dir``, by default beside the kubeconfig)."""

    def __init__(self, binary: str, kubeconfig: Path, cache_dir: Path | None = None) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir or kubeconfig.parent / "kubectl-cache"

    def argv(self, *args: str) -> list[str]:
        """The command line of ``kubectl ARGS`` for this kubeconfig and cache."""
        return [
            self.binary,
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.cache_dir),
            *args,
        ]

    def env(self) -> dict[str, str]:
        """The environment kubectl runs in (its HOME is the cache directory)."""
        return {**os.environ, "HOME": str(self.cache_dir), "KUBECONFIG": str(self.kubeconfig)}

    async def run(self, *args: str, stdin: str | None = None, timeout: float = 30.0) -> Result:
        """Run ``kubectl ARGS`` on the running loop; a kubectl still running after
        ``timeout`` is killed and the test fails."""
        proc = await asyncio.create_subprocess_exec(
            *self.argv(*args),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env(),
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

    __call__ = run

    async def ok(self, *args: str, stdin: str | None = None, timeout: float = 30.0) -> str:
        """:meth:`run` and require exit status 0; returns stdout."""
        res = await self.run(*args, stdin=stdin, timeout=timeout)
        assert res.code == 0, f"kubectl {' '.join(args)} failed ({res.code}): {res.err}"
        return res.out

    def call(self, *args: str, stdin: str | None = None, timeout: float = 30.0) -> Result:
        """Run ``kubectl ARGS`` and wait for it (for a sim in another process); killed and
        failing the test after ``timeout``."""
        try:
            done = subprocess.run(
                self.argv(*args),
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=self.env(),
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"kubectl {' '.join(args)} did not finish within {timeout}s")
        return Result(done.returncode, done.stdout, done.stderr)

    def check(self, *args: str, stdin: str | None = None, timeout: float = 30.0) -> str:
        """:meth:`call` and require exit status 0; returns stdout."""
        res = self.call(*args, stdin=stdin, timeout=timeout)
        assert res.code == 0, f"kubectl {' '.join(args)} failed ({res.code}): {res.err}"
        return res.out


@asynccontextmanager
async def kubectl_sim(tmp: Path, *, min_minor: int = 28) -> AsyncIterator[tuple[KubeSim, Kubectl]]:
    """A TLS KubeSim (kubectl sends its bearer token over https only) and a kubectl for it;
    skips the test when no kubectl is installed."""
    binary = find_kubectl(min_minor)
    if binary is None:
        pytest.skip(f"kubectl (1.{min_minor} or newer) is not installed")
    async with KubeSim(tls=True) as sim:
        yield sim, Kubectl(binary, sim.write_kubeconfig(tmp / "kubeconfig"))

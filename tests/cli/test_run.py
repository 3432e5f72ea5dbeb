"""``python -m aioinformer run`` over real processes: an operator from a file against
``python -m aioinformer sim`` converges, answers /readyz once synced, and on SIGTERM stops
gracefully, releases its Lease and exits 0; configuration errors (a bad kubeconfig or
TARGET, a metrics port in use) are one line."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from aioinformer import Client
from aioinformer._client.config import load_api_client
from aioinformer.testing import KubeSim, eventually, install_crd
from tests.support import REPO, released_lease

PODSET = {
    "apiVersion": "example.aioinformer.dev/v1",
    "kind": "PodSet",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 3,
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]},
        },
    },
}


class Process:
    """A child ``python -m aioinformer ...`` whose output lines are collected."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            self.lines.append(raw.decode(errors="replace").rstrip())

    def find(self, pattern: str) -> re.Match[str] | None:
        return next((m for line in self.lines if (m := re.search(pattern, line))), None)

    async def stop(self) -> int:
        """SIGTERM (it cleans up after itself), then SIGKILL if it is still there after 10 s."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
        code = await self.proc.wait()
        await self._reader
        return code


@contextlib.asynccontextmanager
async def spawn(*args: str) -> AsyncIterator[Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=REPO,
    )
    child = Process(proc)
    try:
        yield child
    finally:
        await child.stop()


async def test_an_operator_runs_is_ready_and_stops_on_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "sim.kubeconfig"
    async with spawn(
        "sim", "--port", "0", "--kubeconfig-out", str(kubeconfig), "--nodes", "3", "--cluster",
        "--start-delay", "0.1",
    ) as sim:  # fmt: skip
        await eventually(lambda: sim.find("KubeSim serving on") is not None, "the sim", timeout=30)
        async with await load_api_client(str(kubeconfig)) as api:
            client = Client(api)
            await install_crd(client, REPO / "examples" / "crds" / "podset.yaml")
            await client.create(PODSET)
            await client.create(released_lease("podset-operator", "default"))  # (taken at once)
            async with spawn(
                "run", "examples/podset.py:build", "--kubeconfig", str(kubeconfig),
                "--metrics-port", "0", "--metrics-host", "127.0.0.1",
                "--leader-election", "podset-operator", "--lease-namespace", "default",
                "--identity", "replica-a", "--shutdown-timeout", "3",
            ) as operator:  # fmt: skip
                port_line = r"serving /metrics, /healthz, /readyz on 127\.0\.0\.1:(\d+)"
                await eventually(
                    lambda: operator.find(port_line) is not None, "the port", timeout=30
                )
                match = operator.find(port_line)
                assert match is not None
                url = f"http://127.0.0.1:{match.group(1)}"

                async def status(path: str) -> int:
                    async with aiohttp.ClientSession() as http, http.get(url + path) as resp:
                        return resp.status

                await eventually(lambda: _is(status("/readyz"), 200), "/readyz 200", timeout=30)
                assert await status("/healthz") == 200

                async def converged() -> bool:
                    got = await client.get("example.aioinformer.dev/v1", "PodSet", "web", "default")
                    return got.field("status.readyReplicas") == 3

                await eventually(converged, "the PodSet to converge", timeout=60)
                lease = await client.get(
                    "coordination.k8s.io/v1", "Lease", "podset-operator", "default"
                )
                assert lease.field("spec.holderIdentity") == "replica-a"

                operator.proc.send_signal(signal.SIGTERM)
                code = await asyncio.wait_for(operator.proc.wait(), 30)
                await eventually(lambda: operator.find("stopped") is not None, "the last line")
                assert code == 0, "\n".join(operator.lines)
                assert not operator.find("Traceback|abandoned")
            lease = await client.get(
                "coordination.k8s.io/v1", "Lease", "podset-operator", "default"
            )
            assert not lease.field("spec.holderIdentity")  # released on the way out


NEVER_SYNCS = """
from aioinformer import Manager


def build(manager: Manager) -> None:
    manager.informer("v1", "configmaps")
    for resource in ("secrets", "pods"):  # lists answered 400: they never sync
        manager.informer("v1", resource, field_selector="no.such.field=x")
"""


async def test_sigterm_during_the_initial_sync_stops_quietly(tmp_path: Path) -> None:
    """SIGTERM while the operator waits for informers that cannot sync (their lists are
    answered 400) stops it with exit code 0 and nothing asyncio reports on the way out ("exception
    was never retrieved", "Task was destroyed but it is pending"), no traceback."""
    kubeconfig = tmp_path / "sim.kubeconfig"
    (tmp_path / "never_syncs.py").write_text(NEVER_SYNCS)
    async with spawn(
        "sim", "--port", "0", "--kubeconfig-out", str(kubeconfig), "--start-delay", "0.1",
    ) as sim:  # fmt: skip
        await eventually(lambda: sim.find("KubeSim serving on") is not None, "the sim", timeout=30)
        async with spawn(
            "run", f"{tmp_path / 'never_syncs.py'}:build", "--kubeconfig", str(kubeconfig),
            "--metrics-port", "0", "--metrics-host", "127.0.0.1",
        ) as operator:  # fmt: skip
            await eventually(
                lambda: operator.find("list pods.*400") is not None,
                "the wait for the initial sync",
                timeout=30,
            )
            operator.proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(operator.proc.wait(), 30)
            await operator.stop()  # (reads the rest of its output)
            output = "\n".join(operator.lines)
            assert code == 0, output
            assert operator.find("stopped") is not None, output
            assert not operator.find("never retrieved|was destroyed|Traceback"), output


WITNESSED = """
import atexit
import threading

from aioinformer import Manager


class Witness:
    def __del__(self) -> None:  # runs only if the interpreter tears its modules down
        print("torn down", flush=True)


WITNESS = Witness()
atexit.register(lambda: print("atexit ran, threads:", sorted(
    t.name for t in threading.enumerate() if not t.daemon), flush=True))


def build(manager: Manager) -> None:
    manager.informer("v1", "configmaps")
"""


async def test_after_stopped_the_process_exits_without_the_interpreter_teardown(
    sim: KubeSim, tmp_path: Path
) -> None:
    """Once ``stopped`` is logged, nothing is left to wait for: the non-daemon threads
    have ended, the atexit handlers run and the streams are flushed, and the process ends
    without tearing every module down (kubernetes_asyncio's: 0.3 s of a pod's
    termination, for nothing)."""
    kubeconfig = tmp_path / "sim.kubeconfig"
    sim.write_kubeconfig(kubeconfig)
    (tmp_path / "witnessed.py").write_text(WITNESSED)
    async with spawn(
        "run", f"{tmp_path / 'witnessed.py'}:build", "--kubeconfig", str(kubeconfig),
        "--metrics-port", "0", "--metrics-host", "127.0.0.1",
    ) as operator:  # fmt: skip
        await eventually(lambda: operator.find("serving /metrics") is not None, "the start")
        operator.proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(operator.proc.wait(), 30)
        await operator.stop()
    output = "\n".join(operator.lines)
    assert code == 0, output
    assert [line for line in operator.lines if "stopped" in line or "atexit" in line][-1:] == [
        "atexit ran, threads: ['MainThread']"
    ], output
    assert operator.find("torn down") is None, output


async def _is(status: object, want: int) -> bool:
    try:
        return await status == want  # type: ignore[misc]
    except aiohttp.ClientError:
        return False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "examples/podset.py:build", "--kubeconfig", "/nonexistent"],
         "python -m aioinformer run: kubeconfig /nonexistent: no such file"),
        (["run", "examples/nope.py:build", "--kubeconfig", "/nonexistent"],
         "python -m aioinformer run: examples/nope.py:build: no such file examples/nope.py"),
        (["run", "aioinformer.nothing:build", "--kubeconfig", "/nonexistent"],
         "python -m aioinformer run: aioinformer.nothing:build: no module named 'aioinformer.nothing'"),
    ],
)  # fmt: skip
async def test_configuration_errors_are_one_line(args: list[str], message: str) -> None:
    async with spawn(*args) as child:
        code = await asyncio.wait_for(child.proc.wait(), 60)
    assert code == 2
    assert child.lines[-1] == message and not child.find("Traceback")


async def test_a_metrics_port_in_use_is_one_line(sim: KubeSim, tmp_path: Path) -> None:
    kubeconfig = sim.write_kubeconfig(tmp_path / "kc")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with spawn(
            "run", "examples/podset.py:build", "--kubeconfig", str(kubeconfig),
            "--metrics-host", "127.0.0.1", "--metrics-port", str(port),
        ) as child:  # fmt: skip
            code = await asyncio.wait_for(child.proc.wait(), 60)
    assert code == 2
    assert child.lines[-1] == (
        f"python -m aioinformer run: cannot serve /metrics on 127.0.0.1:{port}: "
        "Address already in use"
    )
    assert not child.find("Traceback")

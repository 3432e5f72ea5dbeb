"""KubeSim as users run it, ``python -m aioinformer sim``, in a subprocess of the test.

The sim serves https on a free port of 127.0.0.1 and writes its kubeconfig (0600, the CA
inside), exactly what a user points kubectl, kopf or a Python client at. Clients that run
as their own processes or block (kubectl, kopf, the official synchronous client) talk to
it as to a cluster; the test reads the server's state back over the same HTTP API.
:func:`sim_process` stops the sim (SIGTERM, then SIGKILL) whatever happens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from tests.support import REPO

#: Options every client test sim gets: one Ready node and the scheduler/kubelet emulation,
#: so pods get Running and Ready and their events, as on a small cluster.
CLUSTER = ("--nodes", "1", "--cluster", "--start-delay", "0.05")


@dataclass
class SimProcess:
    """A running ``python -m aioinformer sim``: its kubeconfig, URL and credentials."""

    proc: subprocess.Popen[bytes]
    kubeconfig: Path
    url: str
    token: str
    ca_file: str
    log: Path

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """One request as the admin; (status, decoded JSON body or text)."""
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = body if isinstance(body, str | bytes) else json.dumps(body)
        r = requests.request(
            method,
            self.url + path,
            data=data,
            headers=headers,
            params=params,
            verify=self.ca_file,
            timeout=30,
        )
        try:
            return r.status_code, r.json()
        except ValueError:
            return r.status_code, r.text

    def get(self, path: str) -> Any:
        """GET ``path``; the object (fails the test unless the answer is 200)."""
        status, body = self.request("GET", path)
        assert status == 200, (path, status, body)
        return body

    def exists(self, path: str) -> bool:
        """Whether GET ``path`` finds an object (200) rather than 404."""
        status, body = self.request("GET", path)
        assert status in (200, 404), (path, status, body)
        return status == 200


def wait_for(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` after ``timeout`` seconds (a hang
    guard, not a measurement)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


@contextmanager
def sim_process(workdir: Path, *args: str, aioinformer: Path = REPO) -> Iterator[SimProcess]:
    """Run ``python -m aioinformer sim --port 0 --kubeconfig-out ... ARGS`` (https) from
    the ``aioinformer`` checkout; yields once the kubeconfig is written (the sim is then
    serving); stops the process on exit."""
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig"
    log = workdir / "sim.log"
    path = [str(aioinformer), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    cmd = [sys.executable, "-m", "aioinformer", "sim", "--port", "0"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--kubeconfig-out", str(kubeconfig), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=workdir,
        )
    try:
        wait_for(
            lambda: proc.poll() is not None or b"serving on" in log.read_bytes(),
            "python -m aioinformer sim to serve",
        )
        assert proc.poll() is None, f"the sim exited: {log.read_text()}"
        doc = json.loads(kubeconfig.read_text())
        cluster = doc["clusters"][0]["cluster"]
        yield SimProcess(
            proc,
            kubeconfig,
            cluster["server"],
            doc["users"][0]["user"]["token"],
            cluster["certificate-authority"],
            log,
        )
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

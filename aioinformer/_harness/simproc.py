"""KubeSim in a child process, driven from the parent: for benchmarks and load tests.

A benchmark that runs the server and the client in one process measures neither: they
share one event loop and one core. :class:`SimProcess` starts KubeSim in its own Python
process (``python -m aioinformer._harness.simchild``), reads its address and token, and
sends it commands over a pipe (populate pods, add nodes, run the scheduler/kubelet
emulation, kubelet-like status churn at a given rate, a log of commit times, its RSS and
CPU). Clients talk to it over HTTP like to any API server: :meth:`SimProcess.api_client`.

Contracts: one command at a time (calls are serialised); a command that fails in the
child raises :class:`SimProcessError` with the child's message; leaving the ``async with``
block closes the pipe, waits for the child to exit (kills it after a few seconds) and
leaves no process behind. The token is never logged or put in an error.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self

import orjson

from aioinformer._core.errors import AioinformerError

__all__ = ["SimProcess", "SimProcessError", "sim_api_client"]


class SimProcessError(AioinformerError):
    """The KubeSim child process failed to start, died, or refused a command."""


class SimProcess:
    """``async with SimProcess() as sim:`` KubeSim serving from a child process.

    Attributes once started: ``url``, ``token``, ``pid``. Commands: :meth:`populate`,
    :meth:`add_nodes`, :meth:`start_cluster`, :meth:`churn`, :meth:`record`,
    :meth:`commits`, :meth:`stats` (see :mod:`aioinformer._harness.simchild`).
    """

    def __init__(
        self, *, history_size: int = 100_000, watch_list: bool = False, start_timeout: float = 30.0
    ) -> None:
        self._args = ["--history-size", str(history_size)]
        if watch_list:
            self._args.append("--watch-list")
        self._start_timeout = start_timeout
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self.url = ""
        self.token = ""
        self.pid = 0

    def __repr__(self) -> str:
        return f"<SimProcess pid={self.pid} url={self.url or '-'}>"

    async def __aenter__(self) -> Self:
        self._proc = await spawn_python("aioinformer._harness.simchild", *self._args)
        try:
            hello = await asyncio.wait_for(self._read(), self._start_timeout)
        except BaseException:
            await self._close()
            raise
        self.url, self.token, self.pid = hello["url"], hello["token"], hello["pid"]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._close()

    # -- commands -----------------------------------------------------------------------------

    async def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Send one command; its reply (without ``ok``). Raises :class:`SimProcessError`."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise SimProcessError("the KubeSim child process is not running")
        async with self._lock:
            proc.stdin.write(orjson.dumps({"op": op, **args}) + b"\n")
            await proc.stdin.drain()
            reply = await self._read()
        if not reply.pop("ok", False):
            raise SimProcessError(f"KubeSim child: {op} failed: {reply.get('error')}")
        return reply

    async def populate(
        self,
        owners: int,
        pods: int,
        *,
        namespaces: int = 20,
        nodes: int = 100,
        bound: bool = True,
        prefix: str = "sts",
    ) -> dict[str, Any]:
        """Create ``owners`` x ``pods`` StatefulSet-like pods; ``bound`` ones Running on
        ``nodes`` node names, the others Pending for the emulation. Returns pods, seconds, rv."""
        return await self.call(
            "populate",
            owners=owners,
            pods=pods,
            namespaces=namespaces,
            nodes=nodes,
            bound=bound,
            prefix=prefix,
        )

    async def add_nodes(self, n: int) -> list[str]:
        """Add ``n`` Ready nodes; their names."""
        names: list[str] = (await self.call("nodes", n=n))["names"]
        return names

    async def start_cluster(self, **options: Any) -> dict[str, Any]:
        """Start or reconfigure the scheduler/kubelet emulation (``schedule_rate``,
        ``start_rate``, ``start_delay``, ...)."""
        return await self.call("cluster", **options)

    async def churn(self, rate: float) -> int:
        """Kubelet-like status writes at ``rate``/s (0 stops); returns writes so far."""
        writes: int = (await self.call("churn", rate=rate))["writes"]
        return writes

    async def record(self) -> int:
        """Start recording pod commit times (drops earlier records); returns the RV."""
        rv: int = (await self.call("record"))["rv"]
        return rv

    async def commits(self) -> list[tuple[int, float]]:
        """(resourceVersion, monotonic commit time) of pod changes since the last call.
        Raises if the recorder lost events (it polls the watch cache; widen history_size)."""
        reply = await self.call("commits")
        if reply["lost"]:
            raise SimProcessError("commit log lost events: raise history_size")
        return [(int(rv), float(t)) for rv, t in reply["commits"]]

    async def stats(self) -> dict[str, Any]:
        """rss_bytes, cpu_seconds, rv, pods, churn_writes and the emulation's counters."""
        return await self.call("stats")

    def kubeconfig(self) -> dict[str, Any]:
        """A kubeconfig document (dict) for the child's server."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kubesim", "cluster": {"server": self.url}}],
            "users": [{"name": "kubesim-admin", "user": {"token": self.token}}],
            "contexts": [
                {"name": "kubesim", "context": {"cluster": "kubesim", "user": "kubesim-admin"}}
            ],
            "current-context": "kubesim",
        }

    def api_client(self) -> Any:
        """A kubernetes_asyncio ``ApiClient`` for the child's server (close it after use)."""
        return sim_api_client(self.url, self.token)

    # -- plumbing -----------------------------------------------------------------------------

    async def _read(self) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        line = await self._proc.stdout.readline()
        if not line:
            code = await self._proc.wait()
            raise SimProcessError(f"the KubeSim child process exited (status {code})")
        reply: dict[str, Any] = orjson.loads(line)
        return reply

    async def _close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        except asyncio.CancelledError:
            proc.kill()
            await proc.wait()
            raise


def sim_api_client(url: str, token: str) -> Any:
    """A kubernetes_asyncio ``ApiClient`` for a KubeSim at ``url`` with a bearer ``token``
    (close it after use): what a benchmark's informer process talks to the sim with."""
    from kubernetes_asyncio import client

    cfg = client.Configuration()
    cfg.host = url
    cfg.api_key = {"BearerToken": token}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    return client.ApiClient(configuration=cfg)


async def parent_messages() -> Callable[[], Awaitable[dict[str, Any]]]:
    """In a child process: ``receive()`` for the JSON objects the parent writes on stdin,
    one per line (up to 64 MiB); ``receive()`` raises ``SystemExit(0)`` once the parent
    has closed the pipe."""
    reader = asyncio.StreamReader(limit=64 << 20)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def receive() -> dict[str, Any]:
        line = await reader.readline()
        if not line:
            raise SystemExit(0)
        msg: dict[str, Any] = orjson.loads(line)
        return msg

    return receive


async def answer_parent(hello: dict[str, Any], commands: Mapping[str, Callable[..., Any]]) -> None:
    """In a child process: write ``hello`` (one JSON line) to the parent, then answer each
    command it sends (``{"op": NAME, **kwargs}`` -> ``commands[NAME](**kwargs)``, awaited
    if it returns a coroutine) with ``{"ok": True, **result}``, or ``{"ok": False,
    "error": ...}`` when it raised (the parent raises it); returns once the parent has
    closed the pipe."""
    out = sys.stdout.buffer
    out.write(orjson.dumps(hello) + b"\n")
    out.flush()
    receive = await parent_messages()
    while True:
        try:
            request = await receive()
        except SystemExit:
            return
        try:
            result = commands[request.pop("op")](**request)
            if asyncio.iscoroutine(result):
                result = await result
            reply = {"ok": True, **result}
        except Exception as exc:  # reported to the parent, which raises it
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        out.write(orjson.dumps(reply) + b"\n")
        out.flush()


_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


async def spawn_python(
    module: str, *args: str, env: dict[str, str] | None = None
) -> asyncio.subprocess.Process:
    """``python -m module args`` with pipes on stdin and stdout (lines up to 256 MiB), this
    ``aioinformer`` package first on its PYTHONPATH (the child imports the same copy, from
    a checkout or site-packages), and ``env`` added to the environment."""
    child_env = {**os.environ, **(env or {})}
    path = (_PACKAGE_ROOT, child_env.get("PYTHONPATH"))
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=child_env,
        limit=256 << 20,
    )


def asker(
    child: asyncio.subprocess.Process, what: str, timeout: float | None = None
) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """The request/answer channel to a child made by :func:`spawn_python` (or with pipes
    on stdin and stdout): each call writes one JSON line and reads one back (within
    ``timeout`` seconds, None: no limit); a child that exited is a RuntimeError naming
    ``what`` and its exit status."""
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def ask(msg: dict[str, Any]) -> dict[str, Any]:
        stdin.write(orjson.dumps(msg) + b"\n")
        await stdin.drain()
        line = await asyncio.wait_for(stdout.readline(), timeout)
        if not line:
            raise RuntimeError(f"{what}: the informer process exited ({await child.wait()})")
        reply: dict[str, Any] = orjson.loads(line)
        return reply

    return ask

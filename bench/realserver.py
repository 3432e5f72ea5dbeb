"""A real API server as bench/staleness_bench.py's target: a fresh namespace, pods, a writer.

``async with RealServer(kubeconfig, patch="status") as server:`` connects with the
kubeconfig (aioinformer's own loader, as the informer's process does) and creates a fresh
namespace ``stalebench-<hex>``. :meth:`RealServer.populate` creates the StatefulSet-shaped
pods KubeSim's mode makes (:func:`~aioinformer._harness.workload.realistic_pod`: 1000 per
owner, bound to one of 100 node names) and writes each one's Running status itself (no
kubelet is needed), about 3.8 KB of JSON each without managedFields; then it starts the
writer process (``bench/_realwriter.py``), which makes the PATCHes (:meth:`churn`) and logs
each one's resourceVersion, response time and latency (:meth:`commits`).

Leaving the block, normally, on an error or on Ctrl-C (the writer ignores SIGINT: this
process ends it), ends the writer and removes the namespace as the namespace controller
would (a bare kube-apiserver runs none): the namespace is deleted, its pods deleted
without grace (no kubelet confirms a graceful deletion), and the ``kubernetes`` finalizer
removed through ``/finalize``; it waits (bounded) until the namespace is gone (what it could
not remove is printed and kept in ``left_behind``: the measurements stand). With
``server_pids``, :meth:`server_rss` sums their resident memory.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import sys
from types import TracebackType
from typing import Any, Self

import orjson

from aioinformer._client.config import load_api_client
from aioinformer._client.rest import Request, RestClient
from aioinformer._core.errors import Conflict, NotFound, ServerTimeout
from aioinformer._harness.simproc import spawn_python
from aioinformer._harness.workload import realistic_pod, statefulset_uid

__all__ = ["RealServer", "remove_namespace"]

#: Requests in flight while pods are created.
POPULATE_CONCURRENCY = 32
_MERGE = "application/merge-patch+json"
_WRITER = "bench._realwriter"


class RealServer:
    """The benchmark's view of a real API server (see the module docstring)."""

    def __init__(
        self,
        kubeconfig: str,
        *,
        patch: str = "status",
        server_pids: list[int] | None = None,
        cleanup_seconds: float = 600.0,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.patch = patch
        self.server_pids = list(server_pids or [])
        self.cleanup_seconds = cleanup_seconds
        self.namespace = f"stalebench-{secrets.token_hex(4)}"
        self.owners = 0
        self._api: Any = None
        self._rest: RestClient | None = None
        self._writer: asyncio.subprocess.Process | None = None
        self._created = False
        self.version = ""
        self.left_behind = ""  #: what cleanup could not remove, if anything
        self.writer_pid = 0

    async def __aenter__(self) -> Self:
        self._api = await load_api_client(self.kubeconfig)
        self._rest = RestClient(self._api)
        try:
            about = Request("get", "version")
            self.version = (await self._rest.request_json("GET", "/version", about))["gitVersion"]
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
            await self._rest.request_json(
                "POST", "/api/v1/namespaces", Request("create", "namespaces"), body=body
            )
            self._created = True
        except BaseException:
            await self._api.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._end_writer()
            if self._created and self._rest is not None:
                await remove_namespace(self._rest, self.namespace, self.cleanup_seconds)
        except Exception as exc:  # (the measurements stand: said, and in the report)
            self.left_behind = f"namespace {self.namespace} not removed ({exc})"
            print(f"staleness_bench: {self.left_behind}: delete it by hand", file=sys.stderr)
        finally:
            await self._api.close()

    # -- the pods -----------------------------------------------------------------------------

    async def populate(self, owners: int, pods: int, *, nodes: int = 100) -> dict[str, Any]:
        """Create ``owners`` x ``pods`` Running pods ``sts-<o>-<i>`` with their status
        written, then start the writer over them. Returns pods, seconds, rv."""
        assert self._rest is not None
        rest, ns = self._rest, self.namespace
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        work = [(o, i) for o in range(owners) for i in range(pods)]
        names = [f"sts-{o}-{i}" for o, i in work]
        last_rv = 0

        async def worker(share: list[tuple[int, int]]) -> None:
            nonlocal last_rv
            for o, i in share:
                pod = realistic_pod(
                    ns, f"sts-{o}", i, node=f"node-{(o * pods + i) % nodes}", phase="Running"
                )
                status = pod.pop("status")
                name = pod["metadata"]["name"]
                path = f"/api/v1/namespaces/{ns}/pods"
                await rest.request_json("POST", path, Request("create", "pods", ns), body=pod)
                answer = await rest.request_json(
                    "PATCH",
                    f"{path}/{name}/status",
                    Request("patch", "pods", ns, name),
                    body={"status": status},
                    content_type=_MERGE,
                )
                last_rv = max(last_rv, int(answer["metadata"]["resourceVersion"]))

        await asyncio.gather(
            *(worker(work[k::POPULATE_CONCURRENCY]) for k in range(POPULATE_CONCURRENCY))
        )
        self.owners = owners
        await self._start_writer(names)
        return {"pods": len(work), "seconds": loop.time() - t0, "rv": last_rv}

    def owner_uids(self) -> list[str]:
        """The controller uids of the populated owners (the informer's ``index`` readers)."""
        return [statefulset_uid(self.namespace, f"sts-{o}") for o in range(self.owners)]

    # -- the staleness benchmark's target -----------------------------------------------------

    def informer_config(self) -> dict[str, Any]:
        """What the informer's process needs to reach the pods (bench/_stalechild.py)."""
        return {"kubeconfig": self.kubeconfig, "namespace": self.namespace}

    def child_env(self) -> dict[str, str]:
        return {}

    async def record(self) -> None:
        await self._ask({"op": "record"})

    async def churn(self, rate: float) -> None:
        await self._ask({"op": "churn", "rate": rate})

    async def last_rv(self) -> int:
        rv: int = (await self._ask({"op": "stats"}))["rv"]
        return rv

    async def commits(self) -> dict[str, Any]:
        """Since the last call: ``commits`` [(rv, response time)], ``latencies``
        [(response time, seconds)], ``errors``, ``skipped``, ``last_error``."""
        reply = await self._ask({"op": "commits"})
        reply["commits"] = [(int(rv), float(t)) for rv, t in reply["commits"]]
        return reply

    def server_rss(self) -> int | None:
        """The server processes' resident memory (None without ``server_pids``)."""
        if not self.server_pids:
            return None
        total = 0
        for pid in self.server_pids:
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except OSError:
                pass
        return total

    # -- the writer process -------------------------------------------------------------------

    async def _start_writer(self, names: list[str]) -> None:
        await self._end_writer()
        self._writer = await spawn_python(_WRITER, env={"PYTHONPATH": _bench_path()})
        self.writer_pid = self._writer.pid
        cfg = {
            "kubeconfig": self.kubeconfig,
            "namespace": self.namespace,
            "names": names,
            "patch": self.patch,
        }
        await self._ask(cfg)

    async def _ask(self, msg: dict[str, Any]) -> dict[str, Any]:
        child = self._writer
        if child is None or child.stdin is None or child.stdout is None:
            raise RuntimeError("the writer process is not running (populate first)")
        child.stdin.write(orjson.dumps(msg) + b"\n")
        await child.stdin.drain()
        line = await child.stdout.readline()
        if not line:
            raise RuntimeError(f"the writer process exited ({await child.wait()})")
        reply: dict[str, Any] = orjson.loads(line)
        if "error" in reply:
            raise RuntimeError(f"the writer process: {reply['error']}")
        return reply

    async def _end_writer(self) -> None:
        child, self._writer = self._writer, None
        if child is None or child.returncode is not None:
            return
        assert child.stdin is not None
        child.stdin.close()
        try:
            await asyncio.wait_for(child.wait(), 30)
        except (TimeoutError, asyncio.CancelledError):
            child.send_signal(signal.SIGKILL)
            await child.wait()


def _bench_path() -> str:
    """The writer's PYTHONPATH: this checkout first (``bench`` is a directory of it)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)


async def remove_namespace(rest: RestClient, namespace: str, timeout: float) -> None:
    """Delete ``namespace`` and everything in it as the namespace controller would (its
    pods without grace, then the ``kubernetes`` finalizer through ``/finalize``), and wait
    until it is gone; TimeoutError naming it after ``timeout`` seconds."""
    path = f"/api/v1/namespaces/{namespace}"
    about = Request("delete", "namespaces", None, namespace)
    try:
        await rest.request_json("DELETE", path, about)
    except NotFound:
        return
    except Conflict:  # already being deleted (Terminating): empty it all the same
        pass
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:  # (tens of thousands of pods outlast the server's request timeout: again)
            await rest.request_json(
                "DELETE",
                f"{path}/pods",
                Request("deletecollection", "pods", namespace),
                query=[("gracePeriodSeconds", "0")],
            )
        except ServerTimeout:
            pass
        pods = await rest.request_json(
            "GET", f"{path}/pods", Request("list", "pods", namespace), query=[("limit", "1")]
        )
        if not pods.get("items"):
            break
        await _pause(deadline, f"the pods of namespace {namespace}")
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace},
        "spec": {"finalizers": []},
    }
    try:
        await rest.request_json(
            "PUT", f"{path}/finalize", Request("finalize", "namespaces", None, namespace), body=body
        )
    except (NotFound, Conflict):  # a namespace controller finished first
        pass
    while True:
        try:
            await rest.request_json("GET", path, Request("get", "namespaces", None, namespace))
        except NotFound:
            return
        await _pause(deadline, f"namespace {namespace}")


async def _pause(deadline: float, what: str) -> None:
    if asyncio.get_running_loop().time() >= deadline:
        raise TimeoutError(f"{what} still there: remove it by hand")
    await asyncio.sleep(0.2)

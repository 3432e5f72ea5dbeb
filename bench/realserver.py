"""A real API server as bench/staleness_bench.py's target: a fresh namespace, pods, a writer.

``async with RealServer(kubeconfig, patch="status") as server:`` connects with the
kubeconfig (aioinformer's own loader, as the informer's process does) and creates a fresh
namespace ``stalebench-<hex>``. :meth:`RealServer.populate` creates the StatefulSet-shaped
pods KubeSim's mode makes (:func:`~aioinformer._harness.workload.realistic_pod`: 1000 per
owner, bound to one of 100 node names) and writes each one's Running status itself (no
kubelet is needed), about 3.8 KB of JSON each without managedFields, with
:data:`POPULATE_CONCURRENCY` requests in flight over one HTTP session of its own
(:class:`PodPopulator`); then it starts the
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
import ssl
import sys
from collections.abc import Iterable
from types import TracebackType
from typing import Any, Self

import aiohttp
import orjson

from aioinformer._client.config import load_api_client
from aioinformer._client.rest import Request, RestClient
from aioinformer._core.errors import Conflict, NotFound, ServerTimeout
from aioinformer._harness.simproc import spawn_python
from aioinformer._harness.workload import realistic_pod, statefulset_uid

__all__ = ["PodPopulator", "RealServer", "remove_namespace"]

#: Requests in flight while pods are created.
POPULATE_CONCURRENCY = 64
#: Answers a populating request is tried again on (the server is busy), and how often.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
RETRIES = 8
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

    async def populate(
        self, owners: int, pods: int, *, nodes: int = 100, concurrency: int = POPULATE_CONCURRENCY
    ) -> dict[str, Any]:
        """Create ``owners`` x ``pods`` Running pods ``sts-<o>-<i>`` with their status
        written, then start the writer over them. Returns pods, seconds, rv.

        Each pod is a create then a status write (a create resets a pod's status), through
        :class:`PodPopulator`: ``concurrency`` requests in flight over one HTTP session."""
        assert self._api is not None
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        work = [(o, i) for o in range(owners) for i in range(pods)]
        async with await PodPopulator.connect(self._api, self.namespace, concurrency) as writer:
            await writer.populate(
                realistic_pod(
                    self.namespace, f"sts-{o}", i, node=f"node-{(o * pods + i) % nodes}",
                    phase="Running",
                )
                for o, i in work
            )  # fmt: skip
        self.owners = owners
        await self._start_writer([f"sts-{o}-{i}" for o, i in work])
        return {"pods": len(work), "seconds": loop.time() - t0, "rv": writer.last_rv}

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


class PodPopulator:
    """Creates pods and writes their status, ``concurrency`` requests in flight over one
    aiohttp session to the API server of a kubernetes_asyncio ``ApiClient``'s
    configuration (its address, TLS and credentials at the start). The session looks up
    no proxy and no ``.netrc`` per request (``trust_env`` off): kubernetes_asyncio's own
    session does both, in a worker thread, for every request, which made the client the
    bottleneck of creating tens of thousands of pods. A request the server answers with
    429 or 5xx, or that fails to connect, is tried again (at most :data:`RETRIES` times,
    backing off); a create tried again that finds its pod made (409) is done.
    ``last_rv`` is the largest resourceVersion a status write answered."""

    def __init__(
        self, session: aiohttp.ClientSession, server: str, namespace: str, concurrency: int
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.session = session
        self.server = server  #: the API server's URL (scheme, host, port, any path prefix)
        self.namespace = namespace
        self.concurrency = concurrency
        self.last_rv = 0
        self.retried = 0  #: requests tried again

    @classmethod
    async def connect(cls, api: Any, namespace: str, concurrency: int) -> PodPopulator:
        """A populator for ``api``'s server (its credentials read once, now)."""
        cfg = api.configuration
        context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file:
            context.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
        if not cfg.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        for auth in (await cfg.auth_settings()).values():  # (a bearer token, if any)
            if auth["in"] == "header" and auth["value"]:
                headers[auth["key"]] = auth["value"]
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=concurrency, ssl=context), headers=headers
        )
        return cls(session, cfg.host.rstrip("/"), namespace, concurrency)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.close()

    async def populate(self, pods: Iterable[dict[str, Any]]) -> int:
        """Create every pod of ``pods`` (their ``status`` written after the create);
        returns how many. The first error that retries do not cure is raised."""
        queue = iter(pods)
        done = 0

        async def worker() -> None:
            nonlocal done
            for pod in queue:  # (one iterator shared: each pod taken once)
                await self.create(pod)
                done += 1

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        return done

    async def create(self, pod: dict[str, Any]) -> None:
        """Create ``pod`` (a copy without its status), then merge-patch its status."""
        body = {key: value for key, value in pod.items() if key != "status"}
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        await self._send("POST", path, body, created_ok=True)
        if "status" in pod:
            name = pod["metadata"]["name"]
            answer = await self._send("PATCH", f"{path}/{name}/status", {"status": pod["status"]})
            self.last_rv = max(self.last_rv, int(answer["metadata"]["resourceVersion"]))

    async def _send(
        self, method: str, path: str, body: dict[str, Any], *, created_ok: bool = False
    ) -> dict[str, Any]:
        headers = {"Content-Type": _MERGE} if method == "PATCH" else None
        data = orjson.dumps(body)
        for attempt in range(RETRIES + 1):
            last = attempt == RETRIES
            try:
                url = self.server + path
                async with self.session.request(method, url, data=data, headers=headers) as r:
                    text = await r.read()
                    if r.status < 300 or (created_ok and attempt and r.status == 409):
                        answer: dict[str, Any] = orjson.loads(text)
                        return answer
                    if r.status not in RETRY_STATUSES or last:
                        raise RuntimeError(f"{method} {path}: {r.status} {text[:300]!r}")
            except aiohttp.ClientConnectionError:
                if last:
                    raise
            self.retried += 1
            await asyncio.sleep(min(2.0, 0.05 * 2**attempt))
        raise AssertionError("unreachable")


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

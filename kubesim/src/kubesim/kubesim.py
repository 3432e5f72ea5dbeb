"""KubeSim: an embedded Kubernetes API server for tests, examples and benchmarks."""

from __future__ import annotations

import asyncio
import builtins
import logging
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from aiohttp import web

from kubesim.apis.builtin import builtin_registry
from kubesim.apis.flowcontrol.bootstrap import bootstrap_objects
from kubesim.controllers.apiservices import sync_apiservices
from kubesim.controllers.cluster import ClusterEmulator
from kubesim.controllers.event_expiry import DEFAULT_EVENT_TTL, EventExpiry
from kubesim.controllers.manager import Controllers
from kubesim.encoding.timefmt import now_rfc3339
from kubesim.errors import KubeSimApiError
from kubesim.machinery.fields import FieldSelector
from kubesim.machinery.labels import LabelSelector
from kubesim.registry.resource import ResourceType
from kubesim.registry.store import Api
from kubesim.server.app import SimOptions, SimServer
from kubesim.server.auth import User, make_tokens, random_token
from kubesim.server.connguard import IDLE_TIMEOUT, GuardedSite
from kubesim.server.faults import Faults
from kubesim.server.features import feature_gates as feature_gates_of
from kubesim.server.tls import self_signed, write_private
from kubesim.storage.mvcc import Mvcc, Stored

__all__ = ["KubeSim"]

log = logging.getLogger("kubesim")

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class KubeSim:
    """An in-process Kubernetes API server speaking the real wire protocol.

    ``async with KubeSim() as sim:`` serves on a free port of 127.0.0.1 (``sim.url``) with
    bearer-token auth (``sim.token``, new each run). Point any Kubernetes client at it:
    ``sim.api_client()`` gives a configured kubernetes_asyncio ``ApiClient``;
    ``sim.write_kubeconfig(path)`` writes a kubeconfig for anything else.

    What it serves and how it behaves is documented in ``docs/kubesim.md`` (the KubeSim
    reference) and follows the transcripts of a real kube-apiserver v1.28 in
    ``tests/kubesim/conformance``. Beyond the HTTP API it offers what tests need: in-process writes
    (:meth:`create`, :meth:`create_many` for bulk loads), :meth:`compact` and
    :meth:`restart`, fault injection (:attr:`faults` and the shortcut methods), a
    scheduler/kubelet emulation (:meth:`start_cluster`), and the namespace controller and
    garbage collector every cluster runs (:attr:`controllers`).

    Args:
        host: the address to listen on (127.0.0.1; ``::1`` for IPv6).
        port: the port (0: a free one, see :attr:`url` once started).
        auth: require a bearer token (default True).
        token: the admin's bearer token (default: a random one per sim, ``sim.token``).
        tls: serve https with a self-signed certificate (``sim.ca_file``).
        watch_list: the WatchList feature gate (streaming lists); off as in v1.28.
        feature_gates: kube-apiserver feature gates by name, off unless given:
            ``WatchList`` (as ``watch_list``) and ``ShardedListAndWatch`` (v1.36 alpha:
            ``shardSelector`` on lists and watches, KEP-5866); an unknown name is a
            ValueError. ``kubesim.server.features.parse_feature_gates`` reads the
            ``--feature-gates`` syntax (``ShardedListAndWatch=true``).
        history_size: the watch cache window per resource type, in events; a watch from
            an RV older than the window gets the recorded 410.
        history_max_age: the same window in seconds (None: no age limit).
        bookmark_interval: seconds between periodic bookmarks on a watch.
        too_large_rv_wait: how long a list at a future RV waits before its 504.
        nodes: create that many Node objects at start.
        header_timeout: seconds a connection may take to send its first request head
            (kube-apiserver: 32); then it is closed.
        max_connections: open connections at most (default: the open-files limit minus
            room for an accept burst and a reserve); beyond it the oldest connection still
            sending its head (else the oldest idle keep-alive connection) is dropped.
        idle_timeout: seconds an idle keep-alive connection is kept (kube-apiserver: 90).
        controllers: run the kube-controller-manager controllers a cluster always has (the
            namespace controller and the garbage collector); ``False`` serves the API
            alone, as the recorded apiserver was.
        event_ttl: seconds an Event lives after its last write (kube-apiserver's
            ``--event-ttl``, default 1h), then it is deleted with a DELETED watch event;
            measured on the event loop's clock. None keeps Events forever.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        auth: bool = True,
        token: str | None = None,
        tls: bool = False,
        watch_list: bool = False,
        feature_gates: Mapping[str, bool] | None = None,
        history_size: int = 10_000,
        history_max_age: float | None = None,
        bookmark_interval: float = 60.0,
        too_large_rv_wait: float = 3.0,
        nodes: int = 0,
        header_timeout: float = 32.0,
        max_connections: int | None = None,
        idle_timeout: float = IDLE_TIMEOUT,
        controllers: bool = True,
        event_ttl: float | None = DEFAULT_EVENT_TTL,
    ) -> None:
        gates = feature_gates_of(feature_gates)
        self.host = host
        self.port = port
        self.tls = tls
        self.token = token or random_token()
        self.mvcc = Mvcc(history_size=history_size, history_max_age=history_max_age)
        self.registry = builtin_registry()
        self.api = Api(self.mvcc, self.registry)
        # the aggregator's local APIServices follow the served types (CRDs come and go)
        self.api.on_served_changed.append(lambda: sync_apiservices(self.api))
        self.event_expiry = EventExpiry(self.mvcc, event_ttl)
        self.faults = Faults()
        self.options = SimOptions(
            auth=auth,
            watch_list=watch_list or gates["WatchList"],
            sharding=gates["ShardedListAndWatch"],
            bookmark_interval=bookmark_interval,
            too_large_rv_wait=too_large_rv_wait,
            tokens=make_tokens(self.token),
        )
        self.server = SimServer(self.api, self.mvcc, self.registry, self.faults, self.options)
        self.cluster = ClusterEmulator(self.api)
        self._initial_nodes = nodes
        self._header_timeout = header_timeout
        self._max_connections = max_connections
        self._idle_timeout = idle_timeout
        self.site: GuardedSite | None = None
        self.controllers = Controllers(self.api) if controllers else None
        self._runner: web.AppRunner | None = None
        self._tmpdir: Path | None = None
        self.ca_file: Path | None = None
        self._started = False
        for ns in DEFAULT_NAMESPACES:
            self.create("namespaces", {"metadata": {"name": ns}})
        now = now_rfc3339()
        for resource, body in bootstrap_objects(now):  # the APF configuration controller's
            self.create(resource, body, keep_status=True)
        sync_apiservices(self.api)  # the aggregator's local APIServices

    # -- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> KubeSim:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Bind and serve. Idempotent only in the sense that a second call is an error. A
        start that fails (e.g. the port is taken) leaves nothing behind: no task, no
        socket, no certificate directory."""
        if self._started:
            raise RuntimeError("KubeSim is already started")
        self._started = True
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()

        def call_later(delay: float, fn: Callable[[], None]) -> None:
            loop.call_later(delay, fn)

        self.api.call_soon = call_later
        app = self.server.make_app()
        # lingering_time=0: a request answered before its body was read (413) closes its
        # connection at once instead of draining the rest of the body
        self._runner = web.AppRunner(
            app,
            handler_cancellation=True,
            access_log=None,
            lingering_time=0,
            shutdown_timeout=0.5,  # a stop waits at most this long for open requests
            keepalive_timeout=self._idle_timeout,
        )
        await self._runner.setup()
        ssl_ctx = None
        if self.tls:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="kubesim-"))
            self.ca_file, _, ssl_ctx = self_signed(self._tmpdir, self.host)
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        site = GuardedSite(
            self._runner,
            sock,
            ssl_context=ssl_ctx,
            header_timeout=self._header_timeout,
            max_connections=self._max_connections,
        )
        await site.start()
        self.site = site
        self.server.server_address = f"{self.host}:{self.port}"
        if self.controllers is not None:
            self.controllers.start()
        self.event_expiry.start()
        if self._initial_nodes:
            self.cluster.add_nodes(self._initial_nodes)
        log.info("KubeSim serving on %s", self.url)

    async def stop(self) -> None:
        """Stop serving: close every connection (watches included) and free the port."""
        await self.cluster.stop()
        self.event_expiry.stop()
        if self.controllers is not None:
            self.controllers.stop()
        if self._runner is not None:
            self.faults.drop_watches()
            await self._runner.cleanup()
            self._runner = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:41234``."""
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    # -- clients ------------------------------------------------------------------------------

    def client_configuration(self) -> Any:
        """A kubernetes_asyncio ``Configuration`` for this sim."""
        from kubernetes_asyncio import client

        cfg = client.Configuration()
        cfg.host = self.url
        if self.options.auth:
            cfg.api_key = {"BearerToken": self.token}
            cfg.api_key_prefix = {"BearerToken": "Bearer"}
        if self.tls:
            cfg.ssl_ca_cert = str(self.ca_file)
            cfg.verify_ssl = True
        return cfg

    def api_client(self) -> Any:
        """A kubernetes_asyncio ``ApiClient`` authenticated against this sim (close it, or
        use it as ``async with``). It goes straight to the sim: no proxy from the
        environment, and none of the per-request environment lookups kubernetes_asyncio's
        session makes (``trust_env``: a worker thread's proxy and ``~/.netrc`` reads at
        every request)."""
        from kubernetes_asyncio import client

        api = client.ApiClient(configuration=self.client_configuration())
        api.rest_client.pool_manager._trust_env = False  # (aiohttp has no public setter)
        return api

    def kubeconfig(self, user_token: str | None = None) -> dict[str, Any]:
        """A kubeconfig document (dict) for this sim."""
        cluster: dict[str, Any] = {"server": self.url}
        if self.tls and self.ca_file is not None:
            cluster["certificate-authority"] = str(self.ca_file)
        user: dict[str, Any] = {}
        if self.options.auth:
            user["token"] = user_token or self.token
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kubesim", "cluster": cluster}],
            "users": [{"name": "kubesim-admin", "user": user}],
            "contexts": [
                {
                    "name": "kubesim",
                    "context": {
                        "cluster": "kubesim",
                        "user": "kubesim-admin",
                        "namespace": "default",
                    },
                }
            ],
            "current-context": "kubesim",
        }

    def write_kubeconfig(self, path: str | Path, *, user_token: str | None = None) -> Path:
        """Write :meth:`kubeconfig` to ``path``, created with mode 0600 (it holds the token;
        no other user can read it at any moment). kubectl reads it as is: https with the
        sim's CA when ``tls`` is on."""
        p = Path(path)
        write_private(p, orjson.dumps(self.kubeconfig(user_token), option=orjson.OPT_INDENT_2))
        return p

    def add_user(
        self, name: str, rules: Iterable[tuple[str, str, str]] = (), token: str | None = None
    ) -> str:
        """Add an identity with RBAC ``rules`` ((verb, group, resource), ``"*"`` = any;
        a subresource is its own resource: ``pods/status``, ``deployments/scale``, ``*/scale``,
        ``pods/*``); returns its bearer token. A user without rules is denied everything (403)."""
        tok = token or random_token()
        self.options.tokens[tok] = User(name, tuple(rules))
        return tok

    # -- in-process API -------------------------------------------------------------------------

    def resource(self, resource: str) -> ResourceType:
        """Resolve ``pods``, ``v1/pods``, ``apps/v1/statefulsets`` or ``GROUP/VERSION/PLURAL``."""
        return self.registry.resolve(resource)

    @staticmethod
    def _out(rt: ResourceType, obj: Stored) -> dict[str, Any]:
        d = rt.strategy.to_view(rt, obj.decode())
        if rt.custom:
            return d
        return {"kind": rt.kind, "apiVersion": rt.api_version, **d}

    def create(
        self,
        resource: str,
        body: Mapping[str, Any],
        namespace: str | None = None,
        *,
        keep_status: bool = False,
    ) -> dict[str, Any]:
        """Create one object in-process (same semantics as a POST); returns it.
        ``keep_status`` stores the body's status as given (bulk loads of running pods)."""
        rt = self.resource(resource)
        ns = namespace or (body.get("metadata") or {}).get("namespace")
        if rt.namespaced and not ns:
            ns = "default"
        return self._out(rt, self.api.create(rt, ns, body, keep_status=keep_status))

    def create_many(
        self,
        resource: str,
        bodies: Iterable[Mapping[str, Any]],
        namespace: str | None = None,
        *,
        keep_status: bool = False,
    ) -> int:
        """Create many objects in-process, without HTTP (bulk loads); returns the count."""
        rt = self.resource(resource)
        n = 0
        for body in bodies:
            ns = namespace or (body.get("metadata") or {}).get("namespace")
            if rt.namespaced and not ns:
                ns = "default"
            self.api.create(rt, ns, body, keep_status=keep_status)
            n += 1
        return n

    def get(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        """One object as a dict (raises :class:`~kubesim.errors.KubeSimApiError` 404 when
        missing; :meth:`find` says None instead)."""
        rt = self.resource(resource)
        return self._out(rt, self.api.get(rt, namespace, name))

    def find(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """One object as a dict, or None when there is none of that name: the read for
        "not there yet" in a test (``eventually(lambda: sim.find("statefulsets", "db",
        "ns"))``). A resource that is not served still raises, as for :meth:`get`."""
        rt = self.resource(resource)
        try:
            return self._out(rt, self.api.get(rt, namespace, name))
        except KubeSimApiError as exc:
            if exc.code == 404:
                return None
            raise

    def patch(
        self,
        resource: str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """JSON-merge-patch one object in-process; returns it."""
        rt = self.resource(resource)
        obj = self.api.patch(
            rt,
            namespace,
            name,
            "application/merge-patch+json",
            dict(patch),
            subresource=subresource,
        )
        return self._out(rt, obj)

    def delete(
        self, resource: str, name: str, namespace: str | None = None, **options: Any
    ) -> None:
        """Delete one object in-process (DeleteOptions as keyword arguments)."""
        rt = self.resource(resource)
        self.api.delete(rt, namespace, name, options)

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
    ) -> list[dict[str, Any]]:
        """Current objects, sorted by namespace/name."""
        rt = self.resource(resource)
        page = self.api.list(
            rt,
            namespace,
            label_selector=LabelSelector.parse(label_selector) if label_selector else None,
            field_selector=FieldSelector.parse(field_selector) if field_selector else None,
        )
        return [self._out(rt, o) for o in page.items]

    def versions(self, resource: str, namespace: str | None = None) -> dict[str, str]:
        """``{"namespace/name": resourceVersion}`` of the current objects: what an informer
        that converged must hold, key for key."""
        rt = self.resource(resource)
        ts = self.api.store(rt)
        lo, hi = ts.key_range(namespace)
        return {k: str(ts.objects[k].rv) for k in ts.keys[lo:hi]}

    async def wait_served(self, resource: str, timeout: float = 5.0) -> ResourceType:
        """Wait until ``resource`` (e.g. a CRD's ``GROUP/VERSION/PLURAL``) is served;
        ``TimeoutError`` after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                return self.resource(resource)
            except KeyError:
                if loop.time() >= deadline:
                    raise TimeoutError(f"{resource} not served after {timeout}s") from None
                await asyncio.sleep(0.01)

    @property
    def resource_version(self) -> int:
        """The current global revision."""
        return self.mvcc.rv

    # -- storage events ------------------------------------------------------------------------

    def compact(self, rv: int | None = None) -> int:
        """etcd compaction: continue tokens and Exact lists older than ``rv`` expire (410);
        watches still served by the watch cache are unaffected."""
        return self.mvcc.compact(rv)

    def expire_watch_history(self) -> None:
        """Evict every watch cache: a watch from any RV below the current one gets 410."""
        self.mvcc.expire_watch_caches()

    def restart(self) -> None:
        """What an apiserver restart does to clients: every open watch is dropped and every
        RV below the current revision is too old for a watch from now on."""
        self.faults.drop_watches()
        self.mvcc.expire_watch_caches()

    # -- faults (shortcuts to :attr:`faults`) -----------------------------------------------------

    def drop_watches(self, *, path_contains: str | None = None) -> None:
        """Close open watch connections abruptly (all, or those whose path matches)."""
        self.faults.drop_watches(path_contains=path_contains)

    def stall_watches(self, seconds: float | None = None) -> None:
        """Keep watch connections open but send nothing (for ``seconds``, or until
        :meth:`unstall_watches`)."""
        self.faults.stall_watches(seconds)

    def unstall_watches(self) -> None:
        """End a :meth:`stall_watches` stall at once."""
        self.faults.unstall_watches()

    def fail_next(self, n: int, status: int = 500, **kwargs: Any) -> None:
        """Answer the next ``n`` matching requests with 429/500/503/504."""
        self.faults.fail_next(n, status, **kwargs)

    @property
    def open_watches(self) -> int:
        """Watch connections being served right now."""
        return self.server.open_watches

    # -- cluster emulation ---------------------------------------------------------------------

    def add_nodes(self, n: int) -> builtins.list[str]:
        """Create ``n`` Ready nodes; returns their names."""
        return self.cluster.add_nodes(n)

    def start_cluster(self, **options: Any) -> None:
        """Start the scheduler/kubelet emulation (see :class:`ClusterEmulator`)."""
        self.cluster.configure(**options)
        self.cluster.start()

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until the cluster emulation has nothing left to do; ``TimeoutError`` if it
        still has work after ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                await self.cluster.idle()
                if self.controllers is not None:
                    await self.controllers.idle()
        except TimeoutError:
            raise TimeoutError(
                f"cluster emulation still busy after {timeout}s: {self.cluster.stats()}"
            ) from None

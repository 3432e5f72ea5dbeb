"""Where scenarios run: a fresh KubeSim per scenario, or the cluster a kubeconfig names.

A :class:`Target` hands out HTTP sessions that send what the recorder sent (its
User-Agent, so the server names the same field manager; ``Accept: application/json``)
as one of the recorded identities, and knows the secrets that must never appear in a
failure message (:meth:`Target.redact`)."""

from __future__ import annotations

import asyncio
import os
import re
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from aioinformer.testing import KubeSim
from tests.kubesim.replay import RECORDER_UA

#: The environment variable naming a disposable cluster's kubeconfig.
KUBECONFIG_ENV = "AIOINFORMER_TEST_KUBECONFIG"
NOT_SET = (
    f"{KUBECONFIG_ENV} is not set: point it at a disposable cluster's kubeconfig to replay "
    "these scenarios against a real kube-apiserver"
)
_NAMESPACED = re.compile(r"^/.+/namespaces/[^/]+/[^/]+$")
#: Recorded identities other than the admin, and what they stand for on KubeSim.
ALICE = "alice"  # a user no RBAC rule grants anything: 403 on every request
BAD_TOKEN = "not-a-token-anyone-issued"


@dataclass
class Connection:
    """How to reach an API server: its URL, TLS settings, the admin's headers."""

    url: str
    ssl: ssl.SSLContext | bool
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def secrets(self) -> list[str]:
        """Credential values that must not be shown (the Authorization header's, and the
        token inside it)."""
        out = []
        for value in self.headers.values():
            out.append(value)
            out.extend(part for part in value.split() if len(part) > 8)
        return out


async def connection_from_kubeconfig(path: str, context: str | None = None) -> Connection:
    """A :class:`Connection` from a kubeconfig, read by kubernetes_asyncio's loader (so
    exec plugins, auth providers, ``*-data`` fields and contexts mean what they mean to
    client-go): the server URL, the CA (or ``insecure-skip-tls-verify``), the client
    certificate and key, and the token or basic auth as the Authorization header."""
    from kubernetes_asyncio import client, config

    cfg = client.Configuration()
    await config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
    headers = {}
    auth = cfg.api_key.get("BearerToken") or cfg.api_key.get("authorization")
    if auth:
        headers["Authorization"] = auth
    elif cfg.username:
        headers["Authorization"] = cfg.get_basic_auth_token()
    if not cfg.verify_ssl:
        tls: ssl.SSLContext | bool = False
    elif cfg.host.startswith("https:"):
        tls = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file:
            tls.load_cert_chain(cfg.cert_file, cfg.key_file)
    else:
        tls = True
    return Connection(cfg.host.rstrip("/"), tls, headers)


class Target:
    """A server the scenarios run against."""

    name: str
    conn: Connection
    users: dict[str, dict[str, str]]  #: recorded identity -> its Authorization header(s)
    #: How long a replayed watch stays open (its recorded timeoutSeconds is replaced):
    #: long enough for its writes, short enough that a scenario costs about that much.
    watch_seconds = 3

    @asynccontextmanager
    async def session(self, auth: str = "admin") -> AsyncIterator[aiohttp.ClientSession]:
        """A session sending what the recorder sent, as the recorded identity ``auth``."""
        headers = {"Accept": "application/json", "User-Agent": RECORDER_UA}
        headers.update(self.conn.headers if auth == "admin" else self.users[auth])
        connector = aiohttp.TCPConnector(ssl=self.conn.ssl)
        async with aiohttp.ClientSession(
            base_url=self.conn.url, headers=headers, connector=connector
        ) as http:
            yield http

    def redact(self, text: str) -> str:
        """``text`` with every credential this target knows replaced."""
        secrets = [*self.conn.secrets, *(v for u in self.users.values() for v in u.values())]
        for secret in sorted(secrets, key=len, reverse=True):
            text = text.replace(secret, "<redacted>")
        return text

    async def cleanup(self, made: list[str]) -> None:
        """Remove what a scenario made (paths of namespaces and cluster-scoped objects)."""


class KubeSimTarget(Target):
    """A KubeSim without controllers (the recordings' servers ran none, or none that
    matter to their exchanges), its WatchList gate as the recording's, on 127.0.0.1."""

    name = "kubesim"
    watch_seconds = 1  # on 127.0.0.1 a scenario's writes take milliseconds

    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self.conn = Connection(sim.url, False, {"Authorization": f"Bearer {sim.token}"})
        alice = sim.add_user(ALICE)
        self.users = {
            ALICE: {"Authorization": f"Bearer {alice}"},
            "bad": {"Authorization": f"Bearer {BAD_TOKEN}"},
            "none": {},
        }


class ClusterTarget(Target):
    """The cluster ``$AIOINFORMER_TEST_KUBECONFIG`` names, as its admin (the kubeconfig's
    user); the recordings' other identities are not available there."""

    name = "cluster"

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.users = {}

    async def cleanup(self, made: list[str], timeout: float = 120.0) -> None:
        """Delete what a scenario made (the paths of its namespaces, cluster-scoped objects
        such as CRDs and Nodes, and the namespaced collections it wrote to) and wait until
        each is gone (the next scenario may make one of the same name), failing with its
        path after ``timeout`` seconds. What would keep a namespace from going goes first:
        finalizers are removed, pods deleted without grace (no kubelet runs the
        recordings' nodes)."""
        collections = sorted({p for p in made if _NAMESPACED.match(p)})
        objects = sorted(set(made) - set(collections))
        objects.sort(key=lambda p: not p.startswith("/api/v1/namespaces/"))
        async with self.session() as http:
            for collection in collections:
                await _release(http, collection)
            for path in objects:
                async with http.delete(path) as r:
                    assert r.status in (200, 202, 404), f"DELETE {path}: {r.status}"
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            for path in objects:
                while True:
                    async with http.get(path) as r:
                        if r.status == 404:
                            break
                    if loop.time() > deadline:
                        raise AssertionError(f"{path} still there after {timeout}s")
                    await asyncio.sleep(0.5)


#: A list of metadata only: names and finalizers, whatever the objects hold (25d's are
#: nested 2000 levels deep, beyond what a JSON parser takes by default).
_METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


async def _release(http: aiohttp.ClientSession, collection: str) -> None:
    """Remove every finalizer in ``collection`` and delete its pods without grace."""
    async with http.get(collection, headers={"Accept": _METADATA_ONLY}) as r:
        if r.status != 200:
            return
        items = (await r.json()).get("items") or []
    for item in items:
        path = f"{collection}/{item['metadata']['name']}"
        if item["metadata"].get("finalizers"):
            patch = {"metadata": {"finalizers": None}}
            headers = {"Content-Type": "application/merge-patch+json"}
            async with http.patch(path, json=patch, headers=headers) as r:
                assert r.status in (200, 404), f"PATCH {path} finalizers: {r.status}"
    if collection.endswith("/pods"):
        async with http.delete(collection, params={"gracePeriodSeconds": "0"}) as r:
            assert r.status in (200, 404), f"DELETE {collection}: {r.status}"


def cluster_kubeconfig() -> str | None:
    return os.environ.get(KUBECONFIG_ENV) or None


def kubesim_options(record: dict[str, Any]) -> dict[str, Any]:
    """KubeSim's options for a recording's ``server``; a too-large RV is answered after
    0.2 s instead of the real server's 3 s (how long is timing, which is not compared)."""
    return {
        "controllers": False,
        "watch_list": bool(record["server"].get("feature_gate_WatchList")),
        "too_large_rv_wait": 0.2,
    }

"""Where scenarios run: a fresh KubeSim per scenario, or the cluster a kubeconfig names.

A :class:`Target` hands out HTTP sessions that send what the recorder sent (its
User-Agent, so the server names the same field manager; ``Accept: application/json``)
as one of the recorded identities, and knows the secrets that must never appear in a
failure message (:meth:`Target.redact`)."""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from aioinformer.testing import KubeSim
from tests.kubesim.differential.cleanup import found, restore
from tests.kubesim.differential.settings import Settings, settings_of
from tests.kubesim.replay import RECORDER_UA

#: The environment variable naming a disposable cluster's kubeconfig.
KUBECONFIG_ENV = "AIOINFORMER_TEST_KUBECONFIG"
NOT_SET = (
    f"{KUBECONFIG_ENV} is not set: point it at a disposable cluster's kubeconfig to replay "
    "these scenarios against a real kube-apiserver"
)
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

    @asynccontextmanager
    async def left_as_found(self) -> AsyncIterator[list[str]]:
        """A list for a scenario to note what it makes in (request paths, as
        :attr:`~tests.kubesim.differential.runner.Run.made` says); on a server that
        outlives the scenario, what it made is removed afterwards, even when it failed."""
        yield []


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
    #: How long removing what a scenario made may take (a bare kube-apiserver's own
    #: work takes well under a second; a full cluster's controllers may take longer).
    cleanup_seconds = 120.0

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.users = {}

    async def settings(self) -> Settings:
        """The cluster's settings that recorded answers depend on, found by asking it."""
        async with self.session() as http:
            return await settings_of(http)

    @asynccontextmanager
    async def left_as_found(self) -> AsyncIterator[list[str]]:
        """What the cluster has is noted first; afterwards what the scenario made is
        removed, and the cluster is waited for until it has nothing more than before
        (:func:`~tests.kubesim.differential.cleanup.restore`)."""
        async with self.session() as http:
            before = await found(http)
            made: list[str] = []
            try:
                yield made
            finally:
                await restore(http, made, before, self.cleanup_seconds)


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

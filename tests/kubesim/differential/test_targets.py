"""The cluster target's own code, against KubeSim posing as the cluster: a kubeconfig
(https, the CA by file or inline, the bearer token) becomes a working session, namespaces
are cleaned up, credentials never reach a failure message, and the cluster
parametrisation says why it is skipped."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aioinformer.testing import KubeSim
from tests.kubesim.differential.conftest import cluster_skip
from tests.kubesim.differential.runner import Run
from tests.kubesim.differential.scenarios import CRDS, SCENARIOS
from tests.kubesim.differential.targets import (
    KUBECONFIG_ENV,
    NOT_SET,
    ClusterTarget,
    connection_from_kubeconfig,
)
from tests.kubesim.replay import Replayer, nested, recorded_podset_crd

PODSETS = "example.aioinformer.dev/v1/podsets"


@pytest.fixture
async def https_sim() -> AsyncIterator[KubeSim]:
    async with KubeSim(tls=True) as sim:
        yield sim


def _base64_of(path: str) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()


async def _version(target: ClusterTarget) -> tuple[int, dict[str, str]]:
    async with target.session() as http, http.get("/api/v1/namespaces/default") as r:
        return r.status, await r.json()


async def test_kubeconfig_with_ca_file_and_token(https_sim: KubeSim, tmp_path: Path) -> None:
    """The kubeconfig KubeSim writes (CA file, token): the session verifies the server's
    certificate and authenticates as the admin."""
    path = https_sim.write_kubeconfig(tmp_path / "kubeconfig")
    conn = await connection_from_kubeconfig(str(path))
    assert conn.url == https_sim.url and conn.url.startswith("https://127.0.0.1:")
    status, body = await _version(ClusterTarget(conn))
    assert (status, body["metadata"]["name"]) == (200, "default")


async def test_kubeconfig_with_inline_ca(https_sim: KubeSim, tmp_path: Path) -> None:
    """``certificate-authority-data`` (inline, base64) works as the file does; without the
    CA the server's certificate is refused."""
    doc = https_sim.kubeconfig()
    cluster = doc["clusters"][0]["cluster"]
    cluster["certificate-authority-data"] = _base64_of(cluster.pop("certificate-authority"))
    path = tmp_path / "inline"
    path.write_text(json.dumps(doc))
    status, _ = await _version(ClusterTarget(await connection_from_kubeconfig(str(path))))
    assert status == 200
    del cluster["certificate-authority-data"]
    path.write_text(json.dumps(doc))
    untrusted = ClusterTarget(await connection_from_kubeconfig(str(path)))
    with pytest.raises(Exception, match="certificate verify failed"):
        await _version(untrusted)


async def test_kubeconfig_without_credentials_is_anonymous(
    https_sim: KubeSim, tmp_path: Path
) -> None:
    """A kubeconfig user without credentials: the session sends none, and the server
    answers it as system:anonymous (403, as 11f recorded; no identity is invented)."""
    doc = https_sim.kubeconfig()
    doc["users"][0]["user"] = {}
    path = tmp_path / "anonymous"
    path.write_text(json.dumps(doc))
    conn = await connection_from_kubeconfig(str(path))
    assert "Authorization" not in conn.headers
    status, _ = await _version(ClusterTarget(conn))
    assert status == 403


async def test_cleanup_deletes_what_was_made(https_sim: KubeSim, tmp_path: Path) -> None:
    """A scenario's namespaces and cluster-scoped objects are deleted and waited for; a
    finalizer in a collection it wrote to is removed first, or the namespace would stay
    (the namespace controller of the server posing as a cluster empties it)."""
    https_sim.create("namespaces", {"metadata": {"name": "rec-clean-a"}})
    held = {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {}}
    https_sim.create("configmaps", held, namespace="rec-clean-a")
    crd = recorded_podset_crd()
    https_sim.create(CRDS.removeprefix("/apis/"), crd)
    await https_sim.wait_served(PODSETS)
    path = https_sim.write_kubeconfig(tmp_path / "kubeconfig")
    target = ClusterTarget(await connection_from_kubeconfig(str(path)))
    meta = '{"name":"deep","finalizers":["example.com/hold"]}'
    deep = f'{{"apiVersion":"example.aioinformer.dev/v1","kind":"PodSet","metadata":{meta},'
    deep += f'"spec":{nested(2000)}}}'  # deeper than a JSON parser takes: listed as metadata
    async with (
        target.session() as http,
        http.post(
            "/apis/example.aioinformer.dev/v1/namespaces/rec-clean-a/podsets",
            data=deep,
            headers={"Content-Type": "application/json"},
        ) as r,
    ):
        assert r.status == 201, await r.text()
    made = [
        f"{CRDS}/{crd['metadata']['name']}",
        "/api/v1/namespaces/rec-clean-a",
        "/api/v1/namespaces/rec-clean-a/configmaps",
        "/apis/example.aioinformer.dev/v1/namespaces/rec-clean-a/podsets",
        "/api/v1/namespaces/rec-never-made",
    ]
    await target.cleanup(made, timeout=20.0)
    assert "rec-clean-a" not in {ns["metadata"]["name"] for ns in https_sim.list("namespaces")}
    assert https_sim.list(CRDS.removeprefix("/apis/")) == []


async def test_failure_messages_hide_the_credentials(https_sim: KubeSim, tmp_path: Path) -> None:
    """A mismatch whose bodies hold the token fails with the diff, the token redacted."""
    path = https_sim.write_kubeconfig(tmp_path / "kubeconfig")
    target = ClusterTarget(await connection_from_kubeconfig(str(path)))
    async with target.session() as http:
        run = Run(SCENARIOS[0], target, http, Replayer(http))
        with pytest.raises(AssertionError) as err:
            leak = {"seen": f"Bearer {https_sim.token}"}
            run.fail(SCENARIOS[0].record, "body differs", {"seen": "x"}, leak)
    message = str(err.value)
    assert https_sim.token not in message
    assert "<redacted>" in message
    assert "01-list-pods [cluster] main (GET /api/v1/namespaces/tx01/pods): body differs" in message


def test_cluster_runs_are_skipped_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the variable every cluster run says how to enable it; with it, a scenario
    that needs another identity or the recording server's configuration says which."""
    by_recording = {s.recording: s for s in SCENARIOS}
    monkeypatch.delenv(KUBECONFIG_ENV, raising=False)
    assert cluster_skip(by_recording["22a"]) == NOT_SET
    monkeypatch.setenv(KUBECONFIG_ENV, "/nonexistent/kubeconfig")
    assert cluster_skip(by_recording["22a"]) is None
    assert "alice" in (cluster_skip(by_recording["11h"]) or "")
    assert "none" in (cluster_skip(by_recording["11f"]) or "")
    assert "kube-controller-manager" in (cluster_skip(by_recording["20a"]) or "")

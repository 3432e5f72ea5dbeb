"""The cluster target's own code, against KubeSim posing as the cluster: a kubeconfig
(https, the CA by file or inline, the bearer token) becomes a working session, what a
scenario made is removed (without a namespace controller too) and what is left behind
fails it, credentials never reach a failure message, and the cluster parametrisation says
why it is skipped."""

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
from tests.kubesim.differential.settings import Settings
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


@pytest.fixture
async def bare_sim() -> AsyncIterator[KubeSim]:
    """KubeSim posing as a bare kube-apiserver: no namespace controller, no garbage
    collector."""
    async with KubeSim(tls=True, controllers=False) as sim:
        yield sim


async def _cluster(sim: KubeSim, tmp_path: Path) -> ClusterTarget:
    path = sim.write_kubeconfig(tmp_path / "kubeconfig")
    return ClusterTarget(await connection_from_kubeconfig(str(path)))


async def test_what_a_scenario_made_is_removed_without_a_namespace_controller(
    bare_sim: KubeSim, tmp_path: Path
) -> None:
    """A scenario's namespaces are emptied (finalizers removed, pods without grace) and
    finalized by the harness itself, as no controller does it; its CRD goes after them,
    and its group is gone from /apis before the next scenario starts."""
    target = await _cluster(bare_sim, tmp_path)
    crd = recorded_podset_crd()
    meta = '{"name":"deep","finalizers":["example.com/hold"]}'
    deep = f'{{"apiVersion":"example.aioinformer.dev/v1","kind":"PodSet","metadata":{meta},'
    deep += f'"spec":{nested(2000)}}}'  # deeper than a JSON parser takes: never decoded
    async with target.left_as_found() as made:
        made += [f"{CRDS}/{crd['metadata']['name']}", "/api/v1/namespaces/rec-clean-a"]
        made.append("/api/v1/namespaces/rec-never-made")
        bare_sim.create("namespaces", {"metadata": {"name": "rec-clean-a"}})
        held = {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {}}
        bare_sim.create("configmaps", held, namespace="rec-clean-a")
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        bare_sim.create("pods", pod, namespace="rec-clean-a")
        bare_sim.create(CRDS.removeprefix("/apis/"), crd)
        await bare_sim.wait_served(PODSETS)
        async with (
            target.session() as http,
            http.post(
                "/apis/example.aioinformer.dev/v1/namespaces/rec-clean-a/podsets",
                data=deep,
                headers={"Content-Type": "application/json"},
            ) as r,
        ):
            assert r.status == 201, await r.text()
    assert "rec-clean-a" not in {ns["metadata"]["name"] for ns in bare_sim.list("namespaces")}
    assert bare_sim.list(CRDS.removeprefix("/apis/")) == []
    async with target.session() as http, http.get("/apis") as r:
        groups = {g["name"] for g in (await r.json())["groups"]}
    assert "example.aioinformer.dev" not in groups


async def test_what_is_left_behind_fails_naming_it(bare_sim: KubeSim, tmp_path: Path) -> None:
    """A namespace the scenario made without noting it is still there afterwards: the
    scenario fails naming it, so no later scenario runs on a cluster it did not expect."""
    target = await _cluster(bare_sim, tmp_path)
    target.cleanup_seconds = 0.5
    with pytest.raises(AssertionError, match="namespaces/rec-unnoted"):
        async with target.left_as_found():
            bare_sim.create("namespaces", {"metadata": {"name": "rec-unnoted"}})


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


async def test_a_cluster_whose_settings_differ_skips_saying_which(
    bare_sim: KubeSim, tmp_path: Path
) -> None:
    """The cluster's settings are found by asking it (KubeSim posing as a bare server: no
    controller Leases, no ServiceAccount admission, the WatchList gate off); a scenario
    needing other settings is skipped naming the one that differs."""
    by_recording = {s.recording: s for s in SCENARIOS}
    target = await _cluster(bare_sim, tmp_path)
    bare = await target.settings()
    assert bare == Settings(controllers=False, service_account_admission=False, watch_list=False)
    assert bare.unmet(by_recording["20a"].needs) is None
    assert bare.unmet(by_recording["01"].needs) is None
    assert "WatchList" in (bare.unmet(by_recording["07c"].needs) or "")
    lease = {"metadata": {"name": "kube-controller-manager"}, "spec": {}}
    bare_sim.create("leases", lease, namespace="kube-system")
    full = await target.settings()
    assert full.controllers
    assert "kube-controller-manager" in (full.unmet(by_recording["20a"].needs) or "")
    async with KubeSim(tls=True, watch_list=True) as gate_on:
        assert (await (await _cluster(gate_on, tmp_path)).settings()).watch_list

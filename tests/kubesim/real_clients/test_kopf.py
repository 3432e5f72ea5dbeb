"""kopf against ``python -m aioinformer sim``: a small operator (below) in a ``kopf run``
subprocess with the sim's kubeconfig, through create, update, delete and a namespace
deletion that deletes the custom resource.

The operator's handlers write what they saw to a log file; the test reads it and the
server's state: kopf's finalizer on the object, its ``last-handled-configuration``
annotation, the Events it posts, and the namespace gone once kopf let the object go.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubesim.real_clients.simproc import SimProcess, wait_for

pytest.importorskip("kopf", reason="kopf is not installed (it is in the test extra)")

GROUP = "kopf.aioinformer.dev"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gizmos.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
OPERATOR = """
import os
import kopf

LOG = os.environ["GIZMO_LOG"]


def note(*words):
    with open(LOG, "a") as f:
        f.write(" ".join(str(w) for w in words) + "\\n")


@kopf.on.startup()
def configure(settings, **_):
    settings.watching.server_timeout = 30


@kopf.on.create("kopf.aioinformer.dev", "v1", "gizmos")
def created(body, name, namespace, spec, **_):
    note("create", namespace, name, spec.get("size"))
    kopf.info(body, reason="GizmoMade", message=f"made a {spec.get('size')} gizmo")
    return {"seen": spec.get("size")}


@kopf.on.update("kopf.aioinformer.dev", "v1", "gizmos")
def updated(name, namespace, old, new, **_):
    note("update", namespace, name, old["spec"].get("size"), new["spec"].get("size"))


@kopf.on.delete("kopf.aioinformer.dev", "v1", "gizmos")
def deleted(name, namespace, **_):
    note("delete", namespace, name)
"""
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
LAST_HANDLED = "kopf.zalando.org/last-handled-configuration"


def gizmo(name: str, size: str) -> dict[str, object]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gizmo",
        "metadata": {"name": name},
        "spec": {"size": size},
    }


@pytest.fixture(scope="module")
def operator(cli_sim: SimProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The CRD installed, then ``kopf run -A --standalone`` of the operator above; yields
    the handlers' log; kopf is stopped (SIGTERM, then SIGKILL) after the module."""
    status, body = cli_sim.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD
    )
    assert status == 201, body
    wait_for(lambda: cli_sim.exists(f"/apis/{GROUP}/v1/gizmos"), "the Gizmo CRD to be served")
    work = tmp_path_factory.mktemp("kopf")
    script = work / "gizmo_operator.py"
    script.write_text(OPERATOR)
    log = work / "handlers.log"
    log.touch()
    out = (work / "kopf.out").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", "-A", "--verbose", str(script)],
        env={**os.environ, "KUBECONFIG": str(cli_sim.kubeconfig), "GIZMO_LOG": str(log)},
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=work,
    )
    try:
        wait_for(
            lambda: (
                proc.poll() is not None
                or b"Watch-stream for gizmos" in (work / "kopf.out").read_bytes()
                or b"Starting the watch-stream for gizmos" in (work / "kopf.out").read_bytes()
            ),
            "kopf to start watching gizmos",
        )
        assert proc.poll() is None, (work / "kopf.out").read_text()
        yield log
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()
        kopf_log = (work / "kopf.out").read_text()
        assert "Traceback" not in kopf_log, kopf_log[-4000:]


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines()


def namespace(sim: SimProcess, name: str) -> None:
    status, body = sim.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body


def test_create_update_delete(operator: Path, cli_sim: SimProcess) -> None:
    namespace(cli_sim, "kopf-a")
    base = f"/apis/{GROUP}/v1/namespaces/kopf-a/gizmos"
    status, body = cli_sim.request("POST", base, gizmo("g1", "s"))
    assert status == 201, body
    wait_for(lambda: "create kopf-a g1 s" in lines(operator), "kopf's on.create")
    wait_for(
        lambda: cli_sim.get(f"{base}/g1").get("status", {}).get("created") == {"seen": "s"},
        "the create handler's result in the status",
    )
    obj = cli_sim.get(f"{base}/g1")
    assert FINALIZER in obj["metadata"]["finalizers"]
    last = json.loads(obj["metadata"]["annotations"][LAST_HANDLED])
    assert last["spec"] == {"size": "s"}

    def handler_event() -> bool:
        events = cli_sim.get("/api/v1/namespaces/kopf-a/events")["items"]
        return any(
            e["involvedObject"]["name"] == "g1"
            and e["reason"] == "GizmoMade"
            and e["message"] == "made a s gizmo"
            for e in events
        )

    wait_for(handler_event, "kopf's Event for the handler")

    status, body = cli_sim.request(
        "PATCH", f"{base}/g1", {"spec": {"size": "m"}}, content_type="application/merge-patch+json"
    )
    assert status == 200, body
    wait_for(lambda: "update kopf-a g1 s m" in lines(operator), "kopf's on.update")
    wait_for(
        lambda: (
            json.loads(cli_sim.get(f"{base}/g1")["metadata"]["annotations"][LAST_HANDLED])["spec"]
            == {"size": "m"}
        ),
        "kopf to record the handled configuration",
    )

    status, body = cli_sim.request("DELETE", f"{base}/g1")
    assert status == 200 and body["metadata"]["deletionTimestamp"], body
    wait_for(lambda: "delete kopf-a g1" in lines(operator), "kopf's on.delete")
    wait_for(lambda: not cli_sim.exists(f"{base}/g1"), "the Gizmo to go once kopf let it go")


def test_namespace_deletion_runs_the_delete_handler(operator: Path, cli_sim: SimProcess) -> None:
    """Deleting the namespace deletes the Gizmo (the namespace controller); kopf's on.delete
    runs and removes its finalizer; then the namespace goes."""
    namespace(cli_sim, "kopf-b")
    base = f"/apis/{GROUP}/v1/namespaces/kopf-b/gizmos"
    status, body = cli_sim.request("POST", base, gizmo("g2", "l"))
    assert status == 201, body
    wait_for(
        lambda: FINALIZER in (cli_sim.get(f"{base}/g2")["metadata"].get("finalizers") or []),
        "kopf's finalizer on the Gizmo",
    )
    wait_for(lambda: "create kopf-b g2 l" in lines(operator), "kopf's on.create")
    status, body = cli_sim.request("DELETE", "/api/v1/namespaces/kopf-b")
    assert status == 200 and body["status"]["phase"] == "Terminating", body
    wait_for(
        lambda: "delete kopf-b g2" in lines(operator), "kopf's on.delete after the namespace delete"
    )
    wait_for(lambda: not cli_sim.exists("/api/v1/namespaces/kopf-b"), "the namespace to go")

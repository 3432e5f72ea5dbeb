"""examples/deploy/website/: the manifests parse, agree with each other and with the runner's
flags, the RBAC manifest is what ``python -m aioinformer rbac`` prints for the operator's
code (so it cannot drift), and the Deployment's command line, run as a real process with
exactly those RBAC rules, serves its probes, takes the Lease and runs the operator."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from aioinformer import Client
from aioinformer._cli import rbac, run
from aioinformer.testing import KubeSim, eventually, install_crd
from tests.support import REPO, released_lease, rules_of, run_cli

DEPLOY = REPO / "examples" / "deploy" / "website"
GENERATED = "#   python -m aioinformer "


def manifests() -> dict[str, list[dict[str, Any]]]:
    """Every YAML file of the directory: its documents."""
    return {p.name: list(yaml.safe_load_all(p.read_text())) for p in DEPLOY.glob("*.yaml")}


def only(kind: str) -> dict[str, Any]:
    found = [d for docs in manifests().values() for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} documents"
    return found[0]


def rbac_command() -> list[str]:
    """The command line rbac.yaml's header says generated it (after ``python -m
    aioinformer``, without the redirection)."""
    line = next(
        ln for ln in (DEPLOY / "rbac.yaml").read_text().splitlines() if ln.startswith(GENERATED)
    )
    words = shlex.split(line.removeprefix(GENERATED))
    return words[: words.index(">")]


@contextlib.contextmanager
def pod_namespace(namespace: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """POD_NAMESPACE as the Deployment's downward API sets it (the runner's default
    ``--lease-namespace``)."""
    with monkeypatch.context() as patched:
        patched.setenv("POD_NAMESPACE", namespace)
        yield


def parse(words: list[str]) -> argparse.Namespace:
    """``words`` through ``python -m aioinformer``'s run and rbac parsers."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    run.add_run_parser(sub)
    rbac.add_rbac_parser(sub)
    return parser.parse_args(words)


def container() -> dict[str, Any]:
    (one,) = only("Deployment")["spec"]["template"]["spec"]["containers"]
    return one


def image_source(path: str) -> Path:
    """The repository file the Dockerfile copies to ``path`` in the image."""
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and line.split()[-1] == path:
            return REPO / line.split()[1]
    raise AssertionError(f"the Dockerfile copies nothing to {path}")


def test_every_manifest_parses_and_the_kustomization_lists_them() -> None:
    found = manifests()
    kinds = sorted(d["kind"] for docs in found.values() for d in docs)
    assert kinds == sorted([
        "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment",
        "Kustomization", "Namespace", "Role", "RoleBinding", "ServiceAccount",
    ])  # fmt: skip
    listed = found["kustomization.yaml"][0]["resources"]
    assert sorted(listed) == sorted(name for name in found if name != "kustomization.yaml")
    assert (DEPLOY / "crd.yaml").read_bytes() == (REPO / "examples/crds/website.yaml").read_bytes()
    namespace = only("Namespace")["metadata"]["name"]
    namespaced = [
        d for docs in found.values() for d in docs if "namespace" in d.get("metadata", {})
    ]
    assert {d["metadata"]["namespace"] for d in namespaced} == {namespace}


async def test_the_rbac_manifest_is_what_the_code_generates() -> None:
    result = await run_cli(*rbac_command(), timeout=60)
    assert result.code == 0, result.err
    committed = (DEPLOY / "rbac.yaml").read_text().splitlines(keepends=True)
    assert "".join(ln for ln in committed if not ln.startswith("#")) == result.out


def test_the_deployment_agrees_with_the_runner_the_image_and_the_rbac(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deployment, c = only("Deployment"), container()
    namespace = deployment["metadata"]["namespace"]
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 2
    assert {
        "name": "POD_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    } in c["env"]
    with pod_namespace(namespace, monkeypatch):
        args = parse(c["args"])
        generated = parse(rbac_command())
    assert args.command == "run" and args.leader_election == "website-operator"
    assert args.lease_namespace == namespace  # from POD_NAMESPACE
    assert (generated.leader_election, generated.lease_namespace) == (
        args.leader_election,
        args.lease_namespace,
    )
    file, _, function = args.target.partition(":")
    assert image_source(file) == REPO / "examples" / "website.py" and function == "build"
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"metrics": args.metrics_port} and args.metrics_host == "0.0.0.0"
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert c[probe]["httpGet"] == {"path": path, "port": "metrics"}
    assert pod["terminationGracePeriodSeconds"] > args.shutdown_timeout
    account = only("ServiceAccount")["metadata"]
    assert (pod["serviceAccountName"], namespace) == (account["name"], account["namespace"])
    assert account["name"] == generated.name and generated.service_account is None
    leases = only("Role")
    assert leases["metadata"]["namespace"] == args.lease_namespace
    assert any("leases" in r["resources"] for r in leases["rules"])
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", dockerfile, re.M)
    assert re.search(r"^RUN pip install .* \.( |$)", dockerfile, re.M)
    entrypoint = re.search(r"^ENTRYPOINT (.*)$", dockerfile, re.M)
    assert entrypoint is not None and json.loads(entrypoint.group(1)) == [
        "python",
        "-m",
        "aioinformer",
    ]
    assert re.search(r"^USER \d+", dockerfile, re.M) and pod["securityContext"]["runAsNonRoot"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_kustomize_builds_the_directory() -> None:
    built = subprocess.run(
        ["kubectl", "kustomize", str(DEPLOY)], capture_output=True, text=True, timeout=60
    )
    assert built.returncode == 0, built.stderr
    assert len(list(yaml.safe_load_all(built.stdout))) == 8


@contextlib.asynccontextmanager
async def operator_process(words: list[str], env: dict[str, str]) -> AsyncIterator[Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aioinformer", *words, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env=env, cwd=REPO,
    )  # fmt: skip
    lines: list[str] = []

    async def read() -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            lines.append(raw.decode(errors="replace").rstrip())

    reader = asyncio.create_task(read())
    try:
        yield proc, lines
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        await reader


@pytest.mark.timeout(120)
async def test_the_deployment_runs_the_operator_with_exactly_its_rbac(tmp_path: Path) -> None:
    """The container's args (the target mapped to the repository's file, the metrics port
    free on 127.0.0.1) against KubeSim as the ServiceAccount with only rbac.yaml's rules:
    /healthz and /readyz answer 200, it holds the Lease, a Website converges and is
    cleaned up, nothing is forbidden, and SIGTERM stops it with status 0."""
    deployment = only("Deployment")
    namespace = deployment["metadata"]["namespace"]
    account = only("ServiceAccount")["metadata"]["name"]
    words = list(container()["args"])
    target = words[1].partition(":")
    words[1] = f"{image_source(target[0])}:{target[2]}"
    words = [w for w in words if not w.startswith(("--metrics-port", "--log-format"))]
    words += ["--metrics-port=0", "--metrics-host=127.0.0.1", "--identity=replica-a"]
    async with KubeSim(nodes=2) as sim:
        sim.start_cluster(start_delay=0.05, delete_grace_cap=0.1)
        sim.create("namespaces", {"metadata": {"name": namespace}})
        # a rollout: the Lease its predecessor released (a fresh one: its leader starts 10 s later)
        sim.create("leases", released_lease("website-operator", namespace), namespace)
        async with sim.api_client() as api:
            admin = Client(api, field_manager="tests")
            await install_crd(admin, DEPLOY / "crd.yaml")
            all_docs = [d for docs in manifests().values() for d in docs]
            token = sim.add_user(f"system:serviceaccount:{namespace}:{account}", rules_of(all_docs))
            kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig", user_token=token)
            env = {
                **os.environ,
                "POD_NAMESPACE": namespace,
                "KUBECONFIG": str(kubeconfig),
            }
            env.pop("KUBERNETES_SERVICE_HOST", None)
            async with operator_process(words, env) as (proc, lines):
                port_line = re.compile(r"serving /metrics, /healthz, /readyz on 127\.0\.0\.1:(\d+)")
                await eventually(
                    lambda: any(port_line.search(ln) for ln in lines), "the port", timeout=30
                )
                port = next(m.group(1) for ln in lines if (m := port_line.search(ln)))

                async def ok(path: str) -> bool:
                    try:
                        async with (
                            aiohttp.ClientSession() as http,
                            http.get(f"http://127.0.0.1:{port}{path}") as resp,
                        ):
                            return resp.status == 200
                    except aiohttp.ClientError:
                        return False

                await eventually(lambda: ok("/readyz"), "/readyz 200", timeout=30)
                assert await ok("/healthz")

                def holder() -> str | None:  # (ready means synced: it may still be electing)
                    leases = sim.list("coordination.k8s.io/v1/leases", namespace)
                    held = [le for le in leases if le["metadata"]["name"] == "website-operator"]
                    return held[0]["spec"].get("holderIdentity") if held else None

                await eventually(lambda: holder() == "replica-a", "replica-a to hold the Lease")

                site = await admin.create(
                    {"apiVersion": "example.aioinformer.dev/v1", "kind": "Website",
                     "metadata": {"name": "docs", "namespace": "default"},
                     "spec": {"pages": {"index.html": "Hi"}, "replicas": 2}}
                )  # fmt: skip

                async def ready() -> bool:
                    got = await admin.refresh(site)
                    return got.field("status.readyReplicas", 0, type=int) == 2

                await eventually(ready, "the Website to converge", timeout=30)
                await eventually(  # the operator's events, not only the kubelet's
                    lambda: "Created" in {e["reason"] for e in sim.list("events", "default")},
                    "the operator's Created events",
                )
                await admin.delete(site)
                await eventually(
                    lambda: not sim.list("pods", "default"), "the pods collected", timeout=30
                )
                assert "docs" not in (
                    sim.get("configmaps", "websites", "default").get("data") or {}
                )

                proc.send_signal(signal.SIGTERM)
                code = await asyncio.wait_for(proc.wait(), 30)
            log = "\n".join(lines)
            assert code == 0, log
            # a 403 is an HTTP status after a space or quote, not a log timestamp's ",403"
            assert not re.search(r"Forbidden|forbidden|Traceback|[\s\"'(]403\b", log), log

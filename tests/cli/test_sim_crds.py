"""``python -m aioinformer sim --crd PATH``: the CRDs of files and directories are served
before the kubeconfig is written; a PATH that is not CRDs KubeSim accepts is one line and
exit status 2, before anything is served."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

import pytest
import yaml

from aioinformer import Client
from aioinformer._cli.crd_files import CrdFileError, read_crd_files
from aioinformer._cli.main import main
from aioinformer._client.config import load_api_client
from tests.support import REPO

CRDS = REPO / "examples" / "crds"


def test_a_directory_is_its_yaml_and_json_files_in_name_order(tmp_path: Path) -> None:
    podset = yaml.safe_load((CRDS / "podset.yaml").read_text())
    website = yaml.safe_load((CRDS / "website.yaml").read_text())
    nodeagent = yaml.safe_load((CRDS / "nodeagent.yaml").read_text())
    (tmp_path / "b.json").write_text(json.dumps(podset))
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all([website, None, nodeagent]))
    (tmp_path / "notes.txt").write_text("not read")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yaml").write_text("not read either: a subdirectory")
    got = read_crd_files([tmp_path])
    assert [c.body["metadata"]["name"] for c in got] == [
        "websites.example.aioinformer.dev",
        "nodeagents.example.aioinformer.dev",
        "podsets.example.aioinformer.dev",
    ]
    assert [c.source for c in got] == [
        f"{tmp_path / 'a.yaml'}, document 1",
        f"{tmp_path / 'a.yaml'}, document 2",
        str(tmp_path / "b.json"),
    ]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("apiVersion: v1\nkind: ConfigMap\n", "not a CustomResourceDefinition (apiextensions."),
        ("a: [\n", "not YAML or JSON (line 2): "),
        ("", "holds no document"),
        ("- a list\n", "not a CustomResourceDefinition (a list)"),
    ],
)
def test_what_is_not_a_crd_file_names_the_file(tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "crd.yaml"
    path.write_text(content)
    with pytest.raises(CrdFileError) as caught:
        read_crd_files([path])
    assert str(caught.value).startswith(f"{path}: {why}")
    assert "\n" not in str(caught.value)


def test_bad_crd_files_are_one_line_and_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that is not CRDs, and a CRD KubeSim refuses: one line, status 2, and no
    kubeconfig (the command runs in this process: what it prints is what a user sees)."""
    config_map = tmp_path / "cm.yaml"
    config_map.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: x}\nspec: {}\n"
    )
    kubeconfig = tmp_path / "sim.kubeconfig"
    cases = {
        config_map: "not a CustomResourceDefinition (apiextensions.k8s.io/v1) but v1 ConfigMap",
        invalid: 'KubeSim refused it: CustomResourceDefinition.apiextensions.k8s.io "x" is invalid',
    }
    for path, why in cases.items():
        argv = ["sim", "--port", "0", "--plain-http", "--kubeconfig-out", str(kubeconfig)]
        code = main([*argv, "--crd", str(CRDS / "website.yaml"), "--crd", str(path)])
        out, err = capsys.readouterr()
        assert code == 2, (out, err)
        assert err.startswith(f"python -m aioinformer sim: --crd {path}: {why}"), err
        assert err.count("\n") == 1 and out == ""
        assert not kubeconfig.exists()  # (nothing served, nothing written)


async def test_the_crds_are_served_once_the_kubeconfig_is_written(tmp_path: Path) -> None:
    """The next command can use the CRDs as soon as the kubeconfig exists (a file and a
    directory holding it again would be refused: each CRD is given once here)."""
    kubeconfig = tmp_path / "sim.kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aioinformer", "sim", "--port", "0", "--plain-http",
        "--kubeconfig-out", str(kubeconfig), "--crd", str(CRDS / "website.yaml"),
        "--crd", str(CRDS / "podset.yaml"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert first.decode() == (
            "CustomResourceDefinitions served: websites.example.aioinformer.dev, "
            "podsets.example.aioinformer.dev\n"
        )
        second = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert second.decode().startswith("kubeconfig written to"), second
        async with await load_api_client(str(kubeconfig)) as api:
            client = Client(api)
            for kind in ("Website", "PodSet"):
                assert await client.list("example.aioinformer.dev/v1", kind) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        code = await asyncio.wait_for(proc.wait(), 30)
    assert code == 0


async def test_ctrl_c_as_soon_as_it_speaks_stops_it_cleanly(tmp_path: Path) -> None:
    """Ctrl-C right after the first line the sim prints (what a script waiting for it, or
    a quick user, does) stops it as Ctrl-C later does: "KubeSim stopped", status 0, no
    traceback (it is handled from before that line, not only from the "serving" one)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aioinformer", "sim", "--port", "0", "--plain-http",
        "--kubeconfig-out", str(tmp_path / "sim.kubeconfig"), "--crd", str(CRDS / "podset.yaml"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        first = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert first.startswith("CustomResourceDefinitions served"), first
        proc.send_signal(signal.SIGINT)
        rest = (await asyncio.wait_for(proc.stdout.read(), 30)).decode()
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        code = await proc.wait()
    assert code == 0 and rest.endswith("KubeSim stopped\n"), first + rest
    assert "Traceback" not in rest

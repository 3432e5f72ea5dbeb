"""load_api_client: every kubeconfig that cannot be used is one ConfigError line naming the
file (and the context), never quoting what the file holds; a good one reaches KubeSim."""

from __future__ import annotations

from pathlib import Path

import pytest

from aioinformer import ConfigError
from aioinformer._client.config import load_api_client
from aioinformer._client.rest import Request, RestClient
from aioinformer.testing import KubeSim

SECRET = "s3cr3t-token-in-the-file"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (f"users:\n- name: u\n  user: {{token: {SECRET}\n",
         "not valid YAML: expected ',' or '}', but got '<stream end>' at line 4, column 1"),
        (f"just a string {SECRET}\n", "not a kubeconfig (TypeError while reading it)"),
        (f"apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user: {{token: {SECRET}}}\n",
         "Invalid kube-config file. Expected key current-context in PATH"),
    ],
)  # fmt: skip
async def test_an_unusable_kubeconfig_is_one_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(content)
    with pytest.raises(ConfigError) as caught:
        await load_api_client(str(path))
    assert str(caught.value) == f"kubeconfig {path}: {message.replace('PATH', str(path))}"
    assert SECRET not in str(caught.value)


async def test_missing_files_and_contexts_are_named(sim: KubeSim, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^kubeconfig /nonexistent: no such file$"):
        await load_api_client("/nonexistent")
    path = sim.write_kubeconfig(tmp_path / "kc")
    with pytest.raises(ConfigError, match=rf"^kubeconfig {path}, context 'nope': "):
        await load_api_client(str(path), "nope")
    async with await load_api_client(str(path)) as api:
        doc = await RestClient(api).request_json("GET", "/api", Request("get", "discovery"))
    assert doc["versions"] == ["v1"]

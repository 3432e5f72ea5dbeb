"""aioinformer.testing.Example: install creates the CRDs (served when it returns) and the
samples, again without error; ``from_module`` reads an operator module's plain names; as a
program (a real process) it runs the operator on an embedded KubeSim until converged with
``--once``, and a configuration error is one line."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from aioinformer import Client, ConfigError, Manager
from aioinformer.testing import Example, KubeSim
from tests.support import REPO, run_python

CRD = REPO / "examples" / "crds" / "website.yaml"
SITE = {
    "apiVersion": "example.aioinformer.dev/v1",
    "kind": "Website",
    "metadata": {"name": "hi", "namespace": "demo"},
}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}


async def never(client: Client) -> tuple[str, bool]:
    return "never", False


def build(manager: Manager) -> None:
    pass


async def test_install_creates_the_crds_then_the_samples_and_may_run_again(sim: KubeSim) -> None:
    example = Example("sites", build, never, crds=[CRD], samples=[NAMESPACE, SITE])
    async with sim.api_client() as api:
        client = Client(api)
        await example.install(client)
        got = await client.get("example.aioinformer.dev/v1", "Website", "hi", "demo")
        assert got.name == "hi"
        await example.install(client)  # everything exists: left as it is
        assert (await client.refresh(got)).rv == got.rv


def test_from_module_reads_the_plain_names_of_an_operator_module() -> None:
    module = types.ModuleType("sites")
    module.__file__ = "/somewhere/sites.py"
    module.build, module.progress = build, never  # type: ignore[attr-defined]
    example = Example.from_module(module)
    assert (example.name, example.build, example.progress) == ("sites", build, never)
    assert example.crds == [] and example.samples == []
    module.CRDS, module.SAMPLES = (CRD,), (NAMESPACE, SITE)  # type: ignore[attr-defined]
    example = Example.from_module(module)
    assert example.crds == [CRD] and example.samples == [NAMESPACE, SITE]
    del module.progress  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"^sites: an example defines build\(manager\) and"):
        Example.from_module(module)


PROGRAM = """
import sys
from aioinformer import Client, Manager, Result

SAMPLES = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}]

def build(manager: Manager) -> None:
    cms = manager.informer("v1", "configmaps", namespace="default")

    async def reconcile(key: str) -> Result | None:
        cm = cms.snapshot().get(key)
        if cm is not None and not cm.labels.get("seen"):
            await manager.client.patch(cm, {"metadata": {"labels": {"seen": "yes"}}})
        return None

    manager.controller("labeller", reconcile, primary=cms)

async def progress(client: Client) -> tuple[str, bool]:
    cm = await client.get("v1", "ConfigMap", "a", "default")
    return f"seen={cm.labels.get('seen')}", cm.labels.get("seen") == "yes"

if __name__ == "__main__":
    from aioinformer.testing import Example

    sys.exit(Example.from_module(sys.modules[__name__]).main())
"""


async def test_as_a_program_it_runs_until_converged(tmp_path: Path) -> None:
    program = tmp_path / "labeller.py"
    program.write_text(PROGRAM)
    result = await run_python(str(program), "--once", "--timeout", "30")
    assert result.code == 0, result.out + result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("KubeSim serving on http://127.0.0.1:")
    assert lines[0].endswith("with nodes node-0, node-1, node-2")
    assert lines[-2:] == ["seen=yes", "labeller: converged"]
    result = await run_python(str(program), "--kubeconfig", str(tmp_path / "none"))
    assert result.code == 2 and not result.out
    assert result.err == f"python labeller.py: kubeconfig {tmp_path / 'none'}: no such file\n"


BROKEN = """
import sys
from aioinformer import Client, Manager

def build(manager: Manager) -> None:
    cms = manager.informer("v1", "configmaps")

    async def reconcile(key: str) -> None:
        return None

    manager.controller("wrong", reconcile, primary=cms, primary_kind="Secret")

async def progress(client: Client) -> tuple[str, bool]:
    return "waiting", False

if __name__ == "__main__":
    from aioinformer.testing import Example

    sys.exit(Example.from_module(sys.modules[__name__]).main())
"""


async def test_a_manager_that_fails_ends_the_program_with_its_error(tmp_path: Path) -> None:
    """The operator's manager fails (its controller's kind contradicts the server) while
    the progress lines run: the program stops at once with that error, in one line."""
    program = tmp_path / "broken.py"
    program.write_text(BROKEN)
    result = await run_python(str(program), "--timeout", "30")  # (not --once: until it fails)
    assert result.code == 2, result.out + result.err
    assert result.err == (
        "python broken.py: controller wrong: primary_kind='Secret', but the server says "
        "configmaps objects are 'ConfigMap'\n"
    )

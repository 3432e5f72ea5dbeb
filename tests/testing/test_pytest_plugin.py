"""The pytest plugin, used as an operator's author does: a test module in a fresh pytest
run (a subprocess), with the plugin's fixtures, in pytest-asyncio's auto and strict modes."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = '''
import pytest

from aioinformer import Manager, Result
from aioinformer.testing import eventually, install_crd

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: greetings.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: greetings, singular: greeting, kind: Greeting}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


@pytest.fixture
def operator():
    def build(manager: Manager) -> None:
        cms = manager.informer("v1", "configmaps", namespace="default")
        secrets = manager.informer("v1", "secrets", namespace="default")

        async def reconcile(key: str) -> Result | None:
            cm = cms.snapshot().get(key)
            if cm is not None and secrets.snapshot().get(key + "-copy") is None:
                await manager.client.create(
                    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": cm.name + "-copy"}},
                    owner=cm,
                )
            return None

        manager.controller("copier", reconcile, primary=cms, owns=[secrets])

    return build


@pytest.mark.asyncio
async def test_the_operator_copies(kubesim, manager, kube_client):
    kubesim.create("configmaps", {"metadata": {"name": "a"}, "data": {}}, "default")
    await eventually(lambda: "default/a-copy" in kubesim.versions("secrets"), "the copy")


@pytest.mark.asyncio
async def test_install_crd_waits_until_served(kube_client):
    served = await install_crd(kube_client, CRD)
    assert (served.kind, served.plural) == ("Greeting", "greetings")
    made = await kube_client.create(
        {"apiVersion": "example.com/v1", "kind": "Greeting", "metadata": {"name": "hi", "namespace": "default"}}
    )
    assert made.name == "hi"


@pytest.mark.asyncio
async def test_eventually_says_what_it_waited_for(kubesim):
    with pytest.raises(AssertionError, match="timed out after 0.1s waiting for a miracle"):
        await eventually(lambda: False, "a miracle", timeout=0.1)
'''


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_the_fixtures_work_in_both_pytest_asyncio_modes(
    pytester: pytest.Pytester, mode: str
) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", f"asyncio_mode={mode}")
    result.assert_outcomes(passed=3)


def test_the_manager_fixture_asks_for_the_operator(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_user="""
import pytest

@pytest.mark.asyncio
async def test_needs_an_operator(manager):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=auto")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*needs an 'operator' fixture*"])

"""The pytest plugin, used as an operator's author does: a test module in a fresh pytest
run (a subprocess), with the plugin's fixtures, in pytest-asyncio's auto and strict modes."""

from __future__ import annotations

import pytest

from tests.support import REPO

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


MARKED_TESTS = """
import pytest

from aioinformer.testing import eventually

CRD = "CRD_PATH"  # a YAML file: examples/crds/website.yaml
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}

pytestmark = pytest.mark.kubesim(nodes=2, cluster=True, crds=[CRD])


async def test_the_marker_starts_the_cluster_and_installs_the_crds(kubesim, kube_client):
    assert len(kubesim.list("nodes")) == 2
    made = await kube_client.create({"apiVersion": "example.aioinformer.dev/v1", "kind": "Website",
                                     "metadata": {"name": "hi", "namespace": "default"}})
    assert made.name == "hi"  # served before the test began: no waiting
    await kube_client.create(POD)

    async def running():
        pod = await kube_client.get("v1", "Pod", "p", "default")
        return pod.field("status.phase") == "Running" and bool(pod.field("spec.nodeName"))

    await eventually(running, "the pod scheduled and Running", timeout=5)


@pytest.mark.kubesim(nodes=1, cluster={"start_delay": 30.0})
async def test_the_closest_marker_wins_and_a_dict_sets_the_emulation(kubesim, kube_client):
    assert len(kubesim.list("nodes")) == 1 and not kubesim.list("customresourcedefinitions")
    await kube_client.create(POD)
    await eventually(lambda: bool(kubesim.get("pods", "p", "default")["spec"].get("nodeName")),
                     "the pod bound")
    assert kubesim.get("pods", "p", "default")["status"].get("phase") == "Pending"  # 30 s away


@pytest.fixture
def kubesim_options():
    return {"nodes": 3}


@pytest.mark.kubesim(tls=True)
async def test_the_options_fixture_and_the_marker_combine(kubesim):
    assert len(kubesim.list("nodes")) == 3 and kubesim.url.startswith("https://")


@pytest.mark.kubesim({"nodes": 1})
async def test_the_marker_takes_keywords_only(kubesim):
    pass
"""


def test_the_kubesim_marker_sets_cluster_crds_and_options(pytester: pytest.Pytester) -> None:
    website_crd = str(REPO / "examples" / "crds" / "website.yaml")
    pytester.makepyfile(test_user=MARKED_TESTS.replace("CRD_PATH", website_crd))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=auto")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.kubesim takes keyword options only*"])
    assert "PytestUnknownMarkWarning" not in result.stdout.str()


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

"""Discovery against KubeSim: resources resolved with their kind and scope, clear errors that
say what the server serves, a CRD found once it is served."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from aioinformer import ConfigError, Discovery
from aioinformer._client.rest import RestClient
from aioinformer.testing import KubeSim
from tests.support import REPO


@pytest.fixture
async def discovery(sim: KubeSim) -> AsyncIterator[Discovery]:
    async with sim.api_client() as api:
        yield Discovery(RestClient(api), wait=0.3, poll=0.05)


async def test_resolve_built_ins(discovery: Discovery) -> None:
    pods = await discovery.resolve("v1", "pods")
    assert (pods.kind, pods.namespaced, pods.group_version) == ("Pod", True, "v1")
    assert "status" in pods.subresources and "watch" in pods.verbs
    assert pods.path("ns", "p") == "/api/v1/namespaces/ns/pods/p"
    nodes = await discovery.resolve("v1", "nodes")
    assert not nodes.namespaced and nodes.path("ignored") == "/api/v1/nodes"
    deploys = await discovery.for_kind("apps/v1", "Deployment")
    assert deploys.plural == "deployments" and deploys.qualified == "deployments.apps"


@pytest.mark.parametrize(
    ("group_version", "plural", "message"),
    [
        ("v1", "pod", "no resource 'pod' in v1: did you mean 'pods'?"),
        ("v1", "Pods", "did you mean 'pods'?"),
        ("apps/v1", "deploymnets", "did you mean 'deployments'?"),
        ("apps/v2", "deployments", "apps serves v1, not v2"),
        ("v2", "pods", "the core group serves v1, not v2"),
        ("example.com/v1", "things", "is its CustomResourceDefinition installed?"),
        ("v1", "statefulsets", "no resource 'statefulsets' in v1: did you mean apps/v1?"),
        ("apps/v1", "cronjobs", "no resource 'cronjobs' in apps/v1: did you mean batch/v1?"),
        ("v1", "StatefulSet", "did you mean 'statefulsets' in apps/v1?"),
        ("v1", "deployment", "did you mean 'deployments' in apps/v1?"),
        (
            "v1",
            "hpa",
            "did you mean 'horizontalpodautoscalers' in autoscaling/v2 or "
            "'horizontalpodautoscalers' in autoscaling/v1?",
        ),
        (
            "apps/v1",
            "StatefulSet",
            "no resource 'StatefulSet' in apps/v1: did you mean 'statefulsets'?",
        ),
    ],
)
async def test_what_is_not_served_is_a_clear_error(
    discovery: Discovery, group_version: str, plural: str, message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        await discovery.resolve(group_version, plural)
    assert message in str(err.value)


async def test_a_crd_created_while_resolving_is_found(sim: KubeSim, discovery: Discovery) -> None:
    import yaml

    crd = yaml.safe_load((REPO / "examples" / "crds" / "podset.yaml").read_text())
    discovery.wait = 10.0
    resolving = asyncio.create_task(discovery.resolve("example.aioinformer.dev/v1", "podsets"))
    await asyncio.sleep(0)  # it is asking now, and the group is not served
    sim.create("customresourcedefinitions", crd)
    podsets = await resolving
    assert podsets.kind == "PodSet" and podsets.namespaced and "status" in podsets.subresources


@pytest.mark.looptime
async def test_a_resource_served_in_another_group_fails_at_once(discovery: Discovery) -> None:
    """Asked in the wrong group, a resource another group serves is no CRD on its way:
    the error comes at once, without waiting ``wait`` seconds for it to be served."""
    loop = asyncio.get_running_loop()
    discovery.wait = 3600.0
    start = loop.time()
    with pytest.raises(ConfigError, match="did you mean apps/v1"):
        await discovery.resolve("v1", "statefulsets")
    assert loop.time() == start

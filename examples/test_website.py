"""The Website operator on KubeSim, through aioinformer's pytest fixtures."""

import pytest
import website

from aioinformer import BuildFunction, Client, Manager, find_condition
from aioinformer.testing import KubeSim, eventually

pytestmark = pytest.mark.kubesim(nodes=2, cluster=True, crds=[website.CRD])


@pytest.fixture
def operator() -> BuildFunction:
    return website.build  # what the manager fixture runs


async def test_website(kubesim: KubeSim, manager: Manager, kube_client: Client) -> None:
    site = await kube_client.create(website.website_body("blog", {"index.html": "Hi"}, 2))

    async def ready(n: int) -> bool:
        now = await kube_client.refresh(site)
        count = now.field("status.readyReplicas", type=int)
        seen = now.field("status.observedGeneration", type=int) == now.generation
        return seen and count == n == len(kubesim.list("pods"))

    await eventually(lambda: ready(2), "2 pods ready")
    condition = find_condition(await kube_client.refresh(site), "Ready")
    assert condition and (condition["status"], condition["reason"]) == ("True", "PodsReady")
    assert kubesim.get("configmaps", "blog-pages", "default")["data"] == {"index.html": "Hi"}
    assert kubesim.get("configmaps", "websites", "default")["data"] == {"blog": "index.html"}
    events = [e["message"] for e in kubesim.list("events", "default")]
    assert sum(m.startswith("Created pod blog-") for m in events) == 2
    await kube_client.patch(site, {"spec": {"replicas": 3}})
    await eventually(lambda: ready(3), "3 pods ready")
    await kube_client.delete(site)  # the finalizer's cleanup runs, then the GC collects

    def cleaned_up() -> bool:
        names = [c["metadata"]["name"] for c in kubesim.list("configmaps", "default")]
        directory = kubesim.get("configmaps", "websites", "default")
        return names == ["websites"] and "data" not in directory and not kubesim.list("pods")

    await eventually(cleaned_up, "the directory entry removed and the children collected")


async def test_a_failing_reconcile_shows_on_the_website(
    kubesim: KubeSim, manager: Manager, kube_client: Client
) -> None:
    """A ConfigMap holds at most 1 MiB: the server refuses this site's pages, the
    reconcile raises, and `kubectl describe website huge` shows why (a Warning Event)."""
    await kube_client.create(website.website_body("huge", {"index.html": "x" * 1_100_000}))

    def warnings() -> list[str]:
        events = kubesim.list("events", "default")
        return [e["message"] for e in events if e["reason"] == "ReconcileError"]

    await eventually(lambda: bool(warnings()), "a ReconcileError event on the website")
    assert "must have at most 1048576 bytes" in warnings()[0]

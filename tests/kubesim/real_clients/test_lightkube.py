"""lightkube (sync client, typed models) against ``python -m aioinformer sim`` through
the sim's kubeconfig: get, list, create, patch (merge, strategic, JSON), server-side
apply, delete and watch, each read back from the server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kubesim.real_clients.simproc import SimProcess

lightkube = pytest.importorskip("lightkube", reason="lightkube is not installed (test extra)")
from lightkube import ApiError, Client, KubeConfig  # noqa: E402
from lightkube.models.meta_v1 import ObjectMeta  # noqa: E402
from lightkube.resources.apps_v1 import Deployment  # noqa: E402
from lightkube.resources.core_v1 import ConfigMap, Namespace  # noqa: E402
from lightkube.types import PatchType  # noqa: E402

NS = "lightkube"


@pytest.fixture(scope="module")
def kube(cli_sim: SimProcess) -> Iterator[Client]:
    client = Client(config=KubeConfig.from_file(str(cli_sim.kubeconfig)), field_manager="lk")
    client.create(Namespace(metadata=ObjectMeta(name=NS)))
    yield client
    client.close()


def test_create_get_list(kube: Client, cli_sim: SimProcess) -> None:
    made = kube.create(
        ConfigMap(metadata=ObjectMeta(name="a", labels={"k": "v"}), data={"x": "1"}), namespace=NS
    )
    assert made.metadata.uid and made.data == {"x": "1"}
    got = kube.get(ConfigMap, "a", namespace=NS)
    assert got.metadata.resourceVersion == made.metadata.resourceVersion
    names = [c.metadata.name for c in kube.list(ConfigMap, namespace=NS, labels={"k": "v"})]
    assert names == ["a"]
    with pytest.raises(ApiError) as err:
        kube.create(ConfigMap(metadata=ObjectMeta(name="a")), namespace=NS)
    assert err.value.status.code == 409 and err.value.status.reason == "AlreadyExists"
    assert cli_sim.get(f"/api/v1/namespaces/{NS}/configmaps/a")["data"] == {"x": "1"}


def test_list_pages_through_chunks(kube: Client) -> None:
    for i in range(5):
        kube.create(
            ConfigMap(metadata=ObjectMeta(name=f"chunk-{i}", labels={"chunk": "y"})), namespace=NS
        )
    listed = list(kube.list(ConfigMap, namespace=NS, labels={"chunk": "y"}, chunk_size=2))
    assert [c.metadata.name for c in listed] == [f"chunk-{i}" for i in range(5)]


def test_patches(kube: Client, cli_sim: SimProcess) -> None:
    kube.create(ConfigMap(metadata=ObjectMeta(name="p"), data={"a": "1"}), namespace=NS)
    kube.patch(ConfigMap, "p", {"data": {"b": "2"}}, namespace=NS, patch_type=PatchType.MERGE)
    kube.patch(
        ConfigMap,
        "p",
        [{"op": "remove", "path": "/data/a"}],
        namespace=NS,
        patch_type=PatchType.JSON,
    )
    kube.patch(ConfigMap, "p", {"data": {"c": "3"}}, namespace=NS)  # strategic, the default
    assert cli_sim.get(f"/api/v1/namespaces/{NS}/configmaps/p")["data"] == {"b": "2", "c": "3"}


def test_server_side_apply(kube: Client, cli_sim: SimProcess) -> None:
    labels = {"app": "lk"}
    dep = Deployment.from_dict(
        {
            "metadata": {"name": "lk", "namespace": NS},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        }
    )
    applied = kube.apply(dep)
    assert applied.spec.replicas == 2 and applied.metadata.generation == 1
    dep.spec.replicas = 3
    again = kube.apply(dep)
    assert again.spec.replicas == 3 and again.metadata.generation == 2
    fields = cli_sim.get(f"/apis/apps/v1/namespaces/{NS}/deployments/lk")["metadata"][
        "managedFields"
    ]
    assert [(f["manager"], f["operation"]) for f in fields] == [("lk", "Apply")]


def test_delete(kube: Client, cli_sim: SimProcess) -> None:
    kube.create(ConfigMap(metadata=ObjectMeta(name="gone")), namespace=NS)
    kube.delete(ConfigMap, "gone", namespace=NS)
    assert not cli_sim.exists(f"/api/v1/namespaces/{NS}/configmaps/gone")


def test_watch(kube: Client) -> None:
    """watch() from a list's resourceVersion sees the ADDED and MODIFIED of an object
    written after the list, in order: the server replays them from its watch history
    however late lightkube's (lazy) watch request arrives."""
    kube.create(ConfigMap(metadata=ObjectMeta(name="w-before")), namespace=NS)
    listed = kube.list(ConfigMap, namespace=NS, chunk_size=1000)
    assert "w-before" in [c.metadata.name for c in listed]  # consumed: its RV is known
    kube.create(ConfigMap(metadata=ObjectMeta(name="w")), namespace=NS)
    kube.patch(ConfigMap, "w", {"data": {"a": "1"}}, namespace=NS, patch_type=PatchType.MERGE)
    seen: list[tuple[str, str]] = []
    stream = kube.watch(
        ConfigMap,
        namespace=NS,
        fields={"metadata.name": "w"},
        resource_version=listed.resourceVersion,
        server_timeout=30,
    )
    for op, obj in stream:
        seen.append((op, obj.metadata.name))
        if op == "MODIFIED":
            break
    assert seen == [("ADDED", "w"), ("MODIFIED", "w")]

"""kubernetes_asyncio's own clients against KubeSim: typed APIs, CustomObjectsApi, the
dynamic client (discovery) and ``watch.Watch`` work unchanged."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.rest import ApiException
from kubernetes_asyncio.dynamic import DynamicClient

from aioinformer.testing import KubeSim, eventually
from tests.support import transcript


def v1pod(name: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={"app": "web"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox:1.36")]),
    )


async def test_core_v1_api_crud_and_watch(sim: KubeSim) -> None:
    async with sim.api_client() as api:
        core = client.CoreV1Api(api)
        await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="t")))
        created = await core.create_namespaced_pod("t", v1pod("a"))
        assert created.metadata.uid and created.spec.containers[0].image == "busybox:1.36"
        assert created.status.phase == "Pending"
        pods = await core.list_namespaced_pod("t")
        assert [p.metadata.name for p in pods.items] == ["a"]
        with pytest.raises(ApiException) as err:
            await core.create_namespaced_pod("t", v1pod("a"))
        assert err.value.status == 409
        w = watch.Watch()
        seen: list[tuple[str, str]] = []

        async def consume() -> None:
            async for ev in w.stream(
                core.list_namespaced_pod,
                "t",
                resource_version=pods.metadata.resource_version,
                timeout_seconds=2,
            ):
                seen.append((ev["type"], ev["object"].metadata.name))
                if len(seen) == 3:
                    w.stop()

        task = asyncio.create_task(consume())
        # the watch starts from the list's resourceVersion: it replays what follows,
        # whenever its request reaches the server
        await core.create_namespaced_pod("t", v1pod("b"))
        await core.patch_namespaced_pod("b", "t", {"metadata": {"labels": {"x": "y"}}})
        await core.delete_namespaced_pod("b", "t")
        await asyncio.wait_for(task, 10)
        assert seen == [("ADDED", "b"), ("MODIFIED", "b"), ("MODIFIED", "b")]


async def test_apps_v1_and_leases(sim: KubeSim) -> None:
    async with sim.api_client() as api:
        apps = client.AppsV1Api(api)
        sts = client.V1StatefulSet(
            metadata=client.V1ObjectMeta(name="web"),
            spec=client.V1StatefulSetSpec(
                service_name="web",
                replicas=2,
                selector=client.V1LabelSelector(match_labels={"app": "web"}),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels={"app": "web"}),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
                ),
            ),
        )
        made = await apps.create_namespaced_stateful_set("default", sts)
        assert made.metadata.generation == 1
        patched = await apps.patch_namespaced_stateful_set(
            "web", "default", {"spec": {"replicas": 3}}
        )
        assert patched.metadata.generation == 2
        status = await apps.patch_namespaced_stateful_set_status(
            "web", "default", {"status": {"replicas": 3, "readyReplicas": 1}}
        )
        assert status.metadata.generation == 2 and status.status.ready_replicas == 1
        for kind in ("daemon_set", "deployment", "replica_set"):
            lister = getattr(apps, f"list_namespaced_{kind}")
            assert (await lister("default")).items == []
        coord = client.CoordinationV1Api(api)
        lease = await coord.create_namespaced_lease(
            "default",
            client.V1Lease(
                metadata=client.V1ObjectMeta(name="leader"),
                spec=client.V1LeaseSpec(holder_identity="me", lease_duration_seconds=15),
            ),
        )
        assert lease.spec.holder_identity == "me"


async def test_custom_objects_api_and_dynamic_discovery(sim: KubeSim) -> None:
    crd = transcript("13a-crd-create-established")["request"]["body"]
    async with sim.api_client() as api:
        ext = client.ApiextensionsV1Api(api)
        await ext.create_custom_resource_definition(crd)

        async def established() -> bool:
            got = await ext.read_custom_resource_definition("podsets.example.aioinformer.dev")
            conditions = got.status.conditions or []
            return any(c.type == "Established" and c.status == "True" for c in conditions)

        await eventually(established, "the CRD to be Established")
        co = client.CustomObjectsApi(api)
        body = {
            "apiVersion": "example.aioinformer.dev/v1",
            "kind": "PodSet",
            "metadata": {"name": "ps"},
            "spec": {"replicas": 1},
        }
        made = await co.create_namespaced_custom_object(
            "example.aioinformer.dev", "v1", "default", "podsets", body
        )
        assert made["metadata"]["generation"] == 1
        listed = await co.list_namespaced_custom_object(
            "example.aioinformer.dev", "v1", "default", "podsets"
        )
        assert [i["metadata"]["name"] for i in listed["items"]] == ["ps"]
        dyn = await DynamicClient(api)
        podsets = await dyn.resources.get(api_version="example.aioinformer.dev/v1", kind="PodSet")
        got = await podsets.get(name="ps", namespace="default")
        assert got.spec.replicas == 1
        pods = await dyn.resources.get(api_version="v1", kind="Pod")
        assert (await pods.get(namespace="default")).items == []


async def test_kubeconfig_round_trip(sim: KubeSim, tmp_path: Path) -> None:
    path = sim.write_kubeconfig(tmp_path / "sim.kubeconfig")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    api = await config.new_client_from_config(config_file=str(path))
    async with api:
        version = await client.VersionApi(api).get_code()
        assert version.git_version == transcript("15d-version")["response"]["body"]["gitVersion"]
        nss = await client.CoreV1Api(api).list_namespace()
        assert "default" in [n.metadata.name for n in nss.items]


async def test_tls_with_self_signed_certificate(tmp_path: Path) -> None:
    async with KubeSim(tls=True) as sim:
        assert sim.url.startswith("https://127.0.0.1:")
        async with sim.api_client() as api:
            nss = await client.CoreV1Api(api).list_namespace()
            assert nss.items
        path = sim.write_kubeconfig(tmp_path / "tls.kubeconfig")
        api = await config.new_client_from_config(config_file=str(path))
        async with api:
            assert (await client.CoreV1Api(api).list_namespace()).items


async def test_binds_loopback_only_and_frees_the_port() -> None:
    sim = KubeSim()
    async with sim:
        assert sim.host == "127.0.0.1"
        port = sim.port
    reader_writer = None
    with pytest.raises(OSError):
        reader_writer = await asyncio.open_connection("127.0.0.1", port)
    assert reader_writer is None

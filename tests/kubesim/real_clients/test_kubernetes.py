"""The official ``kubernetes`` client (synchronous, typed pydantic models) against
``python -m aioinformer sim`` through the kubeconfig the sim writes.

Typed deserialisation is the check: a missing required field, a wrong type or a Status
where the API promises an object raises in the client. Every test also reads the result
back and asserts what the server now holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

from tests.kubesim.real_clients.simproc import SimProcess

NS = "official"
GROUP = "clients.aioinformer.dev"
GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                    },
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer"},
                                    "size": {"type": "string", "default": "m"},
                                },
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def api(cli_sim: SimProcess) -> Iterator[client.ApiClient]:
    """An ApiClient from the sim's kubeconfig (https, its CA, the bearer token), with the
    test namespace created."""
    api_client = config.new_client_from_config(config_file=str(cli_sim.kubeconfig))
    with api_client:
        client.CoreV1Api(api_client).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=NS))
        )
        yield api_client


def meta(name: str, **labels: str) -> client.V1ObjectMeta:
    return client.V1ObjectMeta(name=name, labels=labels or None)


def container(image: str = "nginx:1.25") -> client.V1Container:
    return client.V1Container(name="c", image=image)


def deployment(name: str, replicas: int = 1) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=meta(name),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[container()]),
            ),
        ),
    )


def test_pods_crud(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    pod = client.V1Pod(
        metadata=meta("p1", app="web"), spec=client.V1PodSpec(containers=[container()])
    )
    made = core.create_namespaced_pod(NS, pod)
    assert isinstance(made, client.V1Pod) and made.metadata.uid
    assert made.spec.containers[0].termination_message_path == "/dev/termination-log"
    assert made.status.phase == "Pending" and made.spec.restart_policy == "Always"
    got = core.read_namespaced_pod("p1", NS)
    assert got.metadata.uid == made.metadata.uid
    listed = core.list_namespaced_pod(NS, label_selector="app=web")
    assert [p.metadata.name for p in listed.items] == ["p1"]
    patched = core.patch_namespaced_pod("p1", NS, {"metadata": {"labels": {"tier": "a"}}})
    assert patched.metadata.labels == {"app": "web", "tier": "a"}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(NS, pod)
    assert err.value.status == 409
    deleted = core.delete_namespaced_pod("p1", NS)
    assert isinstance(deleted, client.V1Pod)  # an unscheduled or scheduled pod: the object


def test_services_crud_and_delete_returns_the_object(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    svc = client.V1Service(
        metadata=meta("s1"),
        spec=client.V1ServiceSpec(
            selector={"app": "web"}, ports=[client.V1ServicePort(port=80, target_port=8080)]
        ),
    )
    made = core.create_namespaced_service(NS, svc)
    assert made.spec.cluster_ip and made.spec.type == "ClusterIP"
    assert made.spec.ports[0].protocol == "TCP" and made.spec.session_affinity == "None"
    replaced = core.read_namespaced_service("s1", NS)
    replaced.spec.ports[0].port = 81
    assert core.replace_namespaced_service("s1", NS, replaced).spec.ports[0].port == 81
    gone = core.delete_namespaced_service("s1", NS)
    assert isinstance(gone, client.V1Service) and gone.metadata.name == "s1"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_service("s1", NS)
    assert err.value.status == 404


def test_configmaps_and_secrets(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=meta("cm1"), data={"a": "1"}))
    cm = core.read_namespaced_config_map("cm1", NS)
    cm.data["b"] = "2"
    assert core.replace_namespaced_config_map("cm1", NS, cm).data == {"a": "1", "b": "2"}
    status = core.delete_namespaced_config_map("cm1", NS)
    assert status["kind"] == "Status" and status["status"] == "Success"
    secret = core.create_namespaced_secret(
        NS, client.V1Secret(metadata=meta("sec1"), string_data={"pw": "hunter2"})
    )
    assert secret.data == {"pw": "aHVudGVyMg=="} and secret.type == "Opaque"
    assert secret.string_data is None
    assert core.delete_namespaced_secret("sec1", NS)["status"] == "Success"


def test_deployments_status_and_scale(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    made = apps.create_namespaced_deployment(NS, deployment("d1"))
    assert made.metadata.generation == 1
    assert made.spec.strategy.type == "RollingUpdate"
    assert made.spec.strategy.rolling_update.max_surge == "25%"
    assert made.spec.revision_history_limit == 10 and made.spec.progress_deadline_seconds == 600
    scale = apps.read_namespaced_deployment_scale("d1", NS)
    assert isinstance(scale, client.V1Scale) and scale.spec.replicas == 1
    scale.spec.replicas = 3
    assert apps.replace_namespaced_deployment_scale("d1", NS, scale).spec.replicas == 3
    patched = apps.patch_namespaced_deployment_scale("d1", NS, {"spec": {"replicas": 2}})
    assert patched.spec.replicas == 2
    assert apps.read_namespaced_deployment("d1", NS).spec.replicas == 2
    status = apps.patch_namespaced_deployment_status(
        "d1", NS, {"status": {"observedGeneration": 3, "replicas": 2}}
    )
    assert status.status.observed_generation == 3
    assert apps.read_namespaced_deployment_status("d1", NS).status.replicas == 2
    gone = apps.delete_namespaced_deployment("d1", NS)
    assert gone["kind"] == "Status"


def test_statefulset_and_replicaset_scale(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    labels = {"app": "st"}
    template = client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels=labels), spec=client.V1PodSpec(containers=[container()])
    )
    apps.create_namespaced_stateful_set(
        NS,
        client.V1StatefulSet(
            metadata=meta("st"),
            spec=client.V1StatefulSetSpec(
                service_name="st",
                selector=client.V1LabelSelector(match_labels=labels),
                template=template,
            ),
        ),
    )
    assert apps.read_namespaced_stateful_set_scale("st", NS).spec.replicas == 1
    assert (
        apps.patch_namespaced_stateful_set_scale("st", NS, {"spec": {"replicas": 4}}).spec.replicas
        == 4
    )
    assert apps.read_namespaced_stateful_set("st", NS).spec.pod_management_policy == "OrderedReady"


def test_namespaces(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    made = core.create_namespace(client.V1Namespace(metadata=meta("official-tmp")))
    assert made.status.phase == "Active" and made.spec.finalizers == ["kubernetes"]
    assert made.metadata.labels == {"kubernetes.io/metadata.name": "official-tmp"}
    gone = core.delete_namespace("official-tmp")  # typed "object": the Namespace (18c)
    assert gone["kind"] == "Namespace" and gone["status"]["phase"] == "Terminating"


def test_leases(api: client.ApiClient) -> None:
    coord = client.CoordinationV1Api(api)
    lease = coord.create_namespaced_lease(
        NS,
        client.V1Lease(
            metadata=meta("leader"),
            spec=client.V1LeaseSpec(holder_identity="me", lease_duration_seconds=15),
        ),
    )
    lease.spec.holder_identity = "you"
    renewed = coord.replace_namespaced_lease("leader", NS, lease)
    assert renewed.spec.holder_identity == "you"
    with pytest.raises(ApiException) as err:
        coord.replace_namespaced_lease("leader", NS, lease)  # stale resourceVersion
    assert err.value.status == 409
    assert coord.delete_namespaced_lease("leader", NS)["status"] == "Success"


def test_core_events(api: client.ApiClient) -> None:
    """A core/v1 Event, found by the involvedObject field selector kubectl describe uses."""
    core = client.CoreV1Api(api)
    ref = client.V1ObjectReference(kind="Pod", name="p", namespace=NS, api_version="v1")
    made = core.create_namespaced_event(
        NS,
        client.CoreV1Event(
            metadata=meta("ev1"),
            involved_object=ref,
            reason="Tested",
            message="hello",
            type="Normal",
            source=client.V1EventSource(component="pytest"),
        ),
    )
    assert made.involved_object.name == "p"
    listed = core.list_namespaced_event(NS, field_selector="involvedObject.name=p")
    assert [e.metadata.name for e in listed.items] == ["ev1"]


def test_jobs_and_cronjobs(api: client.ApiClient) -> None:
    batch = client.BatchV1Api(api)
    template = client.V1PodTemplateSpec(
        spec=client.V1PodSpec(containers=[container("busybox")], restart_policy="Never")
    )
    job = batch.create_namespaced_job(
        NS, client.V1Job(metadata=meta("j1"), spec=client.V1JobSpec(template=template))
    )
    assert job.spec.backoff_limit == 6 and job.spec.completions == 1
    assert job.spec.parallelism == 1 and job.spec.completion_mode == "NonIndexed"
    assert job.spec.selector.match_labels["batch.kubernetes.io/controller-uid"] == job.metadata.uid
    assert batch.list_namespaced_job(NS).items[0].metadata.name == "j1"
    cron = batch.create_namespaced_cron_job(
        NS,
        client.V1CronJob(
            metadata=meta("c1"),
            spec=client.V1CronJobSpec(
                schedule="*/5 * * * *",
                job_template=client.V1JobTemplateSpec(spec=client.V1JobSpec(template=template)),
            ),
        ),
    )
    assert cron.spec.concurrency_policy == "Allow" and cron.spec.suspend is False
    gone = batch.delete_namespaced_job("j1", NS, propagation_policy="Background")
    assert gone["kind"] == "Status"


def test_rbac(api: client.ApiClient) -> None:
    rbac = client.RbacAuthorizationV1Api(api)
    role = rbac.create_namespaced_role(
        NS,
        client.V1Role(
            metadata=meta("reader"),
            rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get"])],
        ),
    )
    assert role.rules[0].verbs == ["get"]
    binding = rbac.create_namespaced_role_binding(
        NS,
        client.V1RoleBinding(
            metadata=meta("reader"),
            role_ref=client.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="Role", name="reader"
            ),
            subjects=[
                client.RbacV1Subject(
                    kind="User", name="alice", api_group="rbac.authorization.k8s.io"
                )
            ],
        ),
    )
    assert binding.role_ref.name == "reader"
    cluster_role = rbac.create_cluster_role(client.V1ClusterRole(metadata=meta("official-view")))
    assert cluster_role.metadata.name == "official-view"
    assert "official-view" in [r.metadata.name for r in rbac.list_cluster_role().items]


def test_self_subject_access_review(api: client.ApiClient) -> None:
    authz = client.AuthorizationV1Api(api)
    review = authz.create_self_subject_access_review(
        client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    verb="list", resource="pods", namespace=NS
                )
            )
        )
    )
    assert review.status.allowed is True


def test_typed_watch(api: client.ApiClient) -> None:
    """``kubernetes.watch.Watch`` over a typed list: ADDED, MODIFIED, DELETED of a
    ConfigMap created after the list, decoded as V1ConfigMap."""
    core = client.CoreV1Api(api)
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    w = watch.Watch()
    seen: list[tuple[str, str]] = []
    started = threading.Event()

    def write() -> None:
        started.wait(10)
        core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=meta("watched")))
        core.patch_namespaced_config_map("watched", NS, {"data": {"a": "1"}})
        core.delete_namespaced_config_map("watched", NS)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        stream = w.stream(
            core.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=10
        )
        started.set()
        for event in stream:
            obj = event["object"]
            assert isinstance(obj, client.V1ConfigMap)
            seen.append((event["type"], obj.metadata.name))
            if event["type"] == "DELETED":
                w.stop()
    finally:
        writer.join(10)
    assert seen == [("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")]


def test_pagination(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    for i in range(5):
        core.create_namespaced_config_map(
            NS, client.V1ConfigMap(metadata=meta(f"page-{i}", page="y"))
        )
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_config_map(
            NS, label_selector="page=y", limit=2, _continue=token
        )
        names += [c.metadata.name for c in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"page-{i}" for i in range(5)] and pages == 3


def test_server_side_apply(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa"},
        "data": {"a": "1"},
    }
    made = core.patch_namespaced_config_map(
        "ssa", NS, body, field_manager="py", _content_type="application/apply-patch+yaml"
    )
    assert made.data == {"a": "1"}
    assert [(m.manager, m.operation) for m in made.metadata.managed_fields] == [("py", "Apply")]
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map(
            "ssa",
            NS,
            {**body, "data": {"a": "2"}},
            field_manager="other",
            _content_type="application/apply-patch+yaml",
        )
    assert err.value.status == 409


def test_dry_run(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    made = core.create_namespaced_config_map(
        NS, client.V1ConfigMap(metadata=meta("dry")), dry_run="All"
    )
    assert made.metadata.uid and made.metadata.resource_version is None
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("dry", NS)
    assert err.value.status == 404


def _crd(api: client.ApiClient) -> None:
    ext = client.ApiextensionsV1Api(api)
    try:
        ext.create_custom_resource_definition(GADGET_CRD)
    except ApiException as exc:
        assert exc.status == 409
    for _ in range(200):
        crd = ext.read_custom_resource_definition(f"gadgets.{GROUP}")
        conditions = {c.type: c.status for c in (crd.status.conditions or [])}
        if conditions.get("Established") == "True":
            return
        threading.Event().wait(0.05)
    raise AssertionError("the Gadget CRD was not Established")


def test_dynamic_client_custom_resource(api: client.ApiClient) -> None:
    """DynamicClient: discovery finds the CRD's kind; create (defaulted), get, patch,
    scale, delete of a custom resource."""
    _crd(api)
    dyn = dynamic.DynamicClient(api)
    gadgets = dyn.resources.get(api_version=f"{GROUP}/v1", kind="Gadget")
    assert gadgets.namespaced and gadgets.name == "gadgets"
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gadget",
        "metadata": {"name": "g1"},
        "spec": {"replicas": 1},
    }
    made = gadgets.create(body=body, namespace=NS)
    assert made.spec.size == "m"  # the schema's default
    got = gadgets.get(name="g1", namespace=NS)
    assert got.metadata.uid == made.metadata.uid
    patched = gadgets.patch(
        name="g1",
        namespace=NS,
        body={"spec": {"size": "l"}},
        content_type="application/merge-patch+json",
    )
    assert patched.spec.size == "l" and patched.metadata.generation == 2
    custom = client.CustomObjectsApi(api)
    scale = custom.get_namespaced_custom_object_scale(GROUP, "v1", NS, "gadgets", "g1")
    assert scale["spec"]["replicas"] == 1
    custom.patch_namespaced_custom_object_scale(
        GROUP, "v1", NS, "gadgets", "g1", {"spec": {"replicas": 5}}
    )
    assert gadgets.get(name="g1", namespace=NS).spec.replicas == 5
    custom.patch_namespaced_custom_object_status(
        GROUP, "v1", NS, "gadgets", "g1", {"status": {"ok": True}}
    )
    assert custom.get_namespaced_custom_object_status(GROUP, "v1", NS, "gadgets", "g1")[
        "status"
    ] == {"ok": True}
    gone = gadgets.delete(name="g1", namespace=NS)
    assert gone.kind == "Status"
    assert gadgets.get(namespace=NS).items == []


def test_dynamic_client_builtin(api: client.ApiClient) -> None:
    dyn = dynamic.DynamicClient(api)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    cms.create(
        body={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "dyn"},
            "data": {"a": "1"},
        },
        namespace=NS,
    )
    cms.patch(name="dyn", namespace=NS, body={"data": {"b": "2"}})
    assert cms.get(name="dyn", namespace=NS).data.to_dict() == {"a": "1", "b": "2"}
    applied = cms.server_side_apply(
        body={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "dyn"},
            "data": {"c": "3"},
        },
        namespace=NS,
        field_manager="dyn",
    )
    assert applied.data.c == "3"
    deps = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert "scale" in [s for s in deps.subresources]
    cms.delete(name="dyn", namespace=NS)
    assert [c.metadata.name for c in cms.get(namespace=NS, label_selector="x=y").items] == []


def test_dynamic_watch(api: client.ApiClient) -> None:
    dyn = dynamic.DynamicClient(api)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    cms.create(
        body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn-w"}}, namespace=NS
    )
    events: list[Any] = []
    for event in cms.watch(namespace=NS, field_selector="metadata.name=dyn-w", timeout=5):
        events.append((event["type"], event["object"].metadata.name))
        break
    assert events == [("ADDED", "dyn-w")]

"""The autoscaling, certificates.k8s.io, flowcontrol and apiregistration groups (their
strategies in kubesim.apis): discovery as recorded (15c), HPAs through both versions from
one storage, CSRs with their requester, status and approval, validation and RBAC, all over
real HTTP; the official ``kubernetes`` client and kubectl."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from aioinformer.testing import KubeSim, eventually
from tests.kubesim.kubectl import kubectl_sim
from tests.kubesim.server.test_watch import WatchReader, watch_params
from tests.support import transcript

HPA_V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
HPA_V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


async def call(
    http: aiohttp.ClientSession, method: str, path: str, body: Any = None, **kw: Any
) -> tuple[int, Any]:
    if body is not None:
        kw["data"] = orjson.dumps(body)
        kw.setdefault("headers", {})["Content-Type"] = kw.pop("ctype", "application/json")
    async with http.request(method, path, **kw) as r:
        return r.status, await r.json(content_type=None)


def v1_hpa(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {"scaleTargetRef": REF, "maxReplicas": 5, **spec},
    }


def csr_pem(cn: str = "jane") -> str:
    """A fresh PEM certificate request, base64 as the API's []byte field wants it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    req = x509.CertificateSigningRequestBuilder().subject_name(name).sign(key, hashes.SHA256())
    return base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode()


def csr(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": csr_pem(),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"],
            **spec,
        },
    }


# -- discovery ------------------------------------------------------------------------------


async def test_apis_is_the_recorded_group_list(http: aiohttp.ClientSession) -> None:
    """GET /apis answers 15c byte for byte: all 19 groups, versions in the recorded order
    (autoscaling v2 before v1, flowcontrol v1beta3 before v1beta2)."""
    async with http.get("/apis") as r:
        body = await r.read()
    assert body == orjson.dumps(transcript("15c-discovery-apis")["response"]["body"]) + b"\n"


async def test_group_version_documents(http: aiohttp.ClientSession) -> None:
    """Each new group/version lists its resources with the storage version's hash (one
    hash for both HPA versions: one storage), the subresources and the scope."""
    want = {
        "/apis/autoscaling/v1": ("horizontalpodautoscalers", True, "qwQve8ut294="),
        "/apis/autoscaling/v2": ("horizontalpodautoscalers", True, "qwQve8ut294="),
        "/apis/certificates.k8s.io/v1": ("certificatesigningrequests", False, "95fRKMXA+00="),
        "/apis/flowcontrol.apiserver.k8s.io/v1beta3": ("flowschemas", False, None),
        "/apis/flowcontrol.apiserver.k8s.io/v1beta2": ("flowschemas", False, None),
        "/apis/apiregistration.k8s.io/v1": ("apiservices", False, None),
    }
    for path, (plural, namespaced, svh) in want.items():
        status, doc = await call(http, "GET", path)
        assert status == 200, path
        entries = {e["name"]: e for e in doc["resources"]}
        assert entries[plural]["namespaced"] is namespaced
        assert f"{plural}/status" in entries
        if svh is not None:
            assert entries[plural]["storageVersionHash"] == svh
    _, doc = await call(http, "GET", "/apis/certificates.k8s.io/v1")
    names = [e["name"] for e in doc["resources"]]
    assert names == [
        "certificatesigningrequests",
        "certificatesigningrequests/approval",
        "certificatesigningrequests/status",
    ]
    _, hpa = await call(http, "GET", "/apis/autoscaling/v2")
    entry = hpa["resources"][0]
    assert (entry["shortNames"], entry["categories"]) == (["hpa"], ["all"])
    _, group = await call(http, "GET", "/apis/autoscaling")
    assert group["preferredVersion"] == {"groupVersion": "autoscaling/v2", "version": "v2"}


# -- HorizontalPodAutoscalers ---------------------------------------------------------------


async def test_hpa_v1_and_v2_are_one_object(http: aiohttp.ClientSession) -> None:
    """An HPA made through v1 reads through v2 with targetCPUUtilizationPercentage as the
    cpu Utilization metric, and back; defaults (minReplicas 1, the v1/v2 empty status)."""
    status, made = await call(
        http, "POST", HPA_V1, v1_hpa("web", targetCPUUtilizationPercentage=60)
    )
    assert status == 201, made
    assert made["spec"] == {
        "scaleTargetRef": REF,
        "minReplicas": 1,
        "maxReplicas": 5,
        "targetCPUUtilizationPercentage": 60,
    }
    assert made["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    _, v2 = await call(http, "GET", f"{HPA_V2}/web")
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 60},
            },
        }
    ]
    assert v2["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert "annotations" not in v2["metadata"]
    # a v2 write of another metric and a behavior shows in v1 as the alpha annotations
    v2["spec"]["metrics"].append(
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "qps"},
                "target": {"type": "AverageValue", "averageValue": "10"},
            },
        }
    )
    v2["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 60}}
    status, put = await call(http, "PUT", f"{HPA_V2}/web", v2)
    assert status == 200, put
    assert put["spec"]["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }
    _, v1 = await call(http, "GET", f"{HPA_V1}/web")
    anns = v1["metadata"]["annotations"]
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60
    assert orjson.loads(anns["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}
    ]
    assert orjson.loads(anns["autoscaling.alpha.kubernetes.io/behavior"]) == put["spec"]["behavior"]
    # and a v1 write (the annotations as read) keeps the v2-only fields
    v1["spec"]["maxReplicas"] = 7
    status, _ = await call(http, "PUT", f"{HPA_V1}/web", v1)
    assert status == 200
    _, again = await call(http, "GET", f"{HPA_V2}/web")
    assert again["spec"]["maxReplicas"] == 7
    assert again["spec"]["metrics"] == put["spec"]["metrics"]
    assert again["spec"]["behavior"] == put["spec"]["behavior"]
    assert "annotations" not in again["metadata"]


async def test_hpa_v2_defaults_and_lists(http: aiohttp.ClientSession) -> None:
    """A v2 HPA without metrics gets the cpu 80 % metric; v1 lists show it as
    targetCPUUtilizationPercentage 80; the v2 create status as the Go type writes it."""
    body = {"metadata": {"name": "api"}, "spec": {"scaleTargetRef": REF, "maxReplicas": 3}}
    status, made = await call(http, "POST", HPA_V2, body)
    assert status == 201, made
    assert made["spec"]["minReplicas"] == 1
    assert made["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80
    assert "behavior" not in made["spec"]
    assert made["status"] == {"currentMetrics": None, "desiredReplicas": 0}
    _, listed = await call(http, "GET", HPA_V1)
    assert listed["kind"] == "HorizontalPodAutoscalerList"
    assert listed["apiVersion"] == "autoscaling/v1"
    (item,) = listed["items"]
    assert item["spec"]["targetCPUUtilizationPercentage"] == 80
    assert "metrics" not in item["spec"]


async def test_hpa_status_through_v1(http: aiohttp.ClientSession) -> None:
    """/status through v1 writes currentCPUUtilizationPercentage, which v2 reads as the
    current cpu metric; the main resource cannot change status."""
    await call(http, "POST", HPA_V1, v1_hpa("web"))
    _, cur = await call(http, "GET", f"{HPA_V1}/web")
    cur["status"] = {
        "currentReplicas": 2,
        "desiredReplicas": 3,
        "currentCPUUtilizationPercentage": 41,
    }
    status, put = await call(http, "PUT", f"{HPA_V1}/web/status", cur)
    assert status == 200, put
    _, v2 = await call(http, "GET", f"{HPA_V2}/web")
    assert v2["status"]["desiredReplicas"] == 3
    assert v2["status"]["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 41}}}
    ]
    status, _ = await call(
        http, "PATCH", f"{HPA_V2}/web", {"status": {"desiredReplicas": 9}},
        ctype="application/merge-patch+json",
    )  # fmt: skip
    _, after = await call(http, "GET", f"{HPA_V1}/web")
    assert (status, after["status"]["desiredReplicas"]) == (200, 3)


async def test_hpa_watch_through_v1_sees_v2_writes(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """A v1 watch gets a v2 write converted."""
    _, made = await call(
        http,
        "POST",
        HPA_V2,
        {"metadata": {"name": "w"}, "spec": {"scaleTargetRef": REF, "maxReplicas": 2}},
    )
    rv = made["metadata"]["resourceVersion"]
    async with http.get(HPA_V1, params=watch_params(resourceVersion=rv)) as resp:
        watch = WatchReader(resp)
        patch = {"spec": {"maxReplicas": 4}}
        await call(http, "PATCH", f"{HPA_V2}/w", patch, ctype="application/merge-patch+json")
        event = await watch.next_event()
    assert event is not None
    assert event["type"] == "MODIFIED"
    obj = event["object"]
    assert (obj["apiVersion"], obj["spec"]["maxReplicas"]) == ("autoscaling/v1", 4)
    assert obj["spec"]["targetCPUUtilizationPercentage"] == 80


async def test_hpa_validation(http: aiohttp.ClientSession) -> None:
    """maxReplicas below minReplicas, no scaleTargetRef name, minReplicas 0: 422 with the
    upstream fields and messages."""
    cases = [
        (v1_hpa("a", minReplicas=6), "spec.maxReplicas", "must be greater than or equal to `minReplicas`"),
        (v1_hpa("b", scaleTargetRef={"kind": "Deployment"}), "spec.scaleTargetRef.name", "Required value"),
        (v1_hpa("c", minReplicas=0), "spec.minReplicas", "must be greater than or equal to 1"),
        (v1_hpa("d", maxReplicas=0), "spec.maxReplicas", "must be greater than 0"),
    ]  # fmt: skip
    for body, field, text in cases:
        status, err = await call(http, "POST", HPA_V1, body)
        assert status == 422, err
        assert err["details"]["kind"] == "HorizontalPodAutoscaler"
        causes = {c["field"]: c["message"] for c in err["details"]["causes"]}
        assert text in causes[field], causes
    _, ok = await call(http, "POST", HPA_V1, v1_hpa("ok"))
    ok["spec"]["minReplicas"] = 9
    status, err = await call(http, "PUT", f"{HPA_V1}/ok", ok)
    assert status == 422 and err["details"]["causes"][0]["field"] == "spec.maxReplicas"


async def test_hpa_table_columns(http: aiohttp.ClientSession) -> None:
    """kubectl's HPA columns: NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE."""
    await call(http, "POST", HPA_V1, v1_hpa("web", targetCPUUtilizationPercentage=60))
    for path in (HPA_V1, HPA_V2):
        _, table = await call(http, "GET", path, headers=TABLE)
        assert [c["name"] for c in table["columnDefinitions"]] == [
            "Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"
        ]  # fmt: skip
        cells = table["rows"][0]["cells"]
        assert cells[:6] == ["web", "Deployment/web", "<unknown>/60%", 1, 5, 0]


async def test_hpa_rbac_per_version_group(sim: KubeSim) -> None:
    """A rule for horizontalpodautoscalers in autoscaling grants both versions; status is
    a separate grant."""
    token = sim.add_user(
        "hpa-reader",
        [
            ("get", "autoscaling", "horizontalpodautoscalers"),
            ("create", "autoscaling", "horizontalpodautoscalers"),
        ],
    )
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as http:
        assert (await call(http, "POST", HPA_V1, v1_hpa("r")))[0] == 201
        assert (await call(http, "GET", f"{HPA_V1}/r"))[0] == 200
        assert (await call(http, "GET", f"{HPA_V1}/r/status"))[0] == 403
        assert (await call(http, "GET", HPA_V1))[0] == 403


async def test_hpa_dry_run_apply_and_namespace_deletion(
    sim: KubeSim, http: aiohttp.ClientSession
) -> None:
    """Dry run stores nothing; server-side apply through v1 creates; deleting the namespace
    deletes its HPAs."""
    await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "scratch"}})
    path = "/apis/autoscaling/v1/namespaces/scratch/horizontalpodautoscalers"
    status, _ = await call(http, "POST", f"{path}?dryRun=All", v1_hpa("dry"))
    assert status == 201 and (await call(http, "GET", f"{path}/dry"))[0] == 404
    status, applied = await call(
        http, "PATCH", f"{path}/applied?fieldManager=t", v1_hpa("applied", targetCPUUtilizationPercentage=50),
        ctype="application/apply-patch+yaml",
    )  # fmt: skip
    assert status == 201, applied
    assert applied["spec"]["targetCPUUtilizationPercentage"] == 50
    await call(http, "DELETE", "/api/v1/namespaces/scratch")
    await eventually(
        lambda: not sim.list("autoscaling/v2/horizontalpodautoscalers", "scratch"),
        "the namespace deletion to take its HPAs",
    )


# -- CertificateSigningRequests -------------------------------------------------------------


async def test_csr_requester_and_approval(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """spec.username/groups are the requester's whatever the body says; /approval adds the
    Approved condition with timestamps; /status cannot take it away; the main resource
    changes neither spec nor status."""
    token = sim.add_user("jane", [("*", "certificates.k8s.io", "certificatesigningrequests")])
    async with aiohttp.ClientSession(
        base_url=sim.url, headers={"Authorization": f"Bearer {token}"}
    ) as jane:
        status, made = await call(
            jane, "POST", CSRS, csr("j", username="admin", groups=["system:masters"])
        )
    assert status == 201, made
    assert made["spec"]["username"] == "jane"
    assert made["spec"]["groups"] == ["system:authenticated"]
    assert made["status"] == {}
    made["status"] = {
        "conditions": [{"type": "Approved", "status": "True", "reason": "R", "message": "ok"}]
    }
    status, approved = await call(http, "PUT", f"{CSRS}/j/approval", made)
    assert status == 200, approved
    (cond,) = approved["status"]["conditions"]
    assert cond["type"] == "Approved" and cond["lastUpdateTime"] and cond["lastTransitionTime"]
    assert approved["spec"]["username"] == "jane"
    # /status keeps the stored Approved condition
    approved["status"]["conditions"] = [{"type": "Failed", "status": "True", "reason": "X"}]
    status, after = await call(http, "PUT", f"{CSRS}/j/status", approved)
    assert status == 200, after
    assert [c["type"] for c in after["status"]["conditions"]] == ["Approved", "Failed"]
    # the main resource: spec and status as stored
    after["spec"]["signerName"] = "example.com/other"
    after["status"] = {}
    status, main = await call(http, "PUT", f"{CSRS}/j", after)
    assert status == 200
    assert main["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert len(main["status"]["conditions"]) == 2


async def test_csr_validation(http: aiohttp.ClientSession) -> None:
    """No request, a request that is not PEM, no signer, no usages, a short expiry; then
    Approved and Denied together through /approval."""
    junk = base64.b64encode(b"not a pem").decode()
    cases = [
        (csr("a", request=""), "spec.request", "Required value"),
        (csr("b", request=junk), "spec.request", "PEM block type must be CERTIFICATE REQUEST"),
        (csr("c", signerName=""), "spec.signerName", "Required value"),
        (csr("d", signerName="nodomain"), "spec.signerName", "fully qualified domain"),
        (csr("e", usages=[]), "spec.usages", "Required value"),
        (csr("f", usages=["flying"]), "spec.usages[0]", "Unsupported value"),
        (csr("g", expirationSeconds=60), "spec.expirationSeconds", "less than 600 seconds"),
    ]
    for body, field, text in cases:
        status, err = await call(http, "POST", CSRS, body)
        assert status == 422, (field, err)
        causes = {c["field"]: c["message"] for c in err["details"]["causes"]}
        assert text in causes.get(field, ""), causes
    _, made = await call(http, "POST", CSRS, csr("ok"))
    made["status"] = {"conditions": [
        {"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"},
    ]}  # fmt: skip
    status, err = await call(http, "PUT", f"{CSRS}/ok/approval", made)
    assert status == 422
    assert "mutually exclusive" in err["message"]


async def test_csr_rbac_approval_is_its_own_grant(sim: KubeSim) -> None:
    token = sim.add_user("signer", [("*", "certificates.k8s.io", "certificatesigningrequests")])
    sim.create("certificates.k8s.io/v1/certificatesigningrequests", csr("x"))
    async with aiohttp.ClientSession(
        base_url=sim.url, headers={"Authorization": f"Bearer {token}"}
    ) as http:
        _, cur = await call(http, "GET", f"{CSRS}/x")
        cur["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
        status, err = await call(http, "PUT", f"{CSRS}/x/approval", cur)
    assert status == 403, err


async def test_csr_table(http: aiohttp.ClientSession) -> None:
    """kubectl's CSR columns (Name, Age, SignerName, Requestor, RequestedDuration,
    Condition) and the condition cell after approval."""
    _, made = await call(http, "POST", CSRS, csr("t", expirationSeconds=3600))
    _, table = await call(http, "GET", CSRS, headers=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"
    ]  # fmt: skip
    cells = table["rows"][0]["cells"]
    assert (cells[0], cells[2:]) == (
        "t",
        ["kubernetes.io/kube-apiserver-client", "admin", "60m", "Pending"],
    )
    made["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    await call(http, "PUT", f"{CSRS}/t/approval", made)
    _, table = await call(http, "GET", CSRS, headers=TABLE)
    assert table["rows"][0]["cells"][5] == "Approved"


# -- real clients ---------------------------------------------------------------------------


def _official_client(sim: KubeSim) -> Any:
    pytest.importorskip("kubernetes")
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = sim.url
    cfg.api_key = {"authorization": f"Bearer {sim.token}"}
    return client, cfg


async def test_official_client_autoscaling_and_certificates(sim: KubeSim) -> None:
    """AutoscalingV1Api creates, AutoscalingV2Api reads the same HPA typed (metrics);
    CertificatesV1Api creates a CSR and approves it through replace_..._approval."""
    client, cfg = _official_client(sim)

    def run() -> tuple[Any, Any, Any]:
        with client.ApiClient(cfg) as api:
            v1 = client.AutoscalingV1Api(api)
            v1.create_namespaced_horizontal_pod_autoscaler(
                "default", v1_hpa("web", targetCPUUtilizationPercentage=70)
            )
            v2 = client.AutoscalingV2Api(api).read_namespaced_horizontal_pod_autoscaler(
                "web", "default"
            )
            certs = client.CertificatesV1Api(api)
            made = certs.create_certificate_signing_request(csr("c"))
            made.status.conditions = [
                client.V1CertificateSigningRequestCondition(
                    type="Approved", status="True", reason="Test"
                )
            ]
            approved = certs.replace_certificate_signing_request_approval("c", made)
            return v2, made, approved

    v2, made, approved = await asyncio.to_thread(run)
    assert isinstance(v2, client.V2HorizontalPodAutoscaler)
    assert v2.spec.metrics[0].resource.target.average_utilization == 70
    assert made.spec.username == "admin"
    assert [c.type for c in approved.status.conditions] == ["Approved"]


@pytest.mark.parametrize("minor", [28, 33])
async def test_kubectl_autoscale_get_hpa_and_certificate_approve(
    tmp_path: Path, minor: int
) -> None:
    """kubectl autoscale deployment, kubectl get hpa (its columns), kubectl certificate
    approve (PUT .../approval) and deny of another CSR, kubectl get csr; kubectl 1.28 and
    1.33 (which sends protobuf bodies where it can), each skipped when not installed."""
    async with kubectl_sim(tmp_path, min_minor=minor) as (sim, kubectl):
        sim.create(
            "apps/v1/deployments",
            {
                "metadata": {"name": "web"},
                "spec": {
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    },
                },
            },
        )
        await kubectl.ok("autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=70")
        listed = await kubectl.ok("get", "hpa")
        v2 = sim.get("autoscaling/v2/horizontalpodautoscalers", "web", "default")
        sim.create("certificates.k8s.io/v1/certificatesigningrequests", csr("yes"))
        sim.create("certificates.k8s.io/v1/certificatesigningrequests", csr("no"))
        await kubectl.ok("certificate", "approve", "yes")
        await kubectl.ok("certificate", "deny", "no")
        csrs = await kubectl.ok("get", "csr")
        approved = sim.get("certificates.k8s.io/v1/certificatesigningrequests", "yes")
    header, row = listed.splitlines()[:2]
    assert header.split() == [
        "NAME",
        "REFERENCE",
        "TARGETS",
        "MINPODS",
        "MAXPODS",
        "REPLICAS",
        "AGE",
    ]
    assert row.split()[:6] == ["web", "Deployment/web", "<unknown>/70%", "2", "5", "0"]
    assert (
        v2["spec"]["minReplicas"],
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
    ) == (2, 70)
    assert [c["type"] for c in approved["status"]["conditions"]] == ["Approved"]
    assert approved["status"]["conditions"][0]["reason"] == "KubectlApprove"
    rows = {line.split()[0]: line for line in csrs.splitlines()[1:]}
    assert rows["yes"].endswith("Approved") and rows["no"].endswith("Denied")


# -- flowcontrol and APIServices ------------------------------------------------------------

FC = "/apis/flowcontrol.apiserver.k8s.io"
APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"


async def test_flowcontrol_bootstrap_objects_and_versions(http: aiohttp.ClientSession) -> None:
    """The mandatory and suggested objects are there at start (FlowSchemas with the
    Dangling condition False), one storage through v1beta3 and v1beta2 (a priority level's
    nominalConcurrencyShares is v1beta2's assuredConcurrencyShares)."""
    _, schemas = await call(http, "GET", f"{FC}/v1beta3/flowschemas")
    names = {s["metadata"]["name"]: s for s in schemas["items"]}
    assert {"exempt", "probes", "catch-all", "global-default", "system-nodes"} <= set(names)
    exempt = names["exempt"]
    assert exempt["spec"]["priorityLevelConfiguration"] == {"name": "exempt"}
    assert exempt["spec"]["matchingPrecedence"] == 1
    assert exempt["status"]["conditions"][0]["type"] == "Dangling"
    assert exempt["metadata"]["annotations"] == {"apf.kubernetes.io/autoupdate-spec": "true"}
    _, v3 = await call(http, "GET", f"{FC}/v1beta3/prioritylevelconfigurations/global-default")
    _, v2 = await call(http, "GET", f"{FC}/v1beta2/prioritylevelconfigurations/global-default")
    assert v3["spec"]["limited"]["nominalConcurrencyShares"] == 20
    assert v2["spec"]["limited"]["assuredConcurrencyShares"] == 20
    assert "nominalConcurrencyShares" not in v2["spec"]["limited"]
    assert v2["apiVersion"] == "flowcontrol.apiserver.k8s.io/v1beta2"
    # a v1beta2 write lands in the one storage
    level = {
        "metadata": {"name": "mine"},
        "spec": {
            "type": "Limited",
            "limited": {"assuredConcurrencyShares": 7, "limitResponse": {"type": "Reject"}},
        },
    }
    status, made = await call(http, "POST", f"{FC}/v1beta2/prioritylevelconfigurations", level)
    assert status == 201, made
    assert (made["status"], made["metadata"]["generation"]) == ({}, 1)
    _, mine = await call(http, "GET", f"{FC}/v1beta3/prioritylevelconfigurations/mine")
    assert mine["spec"]["limited"]["nominalConcurrencyShares"] == 7


async def test_flowcontrol_validation_table_and_status(http: aiohttp.ClientSession) -> None:
    """matchingPrecedence out of range and a Limited level without ``limited`` are 422;
    the FlowSchema table has kubectl's columns; /status is served."""
    bad = {
        "metadata": {"name": "bad"},
        "spec": {"priorityLevelConfiguration": {"name": "x"}, "matchingPrecedence": 20000},
    }
    status, err = await call(http, "POST", f"{FC}/v1beta3/flowschemas", bad)
    assert status == 422 and err["details"]["causes"][0]["field"] == "spec.matchingPrecedence"
    bad_level = {"metadata": {"name": "bad"}, "spec": {"type": "Limited"}}
    status, err = await call(http, "POST", f"{FC}/v1beta3/prioritylevelconfigurations", bad_level)
    assert status == 422 and err["details"]["causes"][0]["field"] == "spec.limited"
    _, table = await call(http, "GET", f"{FC}/v1beta3/flowschemas", headers=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"
    ]  # fmt: skip
    rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
    assert rows["exempt"][1:4] == ["exempt", 1, "*"] and rows["exempt"][5] == "False"
    assert rows["catch-all"][1:4] == ["catch-all", 10000, "ByUser"]
    status, _ = await call(http, "GET", f"{FC}/v1beta3/flowschemas/exempt/status")
    assert status == 200


async def test_apiservices_match_discovery(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """One local APIService per served group/version (``v1.``, ``v2.autoscaling``, ...),
    Available; a CRD adds its own and removes it when it goes; a non-local one is stored
    with Available False (ServiceNotFound)."""
    _, listed = await call(http, "GET", APISERVICES)
    names = {a["metadata"]["name"]: a for a in listed["items"]}
    _, groups = await call(http, "GET", "/apis")
    want = {"v1."} | {
        f"{v['version']}.{g['name']}" for g in groups["groups"] for v in g["versions"]
    }
    assert set(names) == want
    core = names["v1."]
    assert core["spec"] == {"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    (cond,) = core["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Available", "True", "Local")
    assert names["v2.autoscaling"]["spec"]["versionPriority"] == 30
    _, table = await call(http, "GET", APISERVICES, headers=TABLE)
    row = next(r["cells"] for r in table["rows"] if r["cells"][0] == "v1.apps")
    assert row[1:3] == ["Local", "True"]
    crd = {
        "metadata": {"name": "things.example.dev"},
        "spec": {
            "group": "example.dev",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [
                {"name": "v1", "served": True, "storage": True,
                 "schema": {"openAPIV3Schema": {"type": "object"}}},
            ],
        },
    }  # fmt: skip
    await call(http, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    await sim.wait_served("example.dev/v1/things")
    mine = sim.get("apiregistration.k8s.io/v1/apiservices", "v1.example.dev")
    assert mine["spec"]["groupPriorityMinimum"] == 1000
    assert mine["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "true"}
    await call(
        http, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.example.dev"
    )

    async def gone() -> bool:
        return (await call(http, "GET", f"{APISERVICES}/v1.example.dev"))[0] == 404

    await eventually(gone, "the CRD's APIService to go")
    remote = {
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {
            "group": "metrics.k8s.io", "version": "v1beta1",
            "service": {"namespace": "kube-system", "name": "metrics-server"},
            "groupPriorityMinimum": 100, "versionPriority": 100,
        },
    }  # fmt: skip
    status, made = await call(http, "POST", APISERVICES, remote)
    assert status == 201, made
    (cond,) = made["status"]["conditions"]
    assert (cond["status"], cond["reason"]) == ("False", "ServiceNotFound")
    assert (await call(http, "GET", "/apis/metrics.k8s.io"))[0] == 404
    status, err = await call(
        http, "POST", APISERVICES, {**remote, "metadata": {"name": "v1.wrong"}}
    )
    assert status == 422 and err["details"]["causes"][0]["field"] == "metadata.name"

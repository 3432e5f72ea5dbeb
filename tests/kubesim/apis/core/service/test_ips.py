"""Service address allocation (kubesim.apis.core.service.ips): 18a's recorded Service, plus the allocator's
rules over HTTP."""

from __future__ import annotations

import ipaddress
import json

from aioinformer.testing import KubeSim
from kubesim.apis.core.service.ips import NODE_PORTS, SERVICE_CIDR, allocate
from tests.kubesim.replay import MERGE, masked, recorder, send
from tests.support import transcript

BASE = "/api/v1/namespaces/default/services"


def test_allocate_single_stack_defaults() -> None:
    svc = {"spec": {"ports": [{"port": 80}], "selector": {"a": "b"}, "type": "ClusterIP"}}
    assert allocate(svc, []) == []
    ip = svc["spec"]["clusterIP"]
    assert ipaddress.IPv4Address(ip) in SERVICE_CIDR and ip not in ("10.96.0.0", "10.96.0.1")
    assert svc["spec"]["clusterIPs"] == [ip]
    assert (svc["spec"]["ipFamilies"], svc["spec"]["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    taken = {"spec": {"clusterIP": ip}}
    causes = allocate(taken, [svc])
    assert [str(c) for c in causes] == [
        f'spec.clusterIPs: Invalid value: []string{{"{ip}"}}: failed to allocate IP {ip}: '
        "provided IP is already allocated"
    ]
    headless = {"spec": {"clusterIP": "None"}}
    assert allocate(headless, []) == []
    assert headless["spec"]["clusterIPs"] == ["None"]
    assert headless["spec"]["ipFamilyPolicy"] == "RequireDualStack"
    external = {"spec": {"type": "ExternalName", "externalName": "example.com"}}
    assert allocate(external, []) == [] and "clusterIP" not in external["spec"]


async def test_recorded_service_and_the_allocator_over_http(sim: KubeSim) -> None:
    """18a's Service create answers the recorded body (addresses aside, keys in order);
    an explicit address outside the range or taken is 422; NodePort gets node ports; an
    update that leaves the addresses out keeps them, changing them is 422; a deleted
    Service's address can be requested again."""
    create = next(
        s for s in transcript("18a")["setup"] if s["request"]["path"].endswith("/services")
    )
    async with recorder(sim) as http:
        status, svc, _ = await send(http, "POST", BASE, create["request"]["body"])
        assert status == 201
        want = create["response"]["body"]
        ip = svc["spec"]["clusterIP"]
        assert ipaddress.IPv4Address(ip) in SERVICE_CIDR and svc["spec"]["clusterIPs"] == [ip]
        mine, theirs = masked(svc), masked(want)
        for doc in (mine, theirs):
            doc["spec"]["clusterIP"], doc["spec"]["clusterIPs"] = "*", ["*"]
        assert json.dumps(mine["spec"]) == json.dumps(theirs["spec"])
        assert (mine["status"], mine["kind"]) == (theirs["status"], theirs["kind"])
        status, body, _ = await send(
            http,
            "POST",
            BASE,
            {
                "metadata": {"name": "far"},
                "spec": {"clusterIP": "192.168.0.9", "ports": [{"port": 1}]},
            },
        )
        assert status == 422
        assert body["message"] == (
            'Service "far" is invalid: spec.clusterIPs: Invalid value: []string{"192.168.0.9"}: '
            "failed to allocate IP 192.168.0.9: the provided IP (192.168.0.9) is not in the "
            "valid range. The range of valid IPs is 10.96.0.0/12"
        )
        status, body, _ = await send(
            http,
            "POST",
            BASE,
            {"metadata": {"name": "dup"}, "spec": {"clusterIP": ip, "ports": [{"port": 1}]}},
        )
        assert status == 422 and "provided IP is already allocated" in body["message"]
        status, node_port, _ = await send(
            http,
            "POST",
            BASE,
            {"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}},
        )
        assert status == 201 and node_port["spec"]["ports"][0]["nodePort"] in NODE_PORTS
        assert node_port["spec"]["externalTrafficPolicy"] == "Cluster"
        put = {"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}
        status, updated, _ = await send(http, "PUT", f"{BASE}/np", put)
        assert status == 200
        assert updated["spec"]["clusterIP"] == node_port["spec"]["clusterIP"]
        assert updated["spec"]["ports"] == node_port["spec"]["ports"]
        status, body, _ = await send(
            http, "PATCH", f"{BASE}/np", {"spec": {"clusterIP": ip}}, headers=MERGE
        )
        assert status == 422 and "may not change once set" in body["message"]
        status, _, _ = await send(http, "DELETE", f"{BASE}/svc-a")
        assert status == 200
        status, again, _ = await send(
            http,
            "POST",
            BASE,
            {"metadata": {"name": "reuse"}, "spec": {"clusterIP": ip, "ports": [{"port": 1}]}},
        )
        assert status == 201 and again["spec"]["clusterIPs"] == [ip]

"""RBAC in KubeSim: subresources are resources of their own, as the RBAC authorizer has it."""

from __future__ import annotations

import aiohttp
import pytest

from aioinformer.testing import KubeSim
from kubesim.apis.authorization.rbac import request_resource, resource_matches
from tests.kubesim.registry.test_listing import pod
from tests.support import transcript


@pytest.mark.parametrize(
    ("rule", "resource", "granted"),
    [
        ("pods", "pods", True),
        ("pods", "pods/status", False),
        ("pods/status", "pods/status", True),
        ("pods/status", "pods", False),
        ("*", "pods/binding", True),
        ("*/status", "deployments/status", True),
        ("*/status", "deployments", False),
        ("pods/*", "pods/log", True),
        ("pods/*", "pods", False),
        ("namespaces/finalize", "namespaces/status", False),
    ],
)
def test_resource_matches(rule: str, resource: str, granted: bool) -> None:
    assert resource_matches(rule, resource) is granted


def test_request_resource() -> None:
    assert request_resource("pods", None) == "pods"
    assert request_resource("namespaces", "finalize") == "namespaces/finalize"


async def test_a_parent_rule_does_not_grant_its_subresources(sim: KubeSim) -> None:
    """A user who may get and patch pods is refused pods/status and pods/binding with RBAC's
    403 (named resource, ``pods/status`` in the message, nosniff); granting ``pods/status``
    lets the status patch through; the admin's wildcard still reaches every subresource."""
    sim.create("pods", pod("web"), "default")
    token = sim.add_user("editor", rules=[("get", "", "pods"), ("patch", "", "pods")])
    merge = {"Content-Type": "application/merge-patch+json"}
    base = "/api/v1/namespaces/default/pods/web"
    async with aiohttp.ClientSession(
        base_url=sim.url, headers={"Authorization": f"Bearer {token}"}
    ) as s:
        async with s.patch(base, data=b'{"metadata":{"labels":{"a":"b"}}}', headers=merge) as r:
            assert r.status == 200
        async with s.patch(
            f"{base}/status", data=b'{"status":{"phase":"Running"}}', headers=merge
        ) as r:
            assert r.status == 403
            assert r.headers["X-Content-Type-Options"] == "nosniff"
            assert await r.json() == {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": 'pods "web" is forbidden: User "editor" cannot patch resource '
                '"pods/status" in API group "" in the namespace "default"',
                "reason": "Forbidden",
                "details": {"name": "web", "kind": "pods"},
                "code": 403,
            }
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "web"},
            "target": {"kind": "Node", "name": "n"},
        }
        async with s.post(f"{base}/binding", json=binding) as r:
            assert r.status == 403
            assert '"pods/binding"' in (await r.json())["message"]
    token = sim.add_user("status-writer", rules=[("patch", "", "pods/status"), ("get", "", "pods")])
    async with aiohttp.ClientSession(
        base_url=sim.url, headers={"Authorization": f"Bearer {token}"}
    ) as s:
        async with s.patch(
            f"{base}/status", data=b'{"status":{"phase":"Running"}}', headers=merge
        ) as r:
            assert r.status == 200 and (await r.json())["status"]["phase"] == "Running"
        async with s.patch(base, data=b'{"metadata":{"labels":{"c":"d"}}}', headers=merge) as r:
            assert r.status == 403
    admin = {"Authorization": f"Bearer {sim.token}"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=admin) as s:
        async with s.post(f"{base}/binding", json=binding) as r:
            assert r.status == 201
    assert sim.get("pods", "web", "default")["spec"]["nodeName"] == "n"


async def test_list_forbidden_body_is_unchanged(sim: KubeSim) -> None:
    """11h: without a name the message and details have none (as recorded)."""
    rec = transcript("11h")
    token = sim.add_user("alice")
    async with aiohttp.ClientSession(
        base_url=sim.url, headers={"Authorization": f"Bearer {token}"}
    ) as s:
        async with s.get(rec["request"]["path"]) as r:
            assert (r.status, await r.json()) == (403, rec["response"]["body"])

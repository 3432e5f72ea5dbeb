"""RESOURCE arguments resolved as kubectl resolves them, against KubeSim's discovery over
real HTTP: plurals, singulars, kinds, short names, NAME.GROUP, GROUP/VERSION/NAME, a CRD
installed at run time; what is not served is one line with the closest names."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer import Client, ConfigError
from aioinformer._cli.resources import ResourceName, parse_resource, resolve_resource
from aioinformer._client.rest import RestClient
from aioinformer.testing import install_crd
from tests.support import REPO


def test_parse_resource() -> None:
    assert parse_resource("pods") == ResourceName("pods")
    assert parse_resource("Pods") == ResourceName("pods")
    assert parse_resource("deployments.apps") == ResourceName("deployments", group="apps")
    assert parse_resource("podsets.example.aioinformer.dev") == ResourceName(
        "podsets", group="example.aioinformer.dev"
    )
    assert parse_resource("v1/configmaps") == ResourceName("configmaps", group_version="v1")
    assert parse_resource("apps/v1/statefulsets") == ResourceName(
        "statefulsets", group_version="apps/v1"
    )
    for bad in ("a/b/c/d", "apps//pods", "/pods", ""):
        with pytest.raises(ConfigError, match="bad resource"):
            parse_resource(bad)


@pytest.mark.parametrize(
    ("text", "group_version", "plural"),
    [
        ("pods", "v1", "pods"),
        ("pod", "v1", "pods"),
        ("po", "v1", "pods"),
        ("Pod", "v1", "pods"),
        ("v1/pods", "v1", "pods"),
        ("cm", "v1", "configmaps"),
        ("nodes", "v1", "nodes"),
        ("statefulsets", "apps/v1", "statefulsets"),
        ("sts", "apps/v1", "statefulsets"),
        ("deployments.apps", "apps/v1", "deployments"),
        ("apps/v1/deployments", "apps/v1", "deployments"),
        ("leases", "coordination.k8s.io/v1", "leases"),
        ("crd", "apiextensions.k8s.io/v1", "customresourcedefinitions"),
    ],
)
async def test_served_names_resolve(api: Any, text: str, group_version: str, plural: str) -> None:
    found = await resolve_resource(RestClient(api), text)
    assert (found.group_version, found.plural) == (group_version, plural)


async def test_a_crd_resolves_once_installed(api: Any) -> None:
    rest = RestClient(api)
    with pytest.raises(ConfigError, match="the server has no resource 'podsets'"):
        await resolve_resource(rest, "podsets")
    await install_crd(Client(api), REPO / "examples" / "crds" / "podset.yaml")
    for text in ("podsets", "podset", "podsets.example.aioinformer.dev", "PodSet"):
        found = await resolve_resource(rest, text)
        assert (found.group_version, found.plural, found.kind, found.namespaced) == (
            "example.aioinformer.dev/v1",
            "podsets",
            "PodSet",
            True,
        )
    found = await resolve_resource(rest, "example.aioinformer.dev/v1/podsets")
    assert found.kind == "PodSet"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("foos", "the server has no resource 'foos'"),
        ("podz", "the server has no resource 'podz': did you mean pods?"),
        ("apps/v1/deploymentz", "the server has no resource 'apps/v1/deploymentz': did you mean deployments.apps?"),
        ("apps/v2/deployments", "apps serves v1, not v2 (asked for deployments in apps/v2)"),
        ("pods.nosuch.io", "the server does not serve the API group 'nosuch.io'"),
        ("nosuch.io/v1/things", "the server does not serve the API group 'nosuch.io'"),
    ],
)  # fmt: skip
async def test_what_is_not_served_is_one_line(api: Any, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        await resolve_resource(RestClient(api), text)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)

"""Schema ``pattern``s as kube-apiserver v1.28 treats them: compiled by Go's regexp (RE2)
when the CRD is written, matched in linear time when a custom resource is. The messages
are the real server's (``/work/k8s-bin``; the differential scenario 30a replays them)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim

in_module_loop = pytest.mark.asyncio(loop_scope="module")
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GROUP = "re.aioinformer.dev"
NS = "patterns"


def crd(plural: str, patterns: dict[str, str], *, versions: int = 1) -> dict[str, Any]:
    """A CRD whose ``spec`` has one string field per pattern."""
    props = {k: {"type": "string", "pattern": p} for k, p in patterns.items()}
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": plural.capitalize()},
            "versions": [
                {
                    "name": f"v{i + 1}",
                    "served": True,
                    "storage": i == 0,
                    "schema": {"openAPIV3Schema": schema if i == 0 else {"type": "object"}},
                }
                for i in range(versions)
            ],
        },
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with KubeSim() as sim:
        headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}
        async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as s:
            async with s.post("/api/v1/namespaces", json={"metadata": {"name": NS}}) as r:
                assert r.status == 201
            yield s


async def served(http: aiohttp.ClientSession, plural: str, patterns: dict[str, str]) -> str:
    """Create the CRD, wait until its resource is served; the collection's path."""
    async with http.post(CRDS, json=crd(plural, patterns)) as r:
        assert r.status == 201, await r.text()
    path = f"/apis/{GROUP}/v1/namespaces/{NS}/{plural}"
    for _ in range(200):
        async with http.get(path) as r:
            if r.status == 200:
                return path
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never served")


async def create_cr(http: aiohttp.ClientSession, path: str, name: str, **spec: str) -> Any:
    kind = path.rsplit("/", 1)[1].capitalize()
    body = {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}
    async with http.post(path, json=body) as r:
        return r.status, await r.json()


INVALID = [
    ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
    ("(?<=a)b", "invalid or unsupported Perl syntax: `(?<`"),
    ("(?<n>a)", "invalid or unsupported Perl syntax: `(?<`"),
    ("\\C", "invalid escape sequence: `\\C`"),
    ("\\Z", "invalid escape sequence: `\\Z`"),
    ("(a)\\1", "invalid escape sequence: `\\1`"),
    ("a++", "invalid nested repetition operator: `++`"),
    ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
    ("(a", "missing closing ): `(a`"),
    ("\\", "trailing backslash at end of expression: ``"),
    ("a{1001}", "invalid repeat count: `{1001}`"),
    ("(a{100}){11}", "invalid repeat count: `{11}`"),
]


@in_module_loop
@pytest.mark.parametrize(("pattern", "error"), INVALID, ids=[p for p, _ in INVALID])
async def test_a_crd_with_a_pattern_go_refuses_is_422(
    http: aiohttp.ClientSession, pattern: str, error: str
) -> None:
    """A pattern Go's regexp cannot compile (lookaround, backreferences, Perl-only
    escapes, ...) makes the CRD invalid, in the apiserver's words; Python's ``re``
    accepted most of these and an uncompilable one matched everything."""
    async with http.post(CRDS, json=crd("things", {"v": pattern})) as r:
        body = await r.json()
    assert r.status == 422, body
    field = "spec.validation.openAPIV3Schema.properties[spec].properties[v].pattern"
    quoted = pattern.replace("\\", "\\\\")
    detail = f'Invalid value: "{quoted}": must be a valid regular expression, but isn\'t: '
    detail += f"error parsing regexp: {error}"
    assert body["message"] == (
        f'CustomResourceDefinition.apiextensions.k8s.io "things.{GROUP}" is invalid: '
        f"{field}: {detail}"
    )
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": detail, "field": field}
    ]


@in_module_loop
async def test_every_bad_pattern_is_a_cause_sorted_and_per_version_paths(
    http: aiohttp.ClientSession,
) -> None:
    """Each refused pattern is one cause, sorted by text as upstream sorts them; a CRD
    whose versions' schemas differ names each version's schema."""
    body = crd("others", {"b": "(?!x)", "a": "[z-a]", "c": "ok+"}, versions=2)
    async with http.post(CRDS, json=body) as r:
        got = await r.json()
    assert r.status == 422
    fields = [c["field"] for c in got["details"]["causes"]]
    base = "spec.versions[0].schema.openAPIV3Schema.properties[spec]"
    assert fields == [f"{base}.properties[a].pattern", f"{base}.properties[b].pattern"]


@in_module_loop
async def test_an_update_to_a_pattern_go_refuses_is_422(http: aiohttp.ClientSession) -> None:
    await served(http, "updated", {"v": "^a$"})
    async with http.get(f"{CRDS}/updated.{GROUP}") as r:
        current = await r.json()
    props = current["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    props["spec"]["properties"]["v"]["pattern"] = "^(?!a)"
    async with http.put(f"{CRDS}/updated.{GROUP}", json=current) as r:
        got = await r.json()
    assert r.status == 422, got
    assert "invalid or unsupported Perl syntax: `(?!`" in got["message"]


@in_module_loop
async def test_the_catastrophic_pattern_is_answered_at_once(http: aiohttp.ClientSession) -> None:
    """``^(a+)+$`` against 33 a's and a '!' hung the whole server (Python's backtracking
    ``re``: 2^33 steps); RE2 answers in one pass, 422 as kube-apiserver does, and the
    server keeps serving. A 1 MB value is answered too."""
    path = await served(http, "redos", {"v": "^(a+)+$"})
    value = "a" * 33 + "!"
    status, body = await create_cr(http, path, "bad", v=value)
    assert status == 422
    assert body["details"]["causes"][0]["message"] == (
        f"Invalid value: \"{value}\": spec.v in body should match '^(a+)+$'"
    )
    status, _ = await create_cr(http, path, "huge", v="a" * 1_000_000 + "!")
    assert status == 422
    status, _ = await create_cr(http, path, "good", v="a" * 1000)
    assert status == 201


@in_module_loop
@pytest.mark.parametrize(
    ("plural", "pattern", "value"),
    [
        ("dollars", "^[a-z]+$", "abc\n"),  # Python's $ also matches before a final newline
        ("digits", "^\\d+$", "٣"),  # Python's \d is Unicode; Go's is [0-9]
        ("words", "^\\w+$", "é"),  # Python's \w is Unicode; Go's is [0-9A-Za-z_]
        ("spaces", "^\\s$", "\u2003"),  # Python's \s is Unicode; Go's is [\t\n\f\r ]
    ],
)
async def test_values_are_matched_as_gos_regexp_matches_them(
    http: aiohttp.ClientSession, plural: str, pattern: str, value: str
) -> None:
    """A value Python's ``re`` matches but Go's regexp does not is refused (422)."""
    path = await served(http, plural, {"v": pattern})
    status, body = await create_cr(http, path, "x", v=value)
    assert status == 422, body
    assert body["details"]["causes"][0]["message"].endswith(f"should match '{pattern}'")

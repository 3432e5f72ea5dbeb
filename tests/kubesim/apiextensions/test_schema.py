"""Custom resources against their structural schema: the 422 causes in the apiserver's
form (23c recorded one), pruning with fieldValidation's warning (25b), defaults."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from aioinformer.testing import KubeSim, KubeSimApiError
from kubesim.apiextensions.schema import apply_defaults, prune, validate
from tests.kubesim.replay import RECPODSETS, bad_input_namespace
from tests.support import transcript

in_module_loop = pytest.mark.asyncio(loop_scope="module")
NS = "rec-bad-a"
RPS = f"/apis/rec.aioinformer.dev/v1/namespaces/{NS}/recpodsets"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim() -> AsyncIterator[KubeSim]:
    async with KubeSim() as s:
        await bad_input_namespace(s)
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}
    async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as s:
        yield s


def recpodset(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "rec.aioinformer.dev/v1",
        "kind": "RecPodSet",
        "metadata": {"name": name},
        "spec": spec,
    }


@in_module_loop
async def test_a_cr_of_the_wrong_type_is_422_in_the_apiservers_words(
    http: aiohttp.ClientSession,
) -> None:
    async with http.post(RPS, json=recpodset("str", {"replicas": "string", "template": {}})) as r:
        body = await r.json()
    assert r.status == 422
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'RecPodSet.rec.aioinformer.dev "str" is invalid: spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        "reason": "Invalid",
        "details": {
            "name": "str",
            "group": "rec.aioinformer.dev",
            "kind": "RecPodSet",
            "causes": [
                {
                    "reason": "FieldValueTypeInvalid",
                    "message": 'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
                    "field": "spec.replicas",
                }
            ],
        },
        "code": 422,
    }


@in_module_loop
async def test_minimum_as_recorded_and_required(http: aiohttp.ClientSession) -> None:
    """23c's first cause (spec.replicas below the schema's minimum) has this form; a
    missing required field is "Required value"; several causes are listed in brackets."""
    recorded = next(
        e for e in transcript("23c")["more_exchanges"] if e["response"]["status"] == 422
    )["response"]["body"]["details"]["causes"][0]
    async with http.post(RPS, json=recpodset("neg", {"replicas": -1})) as r:
        body = await r.json()
    assert r.status == 422
    causes = body["details"]["causes"]
    assert causes == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.template"},
        recorded,
    ]
    assert body["message"] == (
        'RecPodSet.rec.aioinformer.dev "neg" is invalid: [spec.template: Required value, '
        "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0]"
    )


@in_module_loop
async def test_updates_status_writes_and_in_process_writes_are_validated(
    http: aiohttp.ClientSession, sim: KubeSim
) -> None:
    sim.create(RECPODSETS, recpodset("ok", {"replicas": 1, "template": {}}), NS)
    merge = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{RPS}/ok", json={"spec": {"replicas": "x"}}, headers=merge) as r:
        assert r.status == 422
        assert (await r.json())["details"]["causes"][0]["field"] == "spec.replicas"
    async with http.patch(
        f"{RPS}/ok/status", json={"status": {"readyReplicas": True}}, headers=merge
    ) as r:
        assert r.status == 422
        assert (await r.json())["details"]["causes"][0]["message"] == (
            'Invalid value: "boolean": status.readyReplicas in body must be of type integer: "boolean"'
        )
    with pytest.raises(KubeSimApiError) as info:
        sim.create(RECPODSETS, recpodset("bad", {"replicas": 1.5, "template": {}}), NS)
    assert info.value.code == 422


@in_module_loop
async def test_unknown_fields_are_pruned_with_a_warning(
    http: aiohttp.ClientSession, sim: KubeSim
) -> None:
    """25b: an unknown spec field is dropped (Warning), fields under preserve-unknown-fields
    stay, unknown metadata fields are dropped too."""
    body = recpodset(
        "pruned", {"replicas": 1, "extra": {"x": 1}, "template": {"any": {"thing": [1]}}}
    )
    body["metadata"]["bogus"] = 1
    body["top"] = "level"
    async with http.post(RPS, json=body) as r:
        got = await r.json()
        warnings = r.headers.getall("Warning", [])
    assert r.status == 201
    assert warnings == [
        '299 - "unknown field \\"metadata.bogus\\""',
        '299 - "unknown field \\"spec.extra\\""',
        '299 - "unknown field \\"top\\""',
    ]
    assert got["spec"] == {"replicas": 1, "template": {"any": {"thing": [1]}}}
    assert "top" not in got and "bogus" not in got["metadata"]
    assert sim.get(RECPODSETS, "pruned", NS)["spec"] == got["spec"]


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10, "multipleOf": 2},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
                "when": {"type": "string", "format": "date-time"},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "tags": {
                    "type": "array",
                    "maxItems": 2,
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"type": "string"},
                },
                "labels": {
                    "type": "object",
                    "maxProperties": 1,
                    "additionalProperties": {"type": "string", "default": "x"},
                },
                "pod": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"k": {"type": "string", "default": "d"}},
                    },
                },
            },
        }
    },
}


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        (
            {"size": 12},
            "spec.size",
            "Invalid value: 12: spec.size in body should be less than or equal to 10",
        ),
        ({"size": 3}, "spec.size", "Invalid value: 3: spec.size in body should be a multiple of 2"),
        (
            {"size": 2, "mode": "c"},
            "spec.mode",
            'Unsupported value: "c": supported values: "a", "b"',
        ),
        ({"size": 2, "name": "toolong"}, "spec.name", "Too long: may not be longer than 5"),
        (
            {"size": 2, "name": "a"},
            "spec.name",
            'Invalid value: "a": spec.name in body should be at least 2 chars long',
        ),
        (
            {"size": 2, "name": "AB"},
            "spec.name",
            "Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'",
        ),
        (
            {"size": 2, "when": "soon"},
            "spec.when",
            'Invalid value: "soon": spec.when in body must be of type date-time: "soon"',
        ),
        (
            {"size": 2, "port": True},
            "spec.port",
            'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
        ),
        (
            {"size": 2, "tags": ["a", "b", "c"]},
            "spec.tags",
            "Too many: 3: must have at most 2 items",
        ),
        (
            {"size": 2, "tags": []},
            "spec.tags",
            "Invalid value: []interface {}{}: spec.tags in body should have at least 1 items",
        ),
        (
            {"size": 2, "tags": ["a", "a"]},
            "spec.tags",
            'Invalid value: []interface {}{"a", "a"}: spec.tags in body shouldn\'t contain duplicates',
        ),
        (
            {"size": 2, "labels": {"a": "1", "b": "2"}},
            "spec.labels",
            "Too many: 2: must have at most 1 items",
        ),
        (
            {"size": 2, "pod": {"spec": {}}},
            "spec.pod.apiVersion",
            "Required value: must not be empty",
        ),
        (
            {"size": 2, "ratio": 1},
            "spec.ratio",
            "Invalid value: 1: spec.ratio in body should be less than 1",
        ),
        (
            {"size": None},
            "spec.size",
            'Invalid value: "null": spec.size in body must be of type integer: "null"',
        ),
        (
            {"size": 2, "items": [{"k": 1}]},
            "spec.items[0].k",
            'Invalid value: "integer": spec.items[0].k in body must be of type string: "integer"',
        ),
        ({}, "spec.size", "Required value"),
    ],
)
def test_validation_messages(spec: dict[str, Any], field: str, message: str) -> None:
    causes = validate({"apiVersion": "x/v1", "kind": "X", "metadata": {}, "spec": spec}, SCHEMA)
    assert [(c.field, c.message) for c in causes][:1] == [(field, message)]


def test_valid_objects_pass() -> None:
    spec = {
        "size": 4,
        "mode": "b",
        "name": "abc",
        "when": "2024-01-01T00:00:00Z",
        "port": "http",
        "note": None,
        "tags": ["a"],
        "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {}},
        "ratio": 0.5,
        "size2": 1,
    }
    assert validate({"metadata": {"anything": 1}, "spec": spec}, SCHEMA) == []


def test_prune_and_defaults() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "n"},
        "spec": {
            "size": 2,
            "gone": 1,
            "items": [{"k": "v", "x": 1}, {}],
            "labels": {"a": None},
            "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "free": {"deep": 1}},
        },
        "status": {"any": 1},
    }
    assert prune(obj, SCHEMA) == ["spec.gone", "spec.items[0].x", "status"]
    assert obj["spec"]["pod"]["free"] == {"deep": 1} and obj["metadata"] == {"name": "n"}
    apply_defaults(obj, SCHEMA)
    assert obj["spec"]["mode"] == "a"
    assert obj["spec"]["items"] == [{"k": "v"}, {"k": "d"}]
    assert obj["spec"]["labels"] == {"a": "x"}  # null and not nullable: defaulted

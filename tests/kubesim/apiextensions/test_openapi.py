"""The OpenAPI published for CRDs: for the example PodSet CRD exactly what the recording
server published (its v3 document and its v2 paths and definitions), and the variants
(cluster scope, no status, scale, embedded resources, the v2 conversion rules)."""

from __future__ import annotations

import copy
import gzip
from typing import Any

import orjson

from kubesim.apiextensions.openapi import (
    CrdApi,
    object_schema,
    schema_name,
    to_operation_id,
    v2_additions,
    v2_template_keys,
    v3_document,
)
from tests.support import REPO

DATA = REPO / "kubesim/src/kubesim/openapi"


def load(name: str) -> Any:
    return orjson.loads(gzip.decompress((DATA / name).read_bytes()))


TEMPLATE = load("v3-apis_example.aioinformer.dev_v1.json.gz")
V2 = load("v2.json.gz")
SCALE = {
    k: v
    for k, v in load("v3-apis_apps_v1.json.gz")["components"]["schemas"].items()
    if k.startswith("io.k8s.api.autoscaling.v1.Scale")
}
#: the recording server's PodSet CRD (README: a whole-object preserve-unknown-fields schema)
RECORDED_SCHEMA = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def api(**kw: Any) -> CrdApi:
    base: dict[str, Any] = {
        "group": "example.aioinformer.dev",
        "version": "v1",
        "kind": "PodSet",
        "list_kind": "PodSetList",
        "plural": "podsets",
        "namespaced": True,
        "status": True,
        "scale": False,
        "schema": RECORDED_SCHEMA,
    }
    return CrdApi(**(base | kw))


def test_the_recorded_crd_document_is_reproduced_exactly() -> None:
    assert v3_document([api()], TEMPLATE, SCALE) == TEMPLATE


def test_the_recorded_v2_entries_are_reproduced_exactly() -> None:
    paths, defs = v2_additions([api()], V2)
    assert paths == {k: V2["paths"][k] for k in v2_template_keys()}
    for name in ("dev.aioinformer.example.v1.PodSet", "dev.aioinformer.example.v1.PodSetList"):
        assert defs[name] == V2["definitions"][name]


def test_names() -> None:
    assert to_operation_id("example.aioinformer.dev", True) == "ExampleAioinformerDev"
    assert to_operation_id("my-group.example.io", False) == "myGroupExampleIo"
    assert to_operation_id("v1beta1", True) == "V1beta1"
    assert api(group="batch.k8s.io").opid == "BatchV1"
    assert api(group="rec.aioinformer.dev").tag == "recAioinformerDev_v1"
    assert (
        schema_name("rec.aioinformer.dev", "v2", "RecPodSet") == "dev.aioinformer.rec.v2.RecPodSet"
    )


def test_cluster_scoped_without_status_with_scale() -> None:
    a = api(
        group="things.example.com",
        kind="Widget",
        list_kind="WidgetList",
        plural="widgets",
        namespaced=False,
        status=False,
        scale=True,
    )
    doc = v3_document([a], TEMPLATE, SCALE)
    assert sorted(doc["paths"]) == [
        "/apis/things.example.com/v1/widgets",
        "/apis/things.example.com/v1/widgets/{name}",
        "/apis/things.example.com/v1/widgets/{name}/scale",
    ]
    coll = doc["paths"]["/apis/things.example.com/v1/widgets"]
    assert [p["name"] for p in coll["parameters"]] == ["pretty"]
    assert coll["get"]["operationId"] == "listThingsExampleComV1Widget"
    assert coll["delete"]["operationId"] == "deleteThingsExampleComV1CollectionWidget"
    assert coll["get"]["tags"] == ["thingsExampleCom_v1"]
    item = doc["paths"]["/apis/things.example.com/v1/widgets/{name}"]
    assert [p["name"] for p in item["parameters"]] == ["name", "pretty"]
    assert item["parameters"][0]["description"] == "name of the Widget"
    scale = doc["paths"]["/apis/things.example.com/v1/widgets/{name}/scale"]
    assert scale["get"]["operationId"] == "readThingsExampleComV1WidgetScale"
    assert scale["put"]["description"] == "replace scale of the specified Widget"
    assert scale["parameters"][0]["description"] == "name of the Scale"
    assert scale["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
    }
    ok = scale["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"}
    assert set(SCALE) <= set(doc["components"]["schemas"])
    widget = doc["components"]["schemas"]["com.example.things.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "things.example.com", "kind": "Widget", "version": "v1"}
    ]
    lst = doc["components"]["schemas"]["com.example.things.v1.WidgetList"]
    assert lst["description"] == "WidgetList is a list of Widget"
    assert lst["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/com.example.things.v1.Widget"
    }
    paths, _ = v2_additions([a], V2)
    coll2 = paths["/apis/things.example.com/v1/widgets"]
    assert all("namespace" not in str(p) for p in coll2["parameters"])


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size", "note"],
            "properties": {
                "size": {"type": "integer", "minimum": 0},
                "note": {"type": "string", "nullable": True},
                "either": {"type": "string", "oneOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"x": {"type": "string"}},
                },
                "list": {
                    "type": "array",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "items": {"type": "string"},
                },
                "pod": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object"}},
                },
            },
        }
    },
}


def test_v3_keeps_the_schema_and_adds_type_meta_and_embedded_metadata() -> None:
    before = copy.deepcopy(SCHEMA)
    out = object_schema(
        api(schema=SCHEMA),
        TEMPLATE["components"]["schemas"]["dev.aioinformer.example.v1.PodSet"],
        True,
    )
    assert SCHEMA == before  # the CRD's own schema is not changed
    spec = out["properties"]["spec"]["properties"]
    assert spec["size"] == {"type": "integer", "minimum": 0}
    assert spec["either"]["oneOf"] and spec["note"]["nullable"] is True
    pod = spec["pod"]
    assert set(pod["properties"]) == {"spec", "apiVersion", "kind", "metadata"}
    assert pod["required"] == ["kind", "apiVersion"]
    assert pod["properties"]["metadata"]["allOf"][0]["$ref"].endswith("meta.v1.ObjectMeta")
    assert set(out["properties"]) == {"spec", "apiVersion", "kind", "metadata"}


def test_v2_conversion() -> None:
    _, defs = v2_additions([api(schema=SCHEMA)], V2)
    out = defs["dev.aioinformer.example.v1.PodSet"]
    spec = out["properties"]["spec"]
    assert spec["required"] == ["size"]  # nullable fields are not required in v2
    props = spec["properties"]
    assert props["note"] == {}  # nullable: no type, no nullable
    assert props["either"] == {"type": "string"}  # no oneOf
    assert props["free"] == {"type": "object"}  # preserve-unknown-fields: no properties
    assert props["list"] == {}  # and an array without items has no type
    assert props["pod"]["properties"]["metadata"] == {
        "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    }
    assert out["properties"]["metadata"]["$ref"] == (
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )

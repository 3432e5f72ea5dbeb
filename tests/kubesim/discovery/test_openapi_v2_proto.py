"""The protobuf ``/openapi/v2``: decoded field by field (gnostic's OpenAPIv2.proto numbers)
it holds what the JSON document holds; kubectl reading it is in test_openapi."""

from __future__ import annotations

import struct
from typing import Any

import orjson
import yaml

from kubesim.apis.builtin import builtin_registry
from kubesim.discovery.openapi import OpenApiDocs
from kubesim.discovery.openapi_v2_proto import encode_document

Fields = dict[int, list[Any]]


def decode(data: bytes) -> Fields:
    """A generic protobuf wire decoder: field number -> values (bytes for length-delimited,
    int for varints, float for fixed64)."""
    out: Fields = {}
    i = 0
    while i < len(data):
        key, i = varint(data, i)
        field, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = varint(data, i)
        elif wire == 1:
            value = struct.unpack("<d", data[i : i + 8])[0]
            i += 8
        elif wire == 2:
            n, i = varint(data, i)
            value = data[i : i + n]
            i += n
        else:
            raise AssertionError(f"wire type {wire}")
        out.setdefault(field, []).append(value)
    assert i == len(data)
    return out


def varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def named(fields: Fields, number: int) -> dict[str, Fields]:
    out = {}
    for raw in fields.get(number, []):
        f = decode(raw)
        out[f[1][0].decode()] = decode(f[2][0]) if 2 in f else {}
    return out


def extensions(fields: Fields, number: int) -> dict[str, Any]:
    out = {}
    for raw in fields.get(number, []):
        f = decode(raw)
        out[f[1][0].decode()] = yaml.safe_load(decode(f[2][0])[2][0].decode())
    return out


def test_the_served_v2_document_survives_the_round_trip() -> None:
    docs = OpenApiDocs(builtin_registry())
    doc = orjson.loads(docs.v2().body)
    top = decode(docs.v2_protobuf().body)
    assert top[1] == [b"2.0"]
    info = decode(top[2][0])
    assert info[1] == [b"Kubernetes"] and info[2] == [b"v1.28.0"]
    paths = named(decode(top[8][0]), 2)
    assert list(paths) == list(doc["paths"])
    item = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    patch = decode(item[8][0])  # PathItem.patch
    want = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch[5] == [want["operationId"].encode()]
    assert [c.decode() for c in patch[7]] == want["consumes"]
    assert extensions(patch, 13) == {k: v for k, v in want.items() if k.startswith("x-")}
    definitions = named(decode(top[9][0]), 1)
    assert list(definitions) == list(doc["definitions"])
    spec = definitions["io.k8s.api.apps.v1.DeploymentSpec"]
    props = named(decode(spec[25][0]), 1)
    assert set(props) == set(doc["definitions"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"])
    replicas = props["replicas"]
    assert decode(replicas[22][0])[1] == [b"integer"] and replicas[2] == [b"int32"]
    assert [r.decode() for r in spec[19]] == ["selector", "template"]
    selector = props["selector"]
    assert selector[1] == [b"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]
    deployment = definitions["io.k8s.api.apps.v1.Deployment"]
    assert extensions(deployment, 31) == {
        "x-kubernetes-group-version-kind": [
            {"group": "apps", "kind": "Deployment", "version": "v1"}
        ]
    }
    assert len(named(decode(top[10][0]), 1)) == len(doc["parameters"])
    sec = named(decode(top[13][0]), 1)["BearerToken"]
    assert decode(sec[2][0])[1] == [b"apiKey"]


def test_schema_details() -> None:
    doc = {
        "swagger": "2.0",
        "definitions": {
            "a": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "n": {"type": "number", "minimum": -1.5, "maxLength": 3, "default": 2},
                    "e": {"type": "string", "enum": ["x", "y"]},
                    "m": {"type": "object", "additionalProperties": {}},
                },
            }
        },
        "paths": {
            "/x": {
                "get": {
                    "parameters": [
                        {"name": "q", "in": "query", "type": "string", "uniqueItems": True},
                        {"name": "p", "in": "path", "type": "string", "required": True},
                        {"name": "body", "in": "body", "schema": {"$ref": "#/definitions/a"}},
                    ]
                }
            }
        },
    }
    top = decode(encode_document(doc))
    a = named(decode(top[9][0]), 1)["a"]
    assert decode(a[21][0]) == {2: [0]}  # additionalProperties: false is kept
    props = named(decode(a[25][0]), 1)
    assert props["n"][9] == [-1.5] and props["n"][11] == [3]
    assert yaml.safe_load(decode(props["n"][5][0])[2][0]) == 2
    assert [yaml.safe_load(decode(v)[2][0]) for v in props["e"][20]] == ["x", "y"]
    assert decode(props["m"][21][0]) == {1: [b""]}  # an empty schema is still present
    params = [decode(p) for p in decode(named(decode(top[8][0]), 2)["/x"][2][0])[8]]
    query = decode(decode(decode(params[0][1][0])[2][0])[3][0])  # ParametersItem.parameter
    assert query[4] == [b"q"] and query[2] == [b"query"] and query[20] == [1]
    path = decode(decode(decode(params[1][1][0])[2][0])[4][0])
    assert path[1] == [1] and path[5] == [b"string"]
    body = decode(decode(params[2][1][0])[1][0])
    assert body[3] == [b"body"] and decode(body[5][0])[1] == [b"#/definitions/a"]

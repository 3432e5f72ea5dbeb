"""The protobuf ``/openapi/v3/<group-version>``: decoded field by field (gnostic's
OpenAPIv3.proto numbers) it holds what the JSON document holds, for every built-in
document (a CRD's, served over HTTP, and the recorded apps/v1 answer byte for byte are in
test_openapi)."""

from __future__ import annotations

import struct

import orjson
import pytest

from kubesim.apis.builtin import builtin_registry
from kubesim.discovery.openapi import OpenApiDocs
from kubesim.discovery.openapi_v3_proto import encode_document
from tests.kubesim.discovery.test_openapi_v2_proto import Fields, decode, named
from tests.support import REPO


def pairs(raw: bytes) -> dict[str, Fields]:
    """The ``additional_properties = 1`` pairs of a ``*s`` message (``SchemasOrReferences``,
    ``MediaTypes``, ``Properties``, ...) as a dict, in order."""
    return named(decode(raw), 1)


def any_text(raw: bytes) -> str:
    """``Any.yaml`` (field 2) of an encoded ``Any``."""
    return str(decode(raw)[2][0].decode())


def extensions(fields: Fields, number: int) -> dict[str, str]:
    """The ``NamedAny`` extensions of a message, as their YAML text."""
    out = {}
    for raw in fields.get(number, []):
        f = decode(raw)
        out[f[1][0].decode()] = any_text(f[2][0])
    return out


def schema(oneof: Fields) -> Fields:
    """The ``Schema`` (1) of a ``SchemaOrReference``."""
    assert list(oneof) == [1], f"not a schema: {oneof}"
    return decode(oneof[1][0])


def reference(oneof: Fields) -> str:
    """The ``$ref`` of a ``SchemaOrReference``/``ParameterOrReference``/... ``Reference``."""
    assert list(oneof) == [2], f"not a reference: {oneof}"
    return str(decode(oneof[2][0])[1][0].decode())


def builtin_docs() -> OpenApiDocs:
    return OpenApiDocs(builtin_registry())


def test_apps_v1_decodes_to_its_json() -> None:
    docs = builtin_docs()
    doc = orjson.loads(docs.v3("apis/apps/v1").body)  # type: ignore[union-attr]
    pb = docs.v3_protobuf("apis/apps/v1")
    assert pb is not None
    top = decode(pb.body)
    assert top[1] == [b"3.0.0"]
    info = decode(top[2][0])
    assert info[1] == [b"Kubernetes"] and info[6] == [b"v1.28.0"]  # version is field 6
    paths = named(decode(top[4][0]), 1)
    assert list(paths) == list(doc["paths"])
    url = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    item = paths[url]
    want = doc["paths"][url]
    patch = decode(item[10][0])  # PathItem.patch
    assert patch[5] == [want["patch"]["operationId"].encode()]
    assert patch[1] == [b"apps_v1"]
    assert extensions(patch, 13) == {
        "x-kubernetes-action": "patch\n",
        "x-kubernetes-group-version-kind": "group: apps\nversion: v1\nkind: Deployment\n",
    }
    body = decode(decode(patch[7][0])[1][0])  # RequestBodyOrReference.request_body
    media = pairs(body[2][0])
    assert list(media) == list(want["patch"]["requestBody"]["content"])
    assert reference(decode(media["application/apply-patch+yaml"][1][0])) == (
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    )
    responses = decode(patch[8][0])
    codes = named(responses, 2)
    assert list(codes) == list(want["patch"]["responses"])
    ok = decode(codes["200"][1][0])
    assert ok[1] == [want["patch"]["responses"]["200"]["description"].encode()]
    # the path item's parameters (objects, not references), in order
    params = [decode(decode(p)[1][0]) for p in item[13]]
    assert [p[1][0].decode() for p in params] == [p["name"] for p in want["parameters"]]
    name = params[0]
    assert name[2] == [b"path"] and name[4] == [1]  # in, required
    name_schema = schema(decode(name[10][0]))
    assert name_schema[25] == [b"string"] and name_schema[20] == [1]  # type, uniqueItems
    query = decode(decode(patch[6][0])[1][0])  # Operation.parameters[0]
    assert query[1] == [b"dryRun"] and query[2] == [b"query"] and 4 not in query
    # components: every schema in order, and the bearer token scheme
    components = decode(top[5][0])
    schemas = pairs(components[1][0])
    assert list(schemas) == list(doc["components"]["schemas"])
    spec = schema(schemas["io.k8s.api.apps.v1.DeploymentSpec"])
    props = pairs(spec[31][0])
    json_spec = doc["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]
    assert list(props) == list(json_spec["properties"])
    assert [r.decode() for r in spec[23]] == json_spec["required"]
    replicas = schema(props["replicas"])
    assert replicas[25] == [b"integer"] and replicas[35] == [b"int32"]
    selector = schema(props["selector"])
    assert reference(decode(selector[26][0])) == (
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
    )
    scheme = decode(pairs(components[7][0])["BearerToken"][1][0])
    assert scheme[1] == [b"apiKey"] and scheme[3] == [b"authorization"] and scheme[4] == [b"header"]


def test_enum_default_and_extension_values() -> None:
    docs = builtin_docs()
    top = decode(docs.v3_protobuf("apis/apps/v1").body)  # type: ignore[union-attr]
    schemas = pairs(decode(top[5][0])[1][0])
    strategy = schema(schemas["io.k8s.api.apps.v1.DeploymentStrategy"])
    kind = schema(pairs(strategy[31][0])["type"])
    assert [any_text(v) for v in kind[24]] == ["Recreate\n", "RollingUpdate\n"]
    assert 33 not in kind  # no default
    port = pairs(schema(schemas["io.k8s.api.core.v1.ContainerPort"])[31][0])
    assert decode(schema(port["protocol"])[33][0]) == {3: [b"TCP"]}
    assert decode(schema(port["containerPort"])[33][0]) == {1: [0.0]}  # default 0, kept
    host_path = pairs(schema(schemas["io.k8s.api.core.v1.HostPathVolumeSource"])[31][0])
    assert any_text(schema(host_path["type"])[24][0]) == '""\n'  # the empty enum value
    container = schema(pairs(schema(schemas["io.k8s.api.core.v1.PodSpec"])[31][0])["containers"])
    assert extensions(container, 36) == {
        "x-kubernetes-patch-merge-key": "name\n",
        "x-kubernetes-patch-strategy": "merge\n",
    }
    item = schema(decode(decode(container[30][0])[1][0]))  # items: ItemsItem's one schema
    assert decode(item[33][0]) == {}  # default {}: present, nothing set
    assert reference(decode(item[26][0])) == "#/components/schemas/io.k8s.api.core.v1.Container"
    seccomp = schema(schemas["io.k8s.api.core.v1.SeccompProfile"])
    assert extensions(seccomp, 36)["x-kubernetes-unions"] == (
        "- discriminator: type\n"
        "  fields-to-discriminateBy:\n"
        "    localhostProfile: LocalhostProfile\n"
    )
    status = schema(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Status"])
    assert extensions(status, 36)["x-kubernetes-group-version-kind"].startswith(
        '- group: ""\n  kind: Status\n  version: v1\n- group: resource.k8s.io\n'
    )
    meta = pairs(schema(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"])[31][0])
    extra = decode(schema(meta["labels"])[32][0])  # AdditionalPropertiesItem
    values = schema(decode(extra[1][0]))  # its SchemaOrReference
    assert values[25] == [b"string"]
    assert decode(values[33][0]) == {3: [b""]}  # default "": the oneof's string, kept empty


@pytest.mark.parametrize(
    "path",
    sorted(
        orjson.loads((REPO / "kubesim/src/kubesim/openapi/v3-index.json").read_bytes())["paths"]
    ),
)
def test_every_builtin_document_decodes_to_its_json(path: str) -> None:
    docs = builtin_docs()
    served = docs.v3(path)
    if served is None:
        assert path == "apis/example.aioinformer.dev/v1"  # served only once its CRD is
        return
    doc = orjson.loads(served.body)
    top = decode(docs.v3_protobuf(path).body)  # type: ignore[union-attr]
    assert top[1] == [doc["openapi"].encode()]
    assert list(named(decode(top[4][0]), 1)) == list(doc["paths"])
    if "components" in doc:
        components = decode(top[5][0])
        schemas = pairs(components[1][0]) if 1 in components else {}
        assert list(schemas) == list(doc["components"].get("schemas", {}))


def test_schema_details() -> None:
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1", "x-note": {"a": [1, "two"]}},
        "paths": {"x-skip": True, "/a": {"get": {"responses": {"default": {"$ref": "#/r"}}}}},
        "components": {
            "schemas": {
                "s": {
                    "type": "object",
                    "nullable": True,
                    "additionalProperties": False,
                    "minimum": -1.5,
                    "maxLength": 3,
                    "maxItems": 2.0,  # not an integer: gnostic leaves it unset
                    "items": {"$ref": "#/components/schemas/t"},
                    "example": {"k": "true"},
                    "default": False,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
            }
        },
    }
    top = decode(encode_document(doc))
    info = decode(top[2][0])
    assert extensions(info, 7) == {"x-note": "a:\n    - 1\n    - two\n"}
    paths = decode(top[4][0])
    assert extensions(paths, 2) == {"x-skip": "true\n"}
    responses = decode(decode(named(paths, 1)["/a"][4][0])[8][0])
    assert reference(decode(responses[1][0])) == "#/r"  # Responses.default
    s = schema(pairs(decode(top[5][0])[1][0])["s"])
    assert s[1] == [1] and s[13] == [-1.5] and s[15] == [3] and 18 not in s
    assert decode(s[32][0]) == {2: [0]}  # additionalProperties: false is kept
    assert reference(decode(decode(s[30][0])[1][0])) == "#/components/schemas/t"
    assert any_text(s[7][0]) == 'k: "true"\n'
    assert decode(s[33][0]) == {2: [0]}
    assert extensions(s, 36) == {"x-kubernetes-preserve-unknown-fields": "true\n"}
    assert struct.pack("<d", -1.5) in encode_document(doc)

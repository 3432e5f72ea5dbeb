"""Create/update validation and generation rules (the kinds' strategies, on the building blocks
of kubesim.machinery.validation) against the kube-apiserver v1.28 transcripts in
tests/kubesim/conformance. Defaulting alone is in test_defaults.py."""

from __future__ import annotations

import copy
import json
from typing import Any

from kubesim.apiextensions.customresource import CUSTOM_RESOURCE_STRATEGY
from kubesim.apis.builtin import builtin_registry
from kubesim.encoding.gofmt import go_quote
from kubesim.machinery.validation import Cause, invalid_message, validate_name
from kubesim.registry.objects import spec_changed
from kubesim.registry.resource import ResourceType
from tests.support import transcript

REG = builtin_registry()


def rt(plural: str, group: str = "") -> ResourceType:
    found = REG.lookup(group, "v1", plural)
    assert found is not None
    return found


def validate_create(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """The causes of creating ``obj`` as ``rt`` (its strategy's, before defaulting)."""
    return rt.strategy.validate(rt, obj)


def validate_update(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """The causes of replacing ``old`` by ``new`` (its strategy's)."""
    return rt.strategy.validate_update(rt, old, new)


def apply_defaults(rt: ResourceType, obj: dict[str, Any], *, creating: bool = True) -> None:
    """``obj`` defaulted in place as ``rt``'s strategy defaults a create (or an update)."""
    rt.strategy.default(rt, obj, creating=creating)


def uses_generation(rt: ResourceType) -> bool:
    return rt.strategy.uses_generation


PODS = rt("pods")
NAMESPACES = rt("namespaces")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec},
    }


def stored_pod(**spec: Any) -> dict[str, Any]:
    obj = pod(**spec)
    apply_defaults(PODS, obj)
    return obj


def dicts(causes: list[Cause]) -> list[dict[str, str]]:
    return [c.to_dict() for c in causes]


# -- recorded cases -----------------------------------------------------------------------------


def test_invalid_pod_matches_11e() -> None:
    """11e-create-invalid: bad name + container without image -> exact message and causes."""
    rec = transcript("11e-create-invalid")
    body = copy.deepcopy(rec["request"]["body"])
    body["metadata"]["namespace"] = "tx01"  # the apiserver takes it from the URL
    expected = rec["response"]["body"]
    causes = validate_create(PODS, body)
    assert dicts(causes) == expected["details"]["causes"]
    assert invalid_message("Pod", body["metadata"]["name"], causes) == expected["message"]
    defaulted = copy.deepcopy(body)  # validation gives the same answer after defaulting
    apply_defaults(PODS, defaulted)
    assert dicts(validate_create(PODS, defaulted)) == expected["details"]["causes"]


def test_nodename_immutable_matches_10b() -> None:
    """10b-watch-fieldselector-nodename: moving a pod to another node -> 422 whose message
    embeds go-cmp's PodSpec diff, byte for byte."""
    rec = transcript("10b-watch-fieldselector-nodename")
    old = rec["list_before_watch"]["response"]["body"]["items"][0]
    (write,) = [w for w in rec["writes"] if w["response"]["status"] == 422]
    assert old["metadata"]["name"] == write["request"]["path"].rsplit("/", 1)[1]
    new = copy.deepcopy(old)
    new["spec"].update(write["request"]["body"]["spec"])  # the recorded merge patch
    expected = write["response"]["body"]
    causes = validate_update(PODS, old, new)
    assert dicts(causes) == expected["details"]["causes"]
    assert invalid_message("Pod", old["metadata"]["name"], causes) == expected["message"]


def test_lease_and_configmap_need_nothing_more() -> None:
    """14-lease-leader-election's Lease and 09g's ConfigMap are valid as sent."""
    lease = copy.deepcopy(transcript("14-lease-leader-election")["request"]["body"])
    lease["metadata"]["namespace"] = "tx14"
    assert validate_create(rt("leases", "coordination.k8s.io"), lease) == []
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}
    assert validate_create(rt("configmaps"), cm) == []


# -- names, metadata ----------------------------------------------------------------------------


def test_name_or_generate_name_required() -> None:
    obj = pod()
    del obj["metadata"]["name"]
    causes = validate_create(PODS, obj)
    assert dicts(causes) == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: name or generateName is required",
            "field": "metadata.name",
        }
    ]
    assert invalid_message("Pod", "", causes) == (
        'Pod "" is invalid: metadata.name: Required value: name or generateName is required'
    )


def test_generate_name() -> None:
    obj = pod("web-x7k2q")
    obj["metadata"]["generateName"] = "web-"  # a trailing dash is fine in a prefix
    assert validate_create(PODS, obj) == []
    obj["metadata"].update(generateName="Web_", name="Web_abcde")
    assert [c.field for c in validate_create(PODS, obj)] == [
        "metadata.generateName",
        "metadata.name",
    ]
    assert str(validate_create(PODS, obj)[0]) == (
        f'metadata.generateName: Invalid value: "Web_": {SUBDOMAIN_MSG}'
    )


def test_namespace_names_and_defaults() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}}
    assert dicts(validate_create(NAMESPACES, ns)) == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "team.a": {LABEL_MSG}',
            "field": "metadata.name",
        }
    ]
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {}}}
    assert validate_create(NAMESPACES, ns) == []
    apply_defaults(NAMESPACES, ns)
    assert json.dumps(ns) == json.dumps(
        {
            "kind": "Namespace",
            "apiVersion": "v1",
            "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
    )
    ns["metadata"]["namespace"] = "default"  # cluster-scoped
    assert str(validate_create(NAMESPACES, ns)[0]) == (
        "metadata.namespace: Forbidden: not allowed on this type"
    )


def test_name_rules_and_lengths() -> None:
    assert validate_name("a" * 253) == []
    assert [c.message for c in validate_name("a" * 254)] == [
        f'Invalid value: "{"a" * 254}": must be no more than 253 characters'
    ]
    assert [c.message for c in validate_name("a" * 64, "label")] == [
        f'Invalid value: "{"a" * 64}": must be no more than 63 characters'
    ]
    assert [c.message for c in validate_name("1web", rt("services").strategy.name_rule)] == [
        'Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric '
        "characters or '-', start with an alphabetic character, and end with an alphanumeric "
        "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]
    assert [c.message for c in validate_name("a/b", "path-segment")] == [
        "Invalid value: \"a/b\": may not contain '/'"
    ]


def test_label_and_annotation_messages() -> None:
    obj = pod()
    obj["metadata"]["labels"] = {"bad key": "ok", "ok": "-bad"}
    obj["metadata"]["annotations"] = {"example.com/Fine": "x", "a/b/c": "y"}
    assert [str(c) for c in validate_create(PODS, obj)] == [
        'metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'metadata.labels: Invalid value: "-bad": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
        "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        'metadata.annotations: Invalid value: "a/b/c": a qualified name must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and "
        "'/' (e.g. 'example.com/MyName')",
    ]


def test_invalid_message_format() -> None:
    one = Cause("FieldValueRequired", "Required value", "spec.x")
    assert invalid_message("Deployment", "d", [one], "apps") == (
        'Deployment.apps "d" is invalid: spec.x: Required value'
    )
    assert invalid_message("Pod", "p", [one, one]) == 'Pod "p" is invalid: spec.x: Required value'
    two = Cause("FieldValueForbidden", "Forbidden: no", "spec.y")
    assert invalid_message("Pod", "p", [one, two]) == (
        'Pod "p" is invalid: [spec.x: Required value, spec.y: Forbidden: no]'
    )
    assert go_quote('a"b\\c\n\u00a0é') == '"a\\"b\\\\c\\n\\u00a0é"'


def test_pod_spec_rules() -> None:
    obj = pod(restartPolicy="Sometimes")
    obj["spec"]["containers"].append({"name": "c", "image": "x"})
    assert [str(c) for c in validate_create(PODS, obj)] == [
        'spec.containers[1].name: Duplicate value: "c"',
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"',
    ]
    assert [str(c) for c in validate_create(PODS, pod(containers=[]))] == [
        "spec.containers: Required value"
    ]


# -- pod updates --------------------------------------------------------------------------------


def test_pod_updates_that_are_allowed() -> None:
    old = stored_pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "busybox:1.37"
    new["spec"]["activeDeadlineSeconds"] = 60
    new["spec"]["tolerations"].append({"key": "k", "operator": "Exists"})
    new["metadata"]["labels"] = {"tier": "web"}
    assert validate_update(PODS, old, new) == []
    # an update body without the decode-time defaults changes nothing either (the fields that
    # create-time admission added must still be sent, as upstream requires)
    bare = pod()
    bare["metadata"] = copy.deepcopy(old["metadata"])
    for key in ("tolerations", "priority", "preemptionPolicy"):
        bare["spec"][key] = old["spec"][key]
    assert validate_update(PODS, old, bare) == []
    del bare["spec"]["priority"]
    assert [c.field for c in validate_update(PODS, old, bare)] == ["spec"]


def test_pod_updates_that_are_forbidden() -> None:
    old = stored_pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"].append({"name": "d", "image": "x"})
    assert [str(c) for c in validate_update(PODS, old, new)] == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"
    ]
    new = copy.deepcopy(old)
    new["spec"]["tolerations"] = new["spec"]["tolerations"][:1]
    assert [c.field for c in validate_update(PODS, old, new)] == ["spec.tolerations"]
    new = copy.deepcopy(old)
    new["spec"]["hostname"] = "h"
    (cause,) = validate_update(PODS, old, new)
    assert cause.field == "spec" and cause.reason == "FieldValueForbidden"
    diff = cause.message.split("\n", 1)[1]
    nb = "\u00a0"
    assert diff == "\n".join(
        [
            f"{nb}{nb}core.PodSpec{{",
            f"{nb}{nb}\t... // 12 identical fields",
            f"{nb}{nb}\tSecurityContext:   &{{}},",
            f"{nb}{nb}\tImagePullSecrets:  nil,",
            f'-{nb}\tHostname:          "",',
            f'+{nb}\tHostname:          "h",',
            f'{nb}{nb}\tSubdomain:         "",',
            f"{nb}{nb}\tSetHostnameAsFQDN: nil,",
            f"{nb}{nb}\t... // 16 identical fields",
            f"{nb}{nb}}}",
            "",
        ]
    )


def test_metadata_update_rules() -> None:
    old = stored_pod()
    old["metadata"].update(uid="u1", deletionTimestamp="2026-11-29T19:22:36Z", finalizers=["a/b"])
    new = copy.deepcopy(old)
    new["metadata"].update(uid="u2", finalizers=["a/b", "c/d"])
    assert [str(c) for c in validate_update(PODS, old, new)] == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        'deleted, found new finalizers []string{"c/d"}',
        'metadata.uid: Invalid value: "u2": field is immutable',
    ]


# -- workloads, custom resources, generation ----------------------------------------------------


def test_workload_defaults_and_generation() -> None:
    deploy_rt = rt("deployments", "apps")
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod()["spec"]},
        },
    }
    assert validate_create(deploy_rt, deploy) == []
    apply_defaults(deploy_rt, deploy)
    spec = deploy["spec"]
    assert list(spec) == [
        "replicas",
        "selector",
        "template",
        "strategy",
        "revisionHistoryLimit",
        "progressDeadlineSeconds",
    ]
    assert spec["template"]["metadata"] == {"creationTimestamp": None, "labels": {"app": "web"}}
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert "tolerations" not in spec["template"]["spec"]  # admission only touches pods
    assert deploy["status"] == {}
    bad = copy.deepcopy(deploy)
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "db"}
    assert [str(c) for c in validate_create(deploy_rt, bad)] == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"db"}: '
        "`selector` does not match template `labels`"
    ]
    assert uses_generation(deploy_rt) and not uses_generation(PODS)
    assert not uses_generation(rt("leases", "coordination.k8s.io"))
    changed = copy.deepcopy(deploy)
    changed["spec"]["replicas"] = 3
    assert spec_changed(deploy_rt, deploy, changed)
    relabeled = copy.deepcopy(deploy)
    relabeled["metadata"]["labels"] = {"x": "y"}
    relabeled["status"] = {"replicas": 1}
    assert not spec_changed(deploy_rt, deploy, relabeled)


def test_custom_resources() -> None:
    with_status = ResourceType(
        "example.aioinformer.dev",
        "v1",
        "podsets",
        "podset",
        "PodSet",
        True,
        custom=True,
        strategy=CUSTOM_RESOURCE_STRATEGY,
    )
    without = ResourceType(
        "example.aioinformer.dev",
        "v1",
        "podsets",
        "podset",
        "PodSet",
        True,
        has_status=False,
        custom=True,
        strategy=CUSTOM_RESOURCE_STRATEGY,
    )
    obj = {
        "apiVersion": "example.aioinformer.dev/v1",
        "kind": "PodSet",
        "metadata": {"name": "a", "namespace": "n"},
        "spec": {"replicas": 1},
        "status": {"ready": 1},
    }
    assert validate_create(with_status, obj) == []
    assert uses_generation(with_status)
    other = copy.deepcopy(obj)
    other["status"] = {"ready": 2}
    assert not spec_changed(with_status, obj, other)
    assert spec_changed(without, obj, other)  # no status subresource: status is spec-like
    apply_defaults(with_status, obj)
    assert "status" not in obj
    apply_defaults(without, other)
    assert other["status"] == {"ready": 2}


def test_annotation_size_limit() -> None:
    obj = pod()
    obj["metadata"]["annotations"] = {"big": "x" * (256 * 1024)}
    assert dicts(validate_create(PODS, obj)) == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: must have at most 262144 bytes",
            "field": "metadata.annotations",
        }
    ]

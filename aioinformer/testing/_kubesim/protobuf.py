"""Protobuf request bodies (``application/vnd.kubernetes.protobuf``) decoded to JSON objects.

client-go's generated clients (kubectl >= 1.32 ``create namespace|configmap|secret|
serviceaccount|service|deployment ...``, and any Go controller on client-go >= 1.32) send
built-in objects as protobuf and do not retry with JSON after a 415. KubeSim decodes the
bodies of the kinds in :data:`KINDS` (the ``k8s\\x00`` magic, then a ``runtime.Unknown`` whose
``raw`` is the object's message) into the JSON object the same client would have sent.

The messages are described by field number (from the kinds' ``generated.proto``). A body of
another kind, or with a field KubeSim does not know, is a :class:`ProtobufUnsupported`: the
HTTP layer answers 415 with a message that names what was not understood. Responses are
never protobuf (clients that send protobuf accept JSON too).

Decoding follows the Go types: a zero scalar of a non-pointer field means "unset" and is
left out; a pointer field (``PTR``) keeps its zero; an embedded struct is an object even
when empty (``"status": {}``); a zero ``Time`` is ``null``.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable
from typing import Any

import orjson

from aioinformer.testing._kubesim.protomessages import (
    EXTRA_KINDS,
    EXTRA_MESSAGES,
    PTR,
    REPEATED,
    Message,
)
from aioinformer.testing._kubesim.status import ApiError, status_body

__all__ = ["KINDS", "MAGIC", "PROTOBUF", "ProtobufUnsupported", "decode_object", "protobuf_body"]

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"


class ProtobufUnsupported(Exception):
    """A protobuf body KubeSim cannot decode faithfully (the message says what)."""


# A field is (json name, kind, message, flags); kind: "str", "bytes", "int", "bool", "msg",
# "map" (string -> the message or scalar named in ``message``), "time", "intstr", "quantity",
# "json" (a FieldsV1-like message whose field 1 holds raw JSON).

_TYPE_META: Message = {1: ("apiVersion", "str", "", 0), 2: ("kind", "str", "", 0)}
_UNKNOWN: Message = {
    1: ("typeMeta", "msg", "TypeMeta", 0),
    2: ("raw", "bytes", "", 0),
    3: ("contentEncoding", "str", "", 0),
    4: ("contentType", "str", "", 0),
}
MESSAGES: dict[str, Message] = {
    "TypeMeta": _TYPE_META,
    "Unknown": _UNKNOWN,
    "ObjectMeta": {
        1: ("name", "str", "", 0),
        2: ("generateName", "str", "", 0),
        3: ("namespace", "str", "", 0),
        4: ("selfLink", "str", "", 0),
        5: ("uid", "str", "", 0),
        6: ("resourceVersion", "str", "", 0),
        7: ("generation", "int", "", 0),
        8: ("creationTimestamp", "time", "", 0),
        9: ("deletionTimestamp", "time", "", PTR),
        10: ("deletionGracePeriodSeconds", "int", "", PTR),
        11: ("labels", "map", "str", 0),
        12: ("annotations", "map", "str", 0),
        13: ("ownerReferences", "msg", "OwnerReference", REPEATED),
        14: ("finalizers", "str", "", REPEATED),
        17: ("managedFields", "msg", "ManagedFieldsEntry", REPEATED),
    },
    "ManagedFieldsEntry": {
        1: ("manager", "str", "", 0),
        2: ("operation", "str", "", 0),
        3: ("apiVersion", "str", "", 0),
        4: ("time", "time", "", PTR),
        6: ("fieldsType", "str", "", 0),
        7: ("fieldsV1", "json", "", PTR),
        8: ("subresource", "str", "", 0),
    },
    "OwnerReference": {
        1: ("kind", "str", "", 0),
        3: ("name", "str", "", 0),
        4: ("uid", "str", "", 0),
        5: ("apiVersion", "str", "", 0),
        6: ("controller", "bool", "", PTR),
        7: ("blockOwnerDeletion", "bool", "", PTR),
    },
    "LabelSelector": {
        1: ("matchLabels", "map", "str", 0),
        2: ("matchExpressions", "msg", "LabelSelectorRequirement", REPEATED),
    },
    "LabelSelectorRequirement": {
        1: ("key", "str", "", 0),
        2: ("operator", "str", "", 0),
        3: ("values", "str", "", REPEATED),
    },
    "ConfigMap": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("data", "map", "str", 0),
        3: ("binaryData", "map", "bytes", 0),
        4: ("immutable", "bool", "", PTR),
    },
    "Secret": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("data", "map", "bytes", 0),
        3: ("type", "str", "", 0),
        4: ("stringData", "map", "str", 0),
        5: ("immutable", "bool", "", PTR),
    },
    "Namespace": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "NamespaceSpec", 0),
        3: ("status", "msg", "NamespaceStatus", 0),
    },
    "NamespaceSpec": {1: ("finalizers", "str", "", REPEATED)},
    "NamespaceStatus": {1: ("phase", "str", "", 0)},
    "ServiceAccount": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("secrets", "msg", "ObjectReference", REPEATED),
        3: ("imagePullSecrets", "msg", "LocalObjectReference", REPEATED),
        4: ("automountServiceAccountToken", "bool", "", PTR),
    },
    "ObjectReference": {
        1: ("kind", "str", "", 0),
        2: ("namespace", "str", "", 0),
        3: ("name", "str", "", 0),
        4: ("uid", "str", "", 0),
        5: ("apiVersion", "str", "", 0),
        6: ("resourceVersion", "str", "", 0),
        7: ("fieldPath", "str", "", 0),
    },
    "LocalObjectReference": {1: ("name", "str", "", 0)},
    "Service": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "ServiceSpec", 0),
        3: ("status", "msg", "ServiceStatus", 0),
    },
    "ServiceSpec": {
        1: ("ports", "msg", "ServicePort", REPEATED),
        2: ("selector", "map", "str", 0),
        3: ("clusterIP", "str", "", 0),
        4: ("type", "str", "", 0),
        5: ("externalIPs", "str", "", REPEATED),
        7: ("sessionAffinity", "str", "", 0),
        8: ("loadBalancerIP", "str", "", 0),
        9: ("loadBalancerSourceRanges", "str", "", REPEATED),
        10: ("externalName", "str", "", 0),
        11: ("externalTrafficPolicy", "str", "", 0),
        12: ("healthCheckNodePort", "int", "", 0),
        13: ("publishNotReadyAddresses", "bool", "", 0),
        17: ("ipFamilyPolicy", "str", "", PTR),
        18: ("clusterIPs", "str", "", REPEATED),
        19: ("ipFamilies", "str", "", REPEATED),
        20: ("allocateLoadBalancerNodePorts", "bool", "", PTR),
        21: ("loadBalancerClass", "str", "", PTR),
        22: ("internalTrafficPolicy", "str", "", PTR),
    },
    "ServicePort": {
        1: ("name", "str", "", 0),
        2: ("protocol", "str", "", 0),
        3: ("port", "int", "", 0),
        4: ("targetPort", "intstr", "", 0),
        5: ("nodePort", "int", "", 0),
        6: ("appProtocol", "str", "", PTR),
    },
    "ServiceStatus": {1: ("loadBalancer", "msg", "LoadBalancerStatus", 0)},
    "LoadBalancerStatus": {1: ("ingress", "msg", "LoadBalancerIngress", REPEATED)},
    "LoadBalancerIngress": {1: ("ip", "str", "", 0), 2: ("hostname", "str", "", 0)},
    "Deployment": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "DeploymentSpec", 0),
        3: ("status", "msg", "DeploymentStatus", 0),
    },
    "DeploymentSpec": {
        1: ("replicas", "int", "", PTR),
        2: ("selector", "msg", "LabelSelector", 0),
        3: ("template", "msg", "PodTemplateSpec", 0),
        4: ("strategy", "msg", "DeploymentStrategy", 0),
        5: ("minReadySeconds", "int", "", 0),
        6: ("revisionHistoryLimit", "int", "", PTR),
        7: ("paused", "bool", "", 0),
        9: ("progressDeadlineSeconds", "int", "", PTR),
    },
    "DeploymentStrategy": {
        1: ("type", "str", "", 0),
        2: ("rollingUpdate", "msg", "RollingUpdateDeployment", 0),
    },
    "RollingUpdateDeployment": {
        1: ("maxUnavailable", "intstr", "", 0),
        2: ("maxSurge", "intstr", "", 0),
    },
    "DeploymentStatus": {
        1: ("observedGeneration", "int", "", 0),
        2: ("replicas", "int", "", 0),
        3: ("updatedReplicas", "int", "", 0),
        4: ("availableReplicas", "int", "", 0),
        5: ("unavailableReplicas", "int", "", 0),
        7: ("readyReplicas", "int", "", 0),
        8: ("collisionCount", "int", "", PTR),
    },
    "PodTemplateSpec": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "PodSpec", 0),
    },
    "PodSpec": {
        2: ("containers", "msg", "Container", REPEATED),
        3: ("restartPolicy", "str", "", 0),
        4: ("terminationGracePeriodSeconds", "int", "", PTR),
        5: ("activeDeadlineSeconds", "int", "", PTR),
        6: ("dnsPolicy", "str", "", 0),
        7: ("nodeSelector", "map", "str", 0),
        8: ("serviceAccountName", "str", "", 0),
        9: ("serviceAccount", "str", "", 0),
        10: ("nodeName", "str", "", 0),
        11: ("hostNetwork", "bool", "", 0),
        12: ("hostPID", "bool", "", 0),
        13: ("hostIPC", "bool", "", 0),
        27: ("shareProcessNamespace", "bool", "", PTR),
        15: ("imagePullSecrets", "msg", "LocalObjectReference", REPEATED),
        16: ("hostname", "str", "", 0),
        17: ("subdomain", "str", "", 0),
        19: ("schedulerName", "str", "", 0),
        20: ("initContainers", "msg", "Container", REPEATED),
        21: ("automountServiceAccountToken", "bool", "", PTR),
        24: ("priorityClassName", "str", "", 0),
        25: ("priority", "int", "", PTR),
        30: ("enableServiceLinks", "bool", "", PTR),
    },
    "Container": {
        1: ("name", "str", "", 0),
        2: ("image", "str", "", 0),
        3: ("command", "str", "", REPEATED),
        4: ("args", "str", "", REPEATED),
        5: ("workingDir", "str", "", 0),
        6: ("ports", "msg", "ContainerPort", REPEATED),
        7: ("env", "msg", "EnvVar", REPEATED),
        8: ("resources", "msg", "ResourceRequirements", 0),
        13: ("terminationMessagePath", "str", "", 0),
        14: ("imagePullPolicy", "str", "", 0),
        16: ("stdin", "bool", "", 0),
        17: ("stdinOnce", "bool", "", 0),
        18: ("tty", "bool", "", 0),
        20: ("terminationMessagePolicy", "str", "", 0),
        24: ("restartPolicy", "str", "", PTR),
    },
    "ContainerPort": {
        1: ("name", "str", "", 0),
        2: ("hostPort", "int", "", 0),
        3: ("containerPort", "int", "", 0),
        4: ("protocol", "str", "", 0),
        5: ("hostIP", "str", "", 0),
    },
    "EnvVar": {1: ("name", "str", "", 0), 2: ("value", "str", "", 0)},
    "ResourceRequirements": {
        1: ("limits", "map", "quantity", 0),
        2: ("requests", "map", "quantity", 0),
    },
}
#: (apiVersion, kind) -> the message of the kinds whose protobuf bodies are decoded.
MESSAGES.update(EXTRA_MESSAGES)
KINDS: dict[tuple[str, str], str] = {
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "Namespace"): "Namespace",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "Service"): "Service",
    ("apps/v1", "Deployment"): "Deployment",
    **EXTRA_KINDS,
}


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ProtobufUnsupported("truncated protobuf varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of a message: varints as ints, the rest as bytes."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
            out.append((num, v))
        elif wire == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise ProtobufUnsupported("truncated protobuf field")
            out.append((num, buf[i : i + n]))
            i += n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            out.append((num, buf[i : i + n]))
            i += n
        else:
            raise ProtobufUnsupported(f"protobuf wire type {wire} is not supported")
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _text(v: int | bytes) -> str:
    if not isinstance(v, bytes):
        raise ProtobufUnsupported("a string field is not length-delimited")
    return v.decode("utf-8", errors="strict")


def _scalar(kind: str, v: int | bytes) -> Any:
    if kind == "str":
        return _text(v)
    if kind == "bytes":
        if not isinstance(v, bytes):
            raise ProtobufUnsupported("a bytes field is not length-delimited")
        return base64.b64encode(v).decode()
    if kind == "quantity":
        return _text(_only(v, "Quantity").get(1, b""))
    if kind == "json":  # FieldsV1 and the like: a message whose field 1 is raw JSON
        raw = _only(v, "FieldsV1").get(1, b"")
        if not isinstance(raw, bytes):
            raise ProtobufUnsupported("a FieldsV1 field is not length-delimited")
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ProtobufUnsupported("a FieldsV1 field does not hold JSON") from None
    if not isinstance(v, int):
        raise ProtobufUnsupported(f"a {kind} field is not a varint")
    return bool(v) if kind == "bool" else _signed(v)


def _only(v: int | bytes, name: str) -> dict[int, int | bytes]:
    if not isinstance(v, bytes):
        raise ProtobufUnsupported(f"{name} is not a message")
    return dict(_fields(v))


def _time(v: int | bytes) -> str | None:
    f = _only(v, "Time")
    seconds = f.get(1, 0)
    if not isinstance(seconds, int) or not seconds:
        return None
    t = datetime.datetime.fromtimestamp(_signed(seconds), datetime.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _intstr(v: int | bytes) -> int | str:
    f = _only(v, "IntOrString")
    if f.get(1, 0) == 1:
        s = f.get(3, b"")
        return _text(s)
    n = f.get(2, 0)
    return _signed(n) if isinstance(n, int) else 0


def _map_entry(v: int | bytes, kind: str) -> tuple[str, Any]:
    f = _only(v, "map entry")
    key = _text(f.get(1, b""))
    value = f.get(2, b"" if kind != "int" else 0)
    return key, _scalar(kind, value)


_ZERO: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: v == "",
    "int": lambda v: v == 0,
    "bool": lambda v: v is False,
}


def decode_message(buf: bytes, name: str) -> dict[str, Any]:
    """Message ``name`` (a key of :data:`MESSAGES`) as JSON, following the Go types."""
    spec = MESSAGES.get(name)
    if spec is None:
        raise ProtobufUnsupported(f"KubeSim does not decode protobuf {name} messages")
    out: dict[str, Any] = {}
    for num, v in _fields(buf):
        f = spec.get(num)
        if f is None:
            raise ProtobufUnsupported(f"field {num} of {name} is not supported by KubeSim")
        key, kind, msg, flags = f
        if kind == "msg":
            value: Any = decode_message(_only_bytes(v, name), msg)
        elif kind == "map":
            k, item = _map_entry(v, msg)
            out.setdefault(key, {})[k] = item
            continue
        elif kind == "time":
            value = _time(v)
        elif kind == "intstr":
            value = _intstr(v)
        else:
            value = _scalar(kind, v)
        if flags & REPEATED:
            out.setdefault(key, []).append(value)
        elif not (flags & PTR) and kind in _ZERO and _ZERO[kind](value):
            continue
        else:
            out[key] = value
    for key, kind, _, flags in spec.values():
        if kind == "time" and not flags & PTR and key not in out:
            out[key] = None
    return out


def _only_bytes(v: int | bytes, name: str) -> bytes:
    if not isinstance(v, bytes):
        raise ProtobufUnsupported(f"a message field of {name} is not length-delimited")
    return v


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON object of a protobuf request body (magic + runtime.Unknown)."""
    if not body.startswith(MAGIC):
        raise ProtobufUnsupported("the body does not start with the protobuf magic k8s\\x00")
    unknown = decode_message(body[len(MAGIC) :], "Unknown")
    type_meta = unknown.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    if unknown.get("contentEncoding"):
        raise ProtobufUnsupported("a protobuf body with a content encoding is not supported")
    name = KINDS.get((api_version, kind))
    if name is None:
        raise ProtobufUnsupported(f"KubeSim does not decode protobuf {kind} ({api_version})")
    raw = base64.b64decode(unknown.get("raw", ""))
    return {"kind": kind, "apiVersion": api_version, **decode_message(raw, name)}


def protobuf_body(body: bytes) -> dict[str, Any]:
    """:func:`decode_object`, or the 415 a server answers for a body it cannot read (the
    message lists the media types that would be accepted, and says what was not)."""
    try:
        return decode_object(body)
    except (ProtobufUnsupported, UnicodeDecodeError, ValueError) as exc:
        msg = (
            "the body of the request was in an unknown format - accepted media types include: "
            f"application/json, application/yaml (KubeSim: {exc})"
        )
        raise ApiError(415, status_body(415, msg, "UnsupportedMediaType")) from None

"""The pod spec, as every kind with one shares it: Pods and the pod templates of the workloads,
Jobs, CronJobs and ReplicationControllers (kube-apiserver's ``pkg/apis/core``: defaults and
validation of ``PodSpec``).

* :func:`default_pod_spec` is ``SetDefaults_PodSpec`` and ``SetDefaults_Container``, with the
  containers' probes (``SetDefaults_Probe``, ``SetDefaults_HTTPGetAction``, a gRPC probe's
  ``service``) and lifecycle hooks' HTTP actions (keys in Go struct order);
  :func:`default_template` defaults a ``template`` (its metadata and spec);
* :func:`qos_class` is the pod's QoS class from its requests and limits;
* :func:`validate_pod_spec` is the part of ``ValidatePodSpec`` KubeSim checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.encoding.gofmt import go_quote
from kubesim.machinery.documents import order_keys, sub
from kubesim.machinery.validation import (
    Cause,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    not_supported,
    required,
    validate_labels,
)

__all__ = [
    "POD_SPEC_ORDER",
    "ZERO_TEMPLATE",
    "default_pod_spec",
    "default_template",
    "qos_class",
    "validate_pod_spec",
]

POD_SPEC_ORDER = (
    "volumes initContainers containers ephemeralContainers restartPolicy "
    "terminationGracePeriodSeconds activeDeadlineSeconds dnsPolicy nodeSelector "
    "serviceAccountName serviceAccount automountServiceAccountToken nodeName hostNetwork "
    "hostPID hostIPC shareProcessNamespace securityContext imagePullSecrets hostname subdomain "
    "affinity schedulerName tolerations hostAliases priorityClassName priority dnsConfig "
    "readinessGates runtimeClassName enableServiceLinks preemptionPolicy overhead "
    "topologySpreadConstraints setHostnameAsFQDN os hostUsers schedulingGates resourceClaims"
).split()
_CONTAINER_ORDER = (
    "name image command args workingDir ports envFrom env resources resizePolicy restartPolicy "
    "volumeMounts volumeDevices livenessProbe readinessProbe startupProbe lifecycle "
    "terminationMessagePath terminationMessagePolicy imagePullPolicy securityContext stdin "
    "stdinOnce tty"
).split()
_PROBE_ORDER = (
    "exec httpGet tcpSocket grpc initialDelaySeconds timeoutSeconds periodSeconds "
    "successThreshold failureThreshold terminationGracePeriodSeconds"
).split()
_HTTP_GET_ORDER = "path port host scheme httpHeaders".split()
#: ``SetDefaults_Probe``: each of these at 0 or absent takes its default.
_PROBE_DEFAULTS = (
    ("timeoutSeconds", 1),
    ("periodSeconds", 10),
    ("successThreshold", 1),
    ("failureThreshold", 3),
)


#: A pod template's zero value as its Go type marshals it (what the field manager compares
#: a create of a kind with a template against).
ZERO_TEMPLATE: Mapping[str, Any] = {
    "metadata": {"creationTimestamp": None},
    "spec": {"containers": None},
}


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _pull_policy(image: str) -> str:
    """``SetDefaults_Container``: Always for ``:latest`` or an untagged, undigested image
    (an image that does not parse, e.g. empty or with capitals, gets IfNotPresent)."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    repo = name[: len(name) - len(tag) - 1] if ":" in last else name
    parses = bool(repo) and repo == repo.lower()
    return "Always" if parses and (tag == "latest" or not (tag or digest)) else "IfNotPresent"


def default_pod_spec(spec: dict[str, Any], *, pod: bool = False) -> None:
    """``SetDefaults_PodSpec`` and ``SetDefaults_Container`` (pods and pod templates); with
    ``pod`` also ``SetDefaults_Pod``'s ``enableServiceLinks``, which a template does not get."""
    for c in (
        c for k in ("initContainers", "containers", "ephemeralContainers") for c in _l(spec.get(k))
    ):
        if isinstance(c, dict):
            c["resources"] = c.get("resources") or {}
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            c.setdefault("imagePullPolicy", _pull_policy(str(c.get("image") or "")))
            for port in map(_d, _l(c.get("ports"))):
                port.setdefault("protocol", "TCP")
            for key in ("livenessProbe", "readinessProbe", "startupProbe"):
                if isinstance(c.get(key), dict):
                    _default_probe(c[key])
            for hook in _d(c.get("lifecycle")).values():
                if isinstance(hook, dict) and isinstance(hook.get("httpGet"), dict):
                    _default_http_get(hook["httpGet"])
            order_keys(c, _CONTAINER_ORDER)
    if spec.get("serviceAccount") and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    for k, v in (
        ("restartPolicy", "Always"),
        ("terminationGracePeriodSeconds", 30),
        ("dnsPolicy", "ClusterFirst"),
    ):
        spec.setdefault(k, v)
    spec["securityContext"] = spec.get("securityContext") or {}
    spec.setdefault("schedulerName", "default-scheduler")
    if pod:
        spec.setdefault("enableServiceLinks", True)
    order_keys(spec, POD_SPEC_ORDER)


def _default_probe(probe: dict[str, Any]) -> None:
    """``SetDefaults_Probe`` (a 0 is no value in Go: it takes the default too), its HTTP
    action's defaults, and a gRPC action's ``service`` (``""``)."""
    for key, value in _PROBE_DEFAULTS:
        if not probe.get(key):
            probe[key] = value
    if isinstance(probe.get("httpGet"), dict):
        _default_http_get(probe["httpGet"])
    if isinstance(probe.get("grpc"), dict) and probe["grpc"].get("service") is None:
        probe["grpc"]["service"] = ""
    order_keys(probe, _PROBE_ORDER)


def _default_http_get(action: dict[str, Any]) -> None:
    """``SetDefaults_HTTPGetAction``: path ``/``, scheme ``HTTP``."""
    if not action.get("path"):
        action["path"] = "/"
    if not action.get("scheme"):
        action["scheme"] = "HTTP"
    order_keys(action, _HTTP_GET_ORDER)


def qos_class(spec: Mapping[str, Any]) -> str:
    """Pod QoS from cpu/memory requests and limits: BestEffort with none, Guaranteed when every
    container limits both and its requests (defaulting to the limits) equal them, else
    Burstable. Quantities are compared as written, so ``1`` != ``1000m`` (approximation)."""
    any_set, guaranteed = False, True
    for c in _l(spec.get("containers")) + _l(spec.get("initContainers")):
        res = _d(_d(c).get("resources"))
        lim, req = (
            {
                k: v
                for k, v in _d(res.get(f)).items()
                if k in ("cpu", "memory") and str(v) not in ("0", "0m")
            }
            for f in ("limits", "requests")
        )
        any_set = any_set or bool(lim or req)
        guaranteed = (
            guaranteed
            and set(lim) == {"cpu", "memory"}
            and all(req.get(k, v) == v for k, v in lim.items())
        )
    return "Guaranteed" if any_set and guaranteed else "Burstable" if any_set else "BestEffort"


def default_template(parent: dict[str, Any], *, ordered: bool = True) -> dict[str, Any]:
    """Default ``parent["template"]`` (made when missing): its metadata's
    ``creationTimestamp`` (null, as an empty Go time marshals) and key order, its pod spec;
    ``ordered`` also puts the template's keys in order (metadata, spec). Returns it."""
    template = sub(parent, "template")
    meta = sub(template, "metadata")
    meta.setdefault("creationTimestamp", None)
    order_keys(meta, ("name", "namespace", "creationTimestamp", "labels", "annotations"))
    default_pod_spec(sub(template, "spec"))
    if ordered:
        order_keys(template, ("metadata", "spec"))
    return template


_ENUMS = {
    "restartPolicy": ("Always", "OnFailure", "Never"),
    "dnsPolicy": ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"),
    "terminationMessagePolicy": ("File", "FallbackToLogsOnError"),
    "imagePullPolicy": ("Always", "IfNotPresent", "Never"),
}


def _enum(obj: Mapping[str, Any], key: str, path: str) -> list[Cause]:
    v = obj.get(key)
    return (
        []
        if v in (None, "") or v in _ENUMS[key]
        else [not_supported(f"{path}.{key}", v, _ENUMS[key])]
    )


def validate_pod_spec(spec: Mapping[str, Any], path: str = "spec") -> list[Cause]:
    """The parts of ``ValidatePodSpec`` KubeSim checks, at ``path``, in upstream order:
    containers and init containers (name, image, enums, duplicates), the spec's enums, node
    selector, names, ``activeDeadlineSeconds``."""
    errs: list[Cause] = []
    for key in ("containers", "initContainers"):
        if key == "containers" and not _l(spec.get(key)):
            errs.append(required(f"{path}.containers"))
        seen: set[str] = set()
        for i, c in enumerate(map(_d, _l(spec.get(key)))):
            p, name = f"{path}.{key}[{i}]", str(c.get("name") or "")
            errs += (
                [invalid(f"{p}.name", name, m) for m in is_dns1123_label(name)]
                if name
                else [required(f"{p}.name")]
            )
            errs += [] if c.get("image") else [required(f"{p}.image")]
            errs += _enum(c, "terminationMessagePolicy", p) + _enum(c, "imagePullPolicy", p)
            errs += (
                [Cause("FieldValueDuplicate", f"Duplicate value: {go_quote(name)}", f"{p}.name")]
                if name in seen
                else []
            )
            seen.add(name)
    errs += _enum(spec, "restartPolicy", path) + _enum(spec, "dnsPolicy", path)
    errs += validate_labels(_d(spec.get("nodeSelector")), f"{path}.nodeSelector")
    for key in ("serviceAccountName", "nodeName", "hostname", "subdomain"):
        value = str(spec.get(key) or "")
        check = (
            is_dns1123_subdomain if key in ("serviceAccountName", "nodeName") else is_dns1123_label
        )
        errs += [invalid(f"{path}.{key}", value, m) for m in check(value)] if value else []
    ads = spec.get("activeDeadlineSeconds")
    if isinstance(ads, int) and not 1 <= ads <= 2**31 - 1:
        errs.append(
            invalid(
                f"{path}.activeDeadlineSeconds",
                ads,
                f"must be between 1 and {2**31 - 1}, inclusive",
            )
        )
    return errs

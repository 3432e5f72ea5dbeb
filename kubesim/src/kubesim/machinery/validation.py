"""Create/update validation for KubeSim (pure functions, no I/O).

Messages are kube-apiserver v1.28's, built as ``field.Error`` builds them: a cause's ``message``
is the error body (``Required value``, ``Invalid value: "x": detail``, ...) and the Status
message is ``Kind "name" is invalid: field: body`` (several distinct causes: ``[a, b]``).
Validators return causes (empty if valid) and never mutate their input.

Upstream defaults before it validates. These validators also accept objects that are not
defaulted yet (defaultable fields are only checked when present), so :func:`validate_create`
and :func:`._defaults.apply_defaults` may run in either order; :func:`validate_update` compares
the old Pod spec with a defaulted copy of the new one (its diff comes from :mod:`._podspec_diff`).
:func:`uses_generation` and :func:`spec_changed` decide ``metadata.generation``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from kubesim.apis.core.pod.defaults import WORKLOAD_PLURALS, default_pod_spec, qos_class
from kubesim.apis.core.pod.specdiff import go_quote, pod_spec_diff, pod_specs_equal

if TYPE_CHECKING:
    from kubesim.registry.resource import ResourceType

__all__ = [
    "Cause",
    "GoRepr",
    "NameRule",
    "forbidden",
    "go_quote",
    "go_value",
    "invalid",
    "invalid_message",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "name_rule",
    "not_supported",
    "required",
    "spec_changed",
    "uses_generation",
    "validate_create",
    "validate_name",
    "validate_update",
]


# -- field errors -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cause:
    """One ``details.causes`` entry of a 422 Status; ``str()`` is upstream's ``field: body``."""

    reason: str
    message: str
    field: str

    def to_dict(self) -> dict[str, str]:
        """The StatusCause JSON object, keys in upstream order."""
        return {"reason": self.reason, "message": self.message, "field": self.field}

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class GoRepr(str):
    """A value already rendered as Go's ``%v``/``%#v`` prints it; :func:`go_value` keeps it."""

    __slots__ = ()


def go_value(v: object) -> str:
    """How ``field.Error`` prints a bad value: strings ``%q``, numbers and bools ``%v``, nil as
    ``null``; maps and lists have no Go type here and are approximated (use :class:`GoRepr`)."""
    if isinstance(v, GoRepr):
        return str(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, Mapping):
        items = ", ".join(f"{go_quote(str(k))}:{go_value(x)}" for k, x in sorted(v.items()))
        return "map[string]interface {}{" + items + "}"
    if isinstance(v, list | tuple):
        return "[]interface {}{" + ", ".join(go_value(x) for x in v) + "}"
    return str(v)


def go_string_map(m: Mapping[str, Any]) -> GoRepr:
    """``%#v`` of a ``map[string]string`` (fmt prints maps with sorted keys)."""
    return GoRepr(
        "map[string]string{"
        + ", ".join(f"{go_quote(k)}:{go_quote(str(m[k]))}" for k in sorted(m))
        + "}"
    )


def _go_strings(items: Iterable[object]) -> GoRepr:
    return GoRepr("[]string{" + ", ".join(go_quote(str(s)) for s in items) + "}")


def _body(kind: str, detail: str) -> str:
    return f"{kind}: {detail}" if detail else kind


def required(field: str, detail: str = "") -> Cause:
    """``field.Required``: ``Required value[: detail]``."""
    return Cause("FieldValueRequired", _body("Required value", detail), field)


def invalid(field: str, value: object, detail: str) -> Cause:
    """``field.Invalid``: ``Invalid value: <value>[: detail]``."""
    return Cause("FieldValueInvalid", _body(f"Invalid value: {go_value(value)}", detail), field)


def forbidden(field: str, detail: str) -> Cause:
    """``field.Forbidden``: ``Forbidden: detail``."""
    return Cause("FieldValueForbidden", _body("Forbidden", detail), field)


def not_supported(field: str, value: object, supported: Sequence[str]) -> Cause:
    """``field.NotSupported``: ``Unsupported value: "x": supported values: "a", "b"``."""
    detail = "supported values: " + ", ".join(map(go_quote, supported))
    return Cause("FieldValueNotSupported", f"Unsupported value: {go_value(value)}: {detail}", field)


def invalid_message(kind: str, name: str, causes: Sequence[Cause], group: str = "") -> str:
    """``errors.NewInvalid``'s message: ``Kind[.group] "name" is invalid: <aggregate>``; the
    aggregate is the single distinct ``field: body`` or ``[a, b, ...]`` (repeats dropped)."""
    msgs = list(dict.fromkeys(str(c) for c in causes))
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return f"{qualified} {go_quote(name)} is invalid: {agg}"


# -- name and key formats (k8s.io/apimachinery/pkg/util/validation) ------------------------------

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QNAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _QNAME + ")?"
_RE = {f: re.compile(f"(?:{f})") for f in (_LABEL, _SUBDOMAIN, _DNS1035, _QNAME, _LABEL_VALUE)}
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_QNAME_EX = ("MyName", "my.name", "123-abc")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    ex = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{msg} ({'e.g. ' if ex else ''}{ex}regex used for validation is '{fmt}')"


def _check(value: str, max_len: int, fmt: str, msg: str, *examples: str) -> list[str]:
    errs = [f"must be no more than {max_len} characters"] if len(value) > max_len else []
    return errs + ([] if _RE[fmt].fullmatch(value) else [_regex_error(msg, fmt, *examples)])


def is_dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: what is wrong with *value* as an RFC 1123 label (empty if fine)."""
    msg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    msg += "and must start and end with an alphanumeric character"
    return _check(value, 63, _LABEL, msg, "my-name", "123-abc")


def is_dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain`` (at most 253 characters)."""
    msg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    msg += "or '.', and must start and end with an alphanumeric character"
    return _check(value, 253, _SUBDOMAIN, msg, "example.com")


def is_dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label`` (Service names; CRD names and versions)."""
    msg = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    msg += "an alphabetic character, and end with an alphanumeric character"
    return _check(value, 63, _DNS1035, msg, "my-name", "abc-123")


def is_qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: ``[prefix/]name`` as label and annotation keys use it."""
    parts = value.split("/")
    if len(parts) > 2:
        msg = "a qualified name " + _regex_error(_QNAME_MSG, _QNAME, *_QNAME_EX)
        return [msg + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    errs: list[str] = []
    if len(parts) == 2:
        prefix_errs = is_dns1123_subdomain(parts[0]) if parts[0] else ["must be non-empty"]
        errs += ["prefix part " + m for m in prefix_errs]
    name = parts[-1]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _RE[_QNAME].fullmatch(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME, *_QNAME_EX))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """``IsValidLabelValue`` (empty is fine; at most 63 characters)."""
    msg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    msg += "or '.', and must start and end with an alphanumeric character"
    return _check(value, 63, _LABEL_VALUE, msg, "MyValue", "my_value", "12345")


NameRule = Literal["subdomain", "label", "dns1035", "path-segment"]


def name_rule(rt: ResourceType) -> NameRule:
    """The name format of *rt*: RFC 1123 label for namespaces, DNS-1035 label for services (as
    upstream, which is stricter than RFC 1123), a path segment for Events (whose strategy
    checks no name; events.k8s.io/v1's asks for a subdomain, :mod:`._event_validation`) and
    APIServices,
    RFC 1123 subdomain for all others served."""
    if rt.group == "" and rt.plural in ("namespaces", "services"):
        return "label" if rt.plural == "namespaces" else "dns1035"
    if rt.plural == "events" and rt.group in ("", "events.k8s.io") and not rt.custom:
        return "path-segment"
    if rt.plural == "apiservices" and rt.group == "apiregistration.k8s.io":
        return "path-segment"  # ``<version>.<group>``: "v1." for core
    return "subdomain"


def validate_name(
    name: str,
    rule: NameRule | ResourceType = "subdomain",
    *,
    prefix: bool = False,
    field: str = "metadata.name",
) -> list[Cause]:
    """Causes for *name* under *rule* (a rule, or the ResourceType whose rule applies).
    ``prefix=True`` checks a ``generateName`` prefix, which may end with ``-``."""
    r = rule if isinstance(rule, str) else name_rule(rule)
    if prefix and len(name) > 1 and name.endswith("-"):
        name = name[:-2] + "a"  # upstream's maskTrailingDash (sic: it drops two characters)
    if r == "path-segment":
        msgs = (
            [f"may not be '{name}'"]
            if name in (".", "..")
            else [f"may not contain '{c}'" for c in "/%" if c in name]
        )
    else:
        msgs = {"label": is_dns1123_label, "dns1035": is_dns1035_label}.get(
            r, is_dns1123_subdomain
        )(name)
    return [invalid(field, name, m) for m in msgs]


# -- create -------------------------------------------------------------------------------------


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _validate_labels(labels: Mapping[str, Any], field: str) -> list[Cause]:
    errs: list[Cause] = []
    for k, v in labels.items():
        errs += [invalid(field, k, m) for m in is_qualified_name(str(k))]
        errs += [invalid(field, v, m) for m in is_valid_label_value(str(v))]
    return errs


def _validate_object_meta(
    rt: ResourceType, meta: Mapping[str, Any], *, create: bool = True
) -> list[Cause]:
    """``ValidateObjectMetaAccessor``: generateName, name, namespace, generation, labels,
    annotations, finalizers (in that order; ownerReferences are not checked)."""
    errs: list[Cause] = []
    if create and meta.get("generateName"):
        errs += validate_name(meta["generateName"], rt, prefix=True, field="metadata.generateName")
    if create:
        name = meta.get("name") or ""
        errs += (
            validate_name(name, rt)
            if name
            else [required("metadata.name", "name or generateName is required")]
        )
        ns = meta.get("namespace") or ""
        if rt.namespaced:
            errs += (
                [invalid("metadata.namespace", ns, m) for m in is_dns1123_label(ns)]
                if ns
                else [required("metadata.namespace")]
            )
        elif ns:
            errs.append(forbidden("metadata.namespace", "not allowed on this type"))
        if isinstance(meta.get("generation"), int) and meta["generation"] < 0:
            errs.append(
                invalid(
                    "metadata.generation", meta["generation"], "must be greater than or equal to 0"
                )
            )
    errs += _validate_labels(_d(meta.get("labels")), "metadata.labels")
    annotations = _d(meta.get("annotations"))
    for k in annotations:
        errs += [invalid("metadata.annotations", k, m) for m in is_qualified_name(k.lower())]
    if sum(len(k) + len(str(v)) for k, v in annotations.items()) > 256 * 1024:
        errs.append(
            Cause(
                "FieldValueTooLong",
                "Too long: must have at most 262144 bytes",
                "metadata.annotations",
            )
        )
    for f in _l(meta.get("finalizers")):
        errs += [invalid("metadata.finalizers", f, m) for m in is_qualified_name(str(f))]
    return errs


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


def _validate_pod_spec(spec: Mapping[str, Any], path: str = "spec") -> list[Cause]:
    """The parts of ``ValidatePodSpec`` KubeSim checks, in upstream order."""
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
    errs += _validate_labels(_d(spec.get("nodeSelector")), f"{path}.nodeSelector")
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


def _validate_workload(spec: Mapping[str, Any]) -> list[Cause]:
    """apps/v1 workloads: non-negative replicas, a selector matching the template labels."""
    errs: list[Cause] = []
    if isinstance(spec.get("replicas"), int) and spec["replicas"] < 0:
        errs.append(
            invalid("spec.replicas", spec["replicas"], "must be greater than or equal to 0")
        )
    sel = spec.get("selector")
    labels = _d(_d(_d(spec.get("template")).get("metadata")).get("labels"))
    if not isinstance(sel, dict):
        errs.append(required("spec.selector"))
    elif any(labels.get(k) != v for k, v in _d(sel.get("matchLabels")).items()):
        detail = "`selector` does not match template `labels`"
        errs.append(invalid("spec.template.metadata.labels", go_string_map(labels), detail))
    return errs + _validate_pod_spec(_d(_d(spec.get("template")).get("spec")), "spec.template.spec")


def validate_create(rt: ResourceType, obj: Mapping[str, Any]) -> list[Cause]:
    """Causes (empty if valid) for creating *obj* as *rt*: ObjectMeta first (name or
    generateName, name format, namespace, labels, annotations, finalizers), then
    Pod containers (name, image, enums, duplicates) or apps workload selectors. A name made from
    generateName must already be in ``metadata.name``. CRD *spec* rules are in
    ``_resources.validate_crd`` (callers run both; this only checks the CRD's ObjectMeta)."""
    errs = _validate_object_meta(rt, _d(obj.get("metadata")))
    if rt.group == "" and rt.plural == "pods":
        errs += _validate_pod_spec(_d(obj.get("spec")))
    elif rt.group == "apps" and rt.plural in WORKLOAD_PLURALS:
        errs += _validate_workload(_d(obj.get("spec")))
    return errs + _validate_data_size(rt, obj)


#: ``corev1.MaxSecretSize``: the most data a ConfigMap or a Secret may hold
MAX_DATA_BYTES = 1024 * 1024


def _validate_data_size(rt: ResourceType, obj: Mapping[str, Any]) -> list[Cause]:
    """ConfigMap: keys and values of ``data`` and ``binaryData`` together at most 1 MiB
    (field ``[]``, 25c); Secret: ``data`` (decoded) and ``stringData`` likewise."""
    if rt.group or rt.plural not in ("configmaps", "secrets"):
        return []
    total = 0
    for key in ("data", "binaryData", "stringData"):
        for k, v in _d(obj.get(key)).items():
            total += len(k.encode()) + _data_len(
                v, base64=key == "binaryData" or (key == "data" and rt.plural == "secrets")
            )
    if total <= MAX_DATA_BYTES:
        return []
    field = "[]" if rt.plural == "configmaps" else "data"
    return [
        Cause("FieldValueTooLong", f"Too long: must have at most {MAX_DATA_BYTES} bytes", field)
    ]


def _data_len(value: object, base64: bool) -> int:
    if not isinstance(value, str):
        return 0
    return len(value) * 3 // 4 - value.count("=") if base64 else len(value.encode())


# -- update -------------------------------------------------------------------------------------

UPDATABLE_POD_FIELDS = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _tol_key(t: object) -> tuple[tuple[str, Any], ...]:
    return tuple(
        sorted((k, v) for k, v in _d(t).items() if v not in (None, "") and k != "tolerationSeconds")
    )


def _validate_pod_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePodUpdate``'s spec rules; the catch-all carries upstream's go-cmp diff."""
    if old.get("spec") == new.get("spec"):  # the common metadata-only update: nothing to check
        return []
    ospec, nspec = _d(old.get("spec")), copy.deepcopy(_d(new.get("spec")))
    default_pod_spec(nspec, pod=True)
    errs: list[Cause] = []
    for key in ("containers", "initContainers"):
        if len(_l(ospec.get(key))) != len(_l(nspec.get(key))):
            return [*errs, forbidden(f"spec.{key}", "pod updates may not add or remove containers")]
        for i, c in enumerate(map(_d, _l(nspec.get(key)))):
            image = str(c.get("image") or "")
            if not image:
                errs.append(required(f"spec.{key}[{i}].image"))
            elif image.strip() != image:
                errs.append(
                    invalid(
                        f"spec.{key}[{i}].image",
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    nads, oads = nspec.get("activeDeadlineSeconds"), ospec.get("activeDeadlineSeconds")
    if isinstance(nads, int) and nads <= 0:
        return [
            *errs,
            invalid(
                "spec.activeDeadlineSeconds", nads, f"must be between 1 and {2**31 - 1}, inclusive"
            ),
        ]
    if isinstance(nads, int) and isinstance(oads, int) and oads < nads:
        return [
            *errs,
            invalid(
                "spec.activeDeadlineSeconds", nads, "must be less than or equal to previous value"
            ),
        ]
    if nads is None and isinstance(oads, int):
        errs.append(
            invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    new_tols = {_tol_key(t) for t in _l(nspec.get("tolerations"))}
    if any(_tol_key(t) not in new_tols for t in _l(ospec.get("tolerations"))):
        errs.append(
            forbidden(
                "spec.tolerations",
                "existing toleration can not be modified except its tolerationSeconds",
            )
        )
    if pod_specs_equal(ospec, nspec):
        return errs
    if (_d(old.get("status")).get("qosClass") or qos_class(ospec)) != qos_class(nspec):
        errs.append(
            invalid("metadata", _d(new.get("status")).get("qosClass") or "", "Pod QoS is immutable")
        )
    munged = copy.deepcopy(nspec)  # the fields that may change are copied back from old
    for key in ("containers", "initContainers"):
        for oc, nc in zip(_l(ospec.get(key)), map(_d, _l(munged.get(key))), strict=True):
            nc["image"] = _d(oc).get("image")
    for key in ("activeDeadlineSeconds", "tolerations"):
        munged.pop(key, None)
        if key in ospec:
            munged[key] = ospec[key]
    otg = ospec.get("terminationGracePeriodSeconds")
    if isinstance(otg, int) and otg < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = otg
    if not pod_specs_equal(ospec, munged):
        detail = f"pod updates may not change fields other than {UPDATABLE_POD_FIELDS}\n"
        errs.append(forbidden("spec", detail + pod_spec_diff(ospec, munged)))
    return errs


def validate_update(
    rt: ResourceType, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[Cause]:
    """Causes for replacing *old* with *new* (main resource, not ``/status``): no new finalizers
    while deleting, generation not decremented, immutable name/namespace/uid, labels and
    annotations, then per kind: Pod spec immutability (upstream's exact message, go-cmp diff
    included) and immutable CRD group/scope. resourceVersion is not checked here."""
    om, nm = _d(old.get("metadata")), _d(new.get("metadata"))
    errs: list[Cause] = []
    extra = sorted(set(_l(nm.get("finalizers"))) - set(_l(om.get("finalizers"))))
    if om.get("deletionTimestamp") and extra:
        detail = (
            "no new finalizers can be added if the object is being deleted, found new finalizers"
        )
        errs.append(forbidden("metadata.finalizers", f"{detail} {_go_strings(extra)}"))
    if (
        isinstance(om.get("generation"), int)
        and isinstance(nm.get("generation"), int)
        and nm["generation"] < om["generation"]
    ):
        errs.append(invalid("metadata.generation", nm["generation"], "must not be decremented"))
    for key in ("name", "namespace", "uid"):
        if (om.get(key) or "") != (nm.get(key) or ""):
            errs.append(invalid(f"metadata.{key}", nm.get(key) or "", "field is immutable"))
    errs += _validate_object_meta(rt, nm, create=False) + _validate_data_size(rt, new)
    ospec, nspec = _d(old.get("spec")), _d(new.get("spec"))
    if rt.group == "" and rt.plural == "pods":
        errs += (
            _validate_object_meta(rt, nm)
            + _validate_pod_spec(nspec)
            + _validate_pod_update(old, new)
        )
    elif rt.group == "apiextensions.k8s.io":
        errs += [
            invalid(f"spec.{k}", nspec.get(k) or "", "field is immutable")
            for k in ("group", "scope")
            if ospec.get(k) != nspec.get(k)
        ]
    return errs


# -- generation ---------------------------------------------------------------------------------


def uses_generation(rt: ResourceType) -> bool:
    """Whether the apiserver keeps ``metadata.generation`` for *rt* (1 on create, +1 when
    :func:`spec_changed`): custom resources, CRDs, the apps workloads and the other kinds
    whose strategies keep it (Jobs, CronJobs, ReplicationControllers, PodDisruptionBudgets,
    Ingresses, NetworkPolicies, EndpointSlices, FlowSchemas, PriorityLevelConfigurations).
    Pods, Nodes, Namespaces, Services, ConfigMaps, Secrets, Leases, Events and RBAC objects
    do not (v1.28)."""
    return (
        rt.custom
        or rt.group == "apiextensions.k8s.io"
        or (rt.group == "apps" and rt.plural in WORKLOAD_PLURALS)
        or (rt.group, rt.plural) in _GENERATION_KINDS
    )


_GENERATION_KINDS = frozenset(
    {
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("", "replicationcontrollers"),
        ("policy", "poddisruptionbudgets"),
        ("networking.k8s.io", "ingresses"),
        ("networking.k8s.io", "networkpolicies"),
        ("discovery.k8s.io", "endpointslices"),
        ("flowcontrol.apiserver.k8s.io", "flowschemas"),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
    }
)


def spec_changed(rt: ResourceType, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when anything but metadata (and status, when *rt* has a status subresource)
    differs: the rule that bumps ``metadata.generation``. kind/apiVersion are ignored."""
    skip = {"metadata", "kind", "apiVersion"} | ({"status"} if rt.has_status else set())
    return {k: v for k, v in old.items() if k not in skip} != {
        k: v for k, v in new.items() if k not in skip
    }

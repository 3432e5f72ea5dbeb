"""The building blocks of validation, as k8s.io/apimachinery has them (pure functions).

Messages are kube-apiserver v1.28's, built as ``field.Error`` builds them: a cause's
``message`` is the error body (``Required value``, ``Invalid value: "x": detail``, ...) and
the Status message is ``Kind "name" is invalid: field: body`` (several distinct causes:
``[a, b]``). Here are the field errors (:class:`Cause` and its builders), the name and key
formats (:func:`validate_name`, ``IsDNS1123Label`` & co.) and ``ValidateObjectMeta``
(:func:`validate_object_meta`, :func:`validate_object_meta_update`). Validators return causes
(empty if valid) and never mutate their input. What each kind checks beyond these is its
strategy's (``kubesim.apis``); a kind validates objects that may not be defaulted yet
(defaultable fields are only checked when present).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kubesim.encoding.gofmt import go_quote

__all__ = [
    "Cause",
    "GoRepr",
    "NameRule",
    "forbidden",
    "go_string_map",
    "go_strings",
    "go_value",
    "invalid",
    "invalid_message",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "not_supported",
    "required",
    "validate_labels",
    "validate_name",
    "validate_object_meta",
    "validate_object_meta_update",
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


def go_strings(items: Iterable[object]) -> GoRepr:
    """``%#v`` of a ``[]string``."""
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


def validate_name(
    name: str,
    rule: NameRule = "subdomain",
    *,
    prefix: bool = False,
    field: str = "metadata.name",
) -> list[Cause]:
    """Causes for *name* under *rule*: an RFC 1123 ``subdomain`` (most kinds), an RFC 1123
    ``label`` (Namespaces), a ``dns1035`` label (Services: stricter than RFC 1123) or a
    ``path-segment`` (Events, APIServices: anything but ``.``, ``..``, ``/`` and ``%``).
    ``prefix=True`` checks a ``generateName`` prefix, which may end with ``-``."""
    r = rule
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


def validate_labels(labels: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidateLabels``: qualified-name keys and label values."""
    errs: list[Cause] = []
    for k, v in labels.items():
        errs += [invalid(field, k, m) for m in is_qualified_name(str(k))]
        errs += [invalid(field, v, m) for m in is_valid_label_value(str(v))]
    return errs


def validate_object_meta(
    meta: Mapping[str, Any], *, rule: NameRule, namespaced: bool, create: bool = True
) -> list[Cause]:
    """``ValidateObjectMetaAccessor`` of an object whose kind names objects by ``rule`` and
    is ``namespaced`` or not: generateName, name, namespace, generation (on ``create``
    only), then labels, annotations, finalizers (in that order; ownerReferences are not
    checked). A name made from generateName must already be in ``name``."""
    errs: list[Cause] = []
    if create and meta.get("generateName"):
        errs += validate_name(
            meta["generateName"], rule, prefix=True, field="metadata.generateName"
        )
    if create:
        name = meta.get("name") or ""
        errs += (
            validate_name(name, rule)
            if name
            else [required("metadata.name", "name or generateName is required")]
        )
        ns = meta.get("namespace") or ""
        if namespaced:
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
    errs += validate_labels(_d(meta.get("labels")), "metadata.labels")
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


def validate_object_meta_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Cause]:
    """``ValidateObjectMetaUpdate``'s rules between two versions' metadata: no new
    finalizers while deleting, generation not decremented, name, namespace and uid
    immutable. The new metadata's own format is :func:`validate_object_meta`'s (with
    ``create=False``)."""
    errs: list[Cause] = []
    extra = sorted(set(_l(new.get("finalizers"))) - set(_l(old.get("finalizers"))))
    if old.get("deletionTimestamp") and extra:
        detail = (
            "no new finalizers can be added if the object is being deleted, found new finalizers"
        )
        errs.append(forbidden("metadata.finalizers", f"{detail} {go_strings(extra)}"))
    if (
        isinstance(old.get("generation"), int)
        and isinstance(new.get("generation"), int)
        and new["generation"] < old["generation"]
    ):
        errs.append(invalid("metadata.generation", new["generation"], "must not be decremented"))
    for key in ("name", "namespace", "uid"):
        if (old.get(key) or "") != (new.get(key) or ""):
            errs.append(invalid(f"metadata.{key}", new.get(key) or "", "field is immutable"))
    return errs

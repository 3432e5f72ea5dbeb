"""What a table printer is, and what the printers share (each kind's is its strategy's).

A :class:`Printer` has the kind's :class:`Column` definitions and computes one row's cells
from an object (a decoded JSON document); column descriptions are the API types' field
documentation as Go's SwaggerDoc has it (:func:`doc`, from the recorded OpenAPI). The small
accessors here read a document that may lack any field, as Go's zero values do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesim.encoding.gotime import age
from kubesim.machinery.recorded import recorded_definitions

__all__ = [
    "APPS",
    "CONTAINERS_DOC",
    "CORE",
    "IMAGES_DOC",
    "Cells",
    "Column",
    "Obj",
    "Printer",
    "age_column",
    "containers_of",
    "created_age",
    "doc",
    "format_label_selector",
    "format_labels",
    "int_of",
    "label_selector_string",
    "list_of",
    "mapping_of",
    "name_column",
    "name_of",
    "spec_of",
    "status_of",
    "str_of",
]

Obj = Mapping[str, Any]
Cells = list[Any]


@dataclass(frozen=True)
class Column:
    """One ``columnDefinitions`` entry."""

    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@dataclass(frozen=True)
class Printer:
    """The columns of a kind, its cells for one object, and (pods only) row conditions."""

    columns: Callable[[], list[Column]]
    cells: Callable[[Obj, float], Cells]
    conditions: Callable[[Obj], list[dict[str, str]]] | None = None


# -- documentation ---------------------------------------------------------------------------


def _definitions() -> Mapping[str, Any]:
    return recorded_definitions()


def doc(definition: str, field: str) -> str:
    """The OpenAPI description of ``definition.field`` as Go's SwaggerDoc has it."""
    prefix = "io.k8s.apimachinery.pkg.apis.meta.v1." if definition[0].isupper() else ""
    try:
        text = _definitions()[prefix + definition]["properties"][field]["description"]
    except KeyError:
        return ""
    return str(text).split("\n\nPossible enum values:", 1)[0]


def name_column() -> Column:
    """The Name column every table starts with."""
    return Column("Name", "string", doc("ObjectMeta", "name"), format="name")


def age_column() -> Column:
    """The Age column (its cells: :func:`created_age`)."""
    return Column("Age", "string", doc("ObjectMeta", "creationTimestamp"))


CORE = "io.k8s.api.core.v1."
APPS = "io.k8s.api.apps.v1."
CONTAINERS_DOC = "Names of each container in the template."
IMAGES_DOC = "Images referenced by each container in the template."
# -- printers ----------------------------------------------------------------------------------


def simple_printer(
    extra: Sequence[Column | Callable[[], Column]], cell: Callable[[Obj], Cells]
) -> Printer:
    """A printer of Name, ``extra`` columns (a column, or what makes it: a column's
    description is read on first use), Age; ``cell`` gives the extra cells."""

    def columns() -> list[Column]:
        return [name_column(), *(c if isinstance(c, Column) else c() for c in extra), age_column()]

    def cells(obj: Obj, now: float) -> Cells:
        return [name_of(obj), *cell(obj), created_age(obj, now)]

    return Printer(columns, cells)


def _default_columns() -> list[Column]:
    return [
        name_column(),
        Column("Created At", "date", doc("ObjectMeta", "creationTimestamp")),
    ]


def default_printer() -> Printer:
    """The default table convertor's: Name and Created At (the timestamp as stored)."""
    return Printer(
        _default_columns,
        lambda o, _now: [name_of(o), mapping_of(o.get("metadata")).get("creationTimestamp")],
    )


# -- helpers -----------------------------------------------------------------------------------


def mapping_of(v: object) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def list_of(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def int_of(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def str_of(v: object) -> str:
    return v if isinstance(v, str) else ""


def created_age(obj: Obj, now: float) -> str:
    return age(str_of(mapping_of(obj.get("metadata")).get("creationTimestamp")), now)


def format_labels(labels: Mapping[str, Any]) -> str:
    """``labels.FormatLabels``: ``k=v`` sorted by key, ``<none>`` when empty."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels)) or "<none>"


def label_selector_string(selector: Mapping[str, Any] | None) -> str:
    """``LabelSelectorAsSelector(s).String()``: requirements sorted by key."""
    if not selector:
        return ""
    reqs: list[tuple[str, str]] = []
    for k, v in mapping_of(selector.get("matchLabels")).items():
        reqs.append((k, f"{k}={v}"))
    for e in list_of(selector.get("matchExpressions")):
        e = mapping_of(e)
        key, op, values = str_of(e.get("key")), e.get("operator"), sorted(list_of(e.get("values")))
        if op == "In":
            reqs.append((key, f"{key} in ({','.join(values)})"))
        elif op == "NotIn":
            reqs.append((key, f"{key} notin ({','.join(values)})"))
        elif op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


def format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector``: like the selector string, ``<none>`` when empty."""
    return label_selector_string(selector) or "<none>"


def containers_of(template: Obj) -> tuple[str, str]:
    cs = [
        mapping_of(c)
        for c in list_of(mapping_of(mapping_of(template).get("spec")).get("containers"))
    ]
    return ",".join(str_of(c.get("name")) for c in cs), ",".join(str_of(c.get("image")) for c in cs)


def spec_of(obj: Obj) -> Mapping[str, Any]:
    return mapping_of(obj.get("spec"))


def status_of(obj: Obj) -> Mapping[str, Any]:
    return mapping_of(obj.get("status"))


def name_of(obj: Obj) -> str:
    return str_of(mapping_of(obj.get("metadata")).get("name"))

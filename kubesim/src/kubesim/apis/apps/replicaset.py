"""ReplicaSets: the workload defaults (``replicas`` 1, status ``{replicas: 0}``), the table
(Desired, Current, Ready, Age and the wide columns), the ``status.replicas`` field selector."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.apps.workload import WorkloadStrategy
from kubesim.apis.core.podspec import ZERO_TEMPLATE
from kubesim.machinery.fields import field_label_not_supported, int_field
from kubesim.machinery.printing import (
    APPS,
    CONTAINERS_DOC,
    IMAGES_DOC,
    Cells,
    Column,
    Obj,
    Printer,
    age_column,
    containers_of,
    created_age,
    doc,
    format_label_selector,
    int_of,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
)

__all__ = ["ReplicaSetStrategy"]

_REPLICASET_SELECTOR = (
    "Selector is a label query over pods that should match the replica count. If the selector "
    "is empty, it is defaulted to the labels present on the pod template. Label keys and values "
    "that must match in order to be controlled by this replica set. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)


def _replicaset_columns() -> list[Column]:
    return [
        name_column(),
        Column("Desired", "integer", doc(APPS + "ReplicaSetSpec", "replicas")),
        Column("Current", "integer", doc(APPS + "ReplicaSetStatus", "replicas")),
        Column("Ready", "integer", doc(APPS + "ReplicaSetStatus", "readyReplicas")),
        age_column(),
        Column("Containers", "string", CONTAINERS_DOC, 1),
        Column("Images", "string", IMAGES_DOC, 1),
        Column("Selector", "string", _REPLICASET_SELECTOR, 1),
    ]


def _replicaset_cells(obj: Obj, now: float) -> Cells:
    spec, status = spec_of(obj), status_of(obj)
    names, images = containers_of(mapping_of(spec.get("template")))
    return [
        name_of(obj),
        int_of(spec.get("replicas")),
        int_of(status.get("replicas")),
        int_of(status.get("readyReplicas")),
        created_age(obj, now),
        names,
        images,
        format_label_selector(mapping_of(spec.get("selector"))),
    ]


class ReplicaSetStrategy(WorkloadStrategy):
    """ReplicaSets (see the module docstring)."""

    spec_defaults: Mapping[str, Any] = {"replicas": 1}
    spec_order = ("replicas", "minReadySeconds", "selector", "template")
    status_on_create: Mapping[str, Any] = {"replicas": 0}
    zero_spec: Mapping[str, Any] = {"selector": None, "template": ZERO_TEMPLATE}
    table = Printer(_replicaset_columns, _replicaset_cells)

    def fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        return {"status.replicas": int_field(obj, "status", "replicas")}

    def unsupported_field_label(self, label: str) -> str:
        return field_label_not_supported(label)

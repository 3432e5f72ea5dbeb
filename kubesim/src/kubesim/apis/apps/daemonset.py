"""DaemonSets: the workload defaults (``revisionHistoryLimit`` 10, a RollingUpdate strategy
of maxUnavailable 1 / maxSurge 0, a status of zero counts), the table (Desired, Current,
Ready, Up-to-date, Available, Node Selector, Age and the wide columns)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.apps.workload import WorkloadStrategy
from kubesim.apis.core.podspec import ZERO_TEMPLATE
from kubesim.machinery.printing import (
    APPS,
    CONTAINERS_DOC,
    CORE,
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
    format_labels,
    int_of,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
)

__all__ = ["DaemonSetStrategy"]

_DAEMONSET_SELECTOR = (
    "A label query over pods that are managed by the daemon set. Must match in order to be "
    "controlled. If empty, defaulted to labels on Pod template. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)


def _daemonset_columns() -> list[Column]:
    ds = APPS + "DaemonSetStatus"
    return [
        name_column(),
        Column("Desired", "integer", doc(ds, "desiredNumberScheduled")),
        Column("Current", "integer", doc(ds, "currentNumberScheduled")),
        Column("Ready", "integer", doc(ds, "numberReady")),
        Column("Up-to-date", "integer", doc(ds, "updatedNumberScheduled")),
        Column("Available", "integer", doc(ds, "numberAvailable")),
        Column("Node Selector", "string", doc(CORE + "PodSpec", "nodeSelector")),
        age_column(),
        Column("Containers", "string", CONTAINERS_DOC, 1),
        Column("Images", "string", IMAGES_DOC, 1),
        Column("Selector", "string", _DAEMONSET_SELECTOR, 1),
    ]


def _daemonset_cells(obj: Obj, now: float) -> Cells:
    spec, status = spec_of(obj), status_of(obj)
    template = mapping_of(spec.get("template"))
    names, images = containers_of(template)
    return [
        name_of(obj),
        int_of(status.get("desiredNumberScheduled")),
        int_of(status.get("currentNumberScheduled")),
        int_of(status.get("numberReady")),
        int_of(status.get("updatedNumberScheduled")),
        int_of(status.get("numberAvailable")),
        format_labels(mapping_of(mapping_of(template.get("spec")).get("nodeSelector"))),
        created_age(obj, now),
        names,
        images,
        format_label_selector(mapping_of(spec.get("selector"))),
    ]


class DaemonSetStrategy(WorkloadStrategy):
    """DaemonSets (see the module docstring)."""

    spec_defaults: Mapping[str, Any] = {"revisionHistoryLimit": 10}
    spec_order = tuple(
        "selector template updateStrategy minReadySeconds revisionHistoryLimit".split()
    )
    status_on_create: Mapping[str, Any] = {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }
    update_strategy = ("updateStrategy", {"maxUnavailable": 1, "maxSurge": 0})
    zero_spec: Mapping[str, Any] = {
        "selector": None,
        "template": ZERO_TEMPLATE,
        "updateStrategy": {},
    }
    table = Printer(_daemonset_columns, _daemonset_cells)

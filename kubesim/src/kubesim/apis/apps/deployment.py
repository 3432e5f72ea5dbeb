"""Deployments: the workload defaults (``replicas`` 1, ``revisionHistoryLimit`` 10,
``progressDeadlineSeconds`` 600, a RollingUpdate strategy of 25% / 25%), the table (Ready,
Up-to-date, Available, Age and the wide Containers, Images, Selector)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.apps.workload import WorkloadStrategy
from kubesim.apis.core.podspec import ZERO_TEMPLATE
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
    int_of,
    label_selector_string,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
)

__all__ = ["DeploymentStrategy"]

_DEPLOYMENT_SELECTOR = (
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be "
    "the ones affected by this deployment."
)


def _deployment_columns() -> list[Column]:
    return [
        name_column(),
        Column("Ready", "string", "Number of the pod with ready state"),
        Column("Up-to-date", "string", doc(APPS + "DeploymentStatus", "updatedReplicas")),
        Column("Available", "string", doc(APPS + "DeploymentStatus", "availableReplicas")),
        age_column(),
        Column("Containers", "string", CONTAINERS_DOC, 1),
        Column("Images", "string", IMAGES_DOC, 1),
        Column("Selector", "string", _DEPLOYMENT_SELECTOR, 1),
    ]


def _deployment_cells(obj: Obj, now: float) -> Cells:
    spec, status = spec_of(obj), status_of(obj)
    names, images = containers_of(mapping_of(spec.get("template")))
    return [
        name_of(obj),
        f"{int_of(status.get('readyReplicas'))}/{int_of(spec.get('replicas'))}",
        int_of(status.get("updatedReplicas")),
        int_of(status.get("availableReplicas")),
        created_age(obj, now),
        names,
        images,
        label_selector_string(mapping_of(spec.get("selector"))),
    ]


class DeploymentStrategy(WorkloadStrategy):
    """Deployments (see the module docstring)."""

    spec_defaults: Mapping[str, Any] = {
        "replicas": 1,
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    }
    spec_order = tuple(
        "replicas selector template strategy minReadySeconds revisionHistoryLimit paused "
        "progressDeadlineSeconds".split()
    )
    update_strategy = ("strategy", {"maxUnavailable": "25%", "maxSurge": "25%"})
    zero_spec: Mapping[str, Any] = {"selector": None, "template": ZERO_TEMPLATE, "strategy": {}}
    table = Printer(_deployment_columns, _deployment_cells)

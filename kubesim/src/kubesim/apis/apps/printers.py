"""The printers of apps/v1: deployments, replicasets, statefulsets, daemonsets and
controllerrevisions, as v1.28's printers.go (READY ``n/m``, integer counts, the wide
CONTAINERS, IMAGES and SELECTOR). Recorded: 24c.
"""

from __future__ import annotations

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
    label_selector_string,
    list_of,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
    str_of,
)

__all__ = ["APPS_PRINTERS"]

_DEPLOYMENT_SELECTOR = (
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be "
    "the ones affected by this deployment."
)
_REPLICASET_SELECTOR = (
    "Selector is a label query over pods that should match the replica count. If the selector "
    "is empty, it is defaulted to the labels present on the pod template. Label keys and values "
    "that must match in order to be controlled by this replica set. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)
_DAEMONSET_SELECTOR = (
    "A label query over pods that are managed by the daemon set. Must match in order to be "
    "controlled. If empty, defaulted to labels on Pod template. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
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


def _statefulset_columns() -> list[Column]:
    return [
        name_column(),
        Column("Ready", "string", "Number of the pod with ready state"),
        age_column(),
        Column("Containers", "string", CONTAINERS_DOC, 1),
        Column("Images", "string", IMAGES_DOC, 1),
    ]


def _statefulset_cells(obj: Obj, now: float) -> Cells:
    spec, status = spec_of(obj), status_of(obj)
    names, images = containers_of(mapping_of(spec.get("template")))
    ready = f"{int_of(status.get('readyReplicas'))}/{int_of(spec.get('replicas'))}"
    return [name_of(obj), ready, created_age(obj, now), names, images]


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


def _controllerrevision_columns() -> list[Column]:
    return [
        name_column(),
        Column("Controller", "string", "Controller of the object"),
        Column("Revision", "string", doc(APPS + "ControllerRevision", "revision")),
        age_column(),
    ]


def _controllerrevision_cells(obj: Obj, now: float) -> Cells:
    owner = next(
        (
            mapping_of(o)
            for o in list_of(mapping_of(obj.get("metadata")).get("ownerReferences"))
            if mapping_of(o).get("controller")
        ),
        None,
    )
    controller = "<none>"
    if owner is not None:
        group = str_of(owner.get("apiVersion")).rpartition("/")[0]
        kind = str_of(owner.get("kind")).lower() + (f".{group}" if group else "")
        controller = f"{kind}/{str_of(owner.get('name'))}"
    return [name_of(obj), controller, int_of(obj.get("revision")), created_age(obj, now)]


APPS_PRINTERS: dict[str, Printer] = {
    "deployments": Printer(_deployment_columns, _deployment_cells),
    "replicasets": Printer(_replicaset_columns, _replicaset_cells),
    "statefulsets": Printer(_statefulset_columns, _statefulset_cells),
    "daemonsets": Printer(_daemonset_columns, _daemonset_cells),
    "controllerrevisions": Printer(_controllerrevision_columns, _controllerrevision_cells),
}

"""StatefulSets: the workload defaults (``replicas`` 1, ``podManagementPolicy``
OrderedReady, ``revisionHistoryLimit`` 10, a RollingUpdate strategy with partition 0, a
PVC retention policy of Retain/Retain, status ``{replicas: 0, availableReplicas: 0}``), the
table (Ready, Age and the wide Containers, Images)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.apps.workload import WorkloadStrategy
from kubesim.apis.core.podspec import ZERO_TEMPLATE
from kubesim.machinery.documents import sub
from kubesim.machinery.printing import (
    CONTAINERS_DOC,
    IMAGES_DOC,
    Cells,
    Column,
    Obj,
    Printer,
    age_column,
    containers_of,
    created_age,
    int_of,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
)

__all__ = ["StatefulSetStrategy"]


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


class StatefulSetStrategy(WorkloadStrategy):
    """StatefulSets (see the module docstring)."""

    spec_defaults: Mapping[str, Any] = {
        "replicas": 1,
        "podManagementPolicy": "OrderedReady",
        "revisionHistoryLimit": 10,
    }
    spec_order = tuple(
        "replicas selector template volumeClaimTemplates serviceName podManagementPolicy "
        "updateStrategy revisionHistoryLimit minReadySeconds "
        "persistentVolumeClaimRetentionPolicy ordinals".split()
    )
    status_on_create: Mapping[str, Any] = {"replicas": 0, "availableReplicas": 0}
    update_strategy = ("updateStrategy", {"partition": 0})
    zero_spec: Mapping[str, Any] = {
        "selector": None,
        "template": ZERO_TEMPLATE,
        "updateStrategy": {},
    }
    table = Printer(_statefulset_columns, _statefulset_cells)

    def default_spec(self, spec: dict[str, Any]) -> None:
        policy = sub(spec, "persistentVolumeClaimRetentionPolicy")
        policy.update({k: policy.get(k) or "Retain" for k in ("whenDeleted", "whenScaled")})

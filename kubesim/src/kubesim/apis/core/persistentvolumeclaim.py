"""PersistentVolumeClaims: volumeMode Filesystem and phase Pending by default
(``SetDefaults_PersistentVolumeClaim``), the table (Status, Volume, Capacity, Access Modes,
StorageClass, Age, VolumeMode); a completed DELETE answers the object."""

from __future__ import annotations

from typing import Any

from kubesim.machinery.documents import order_keys, sub
from kubesim.machinery.printing import (
    CORE,
    Cells,
    Column,
    Obj,
    Printer,
    age_column,
    created_age,
    doc,
    list_of,
    mapping_of,
    name_column,
    name_of,
    spec_of,
    status_of,
    str_of,
)
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["PersistentVolumeClaimStrategy"]


def _pvc_columns() -> list[Column]:
    st, sp = CORE + "PersistentVolumeClaimStatus", CORE + "PersistentVolumeClaimSpec"
    return [
        name_column(),
        Column("Status", "string", doc(st, "phase")),
        Column("Volume", "string", doc(sp, "volumeName")),
        Column("Capacity", "string", doc(st, "capacity")),
        Column("Access Modes", "string", doc(st, "accessModes")),
        Column("StorageClass", "string", "StorageClass of the pvc"),
        age_column(),
        Column("VolumeMode", "string", doc(sp, "volumeMode"), 1),
    ]


_ACCESS = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX"}


def _pvc_cells(obj: Obj, now: float) -> Cells:
    spec, status = spec_of(obj), status_of(obj)
    phase = (
        "Terminating"
        if mapping_of(obj.get("metadata")).get("deletionTimestamp")
        else str_of(status.get("phase"))
    )
    capacity = modes = ""
    if spec.get("volumeName"):
        have = set(list_of(status.get("accessModes")))
        order = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
        modes = ",".join(_ACCESS.get(m, "RWOP") for m in order if m in have)
        capacity = str(mapping_of(status.get("capacity")).get("storage", ""))
    klass = str_of(spec.get("storageClassName")) or str_of(
        mapping_of(mapping_of(obj.get("metadata")).get("annotations")).get(
            "volume.beta.kubernetes.io/storage-class"
        )
    )
    mode = str_of(spec.get("volumeMode")) or "<unset>"
    return [
        name_of(obj),
        phase,
        str_of(spec.get("volumeName")),
        capacity,
        modes,
        klass,
        created_age(obj, now),
        mode,
    ]


def _default_pvc(obj: dict[str, Any], creating: bool) -> None:
    """``SetDefaults_PersistentVolumeClaim(Spec)``: volumeMode Filesystem, phase Pending."""
    spec = sub(obj, "spec")
    spec.setdefault("volumeMode", "Filesystem")
    order = "accessModes selector resources volumeName storageClassName volumeMode"
    order_keys(spec, (*order.split(), "dataSource", "dataSourceRef"))
    status = {} if creating else sub(obj, "status")
    status.setdefault("phase", "Pending")
    obj["status"] = status


class PersistentVolumeClaimStrategy(Strategy):
    """PersistentVolumeClaims (see the module docstring)."""

    returns_deleted_object = True
    table = Printer(_pvc_columns, _pvc_cells)

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        _default_pvc(obj, creating)
        super().default(rt, obj, creating=creating)

"""ControllerRevisions: the table (Controller, Revision, Age)."""

from __future__ import annotations

from kubesim.machinery.printing import (
    APPS,
    Cells,
    Column,
    Obj,
    Printer,
    age_column,
    created_age,
    doc,
    int_of,
    list_of,
    mapping_of,
    name_column,
    name_of,
    str_of,
)
from kubesim.registry.resource import Strategy

__all__ = ["ControllerRevisionStrategy"]


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


class ControllerRevisionStrategy(Strategy):
    """ControllerRevisions (see the module docstring)."""

    table = Printer(_controllerrevision_columns, _controllerrevision_cells)

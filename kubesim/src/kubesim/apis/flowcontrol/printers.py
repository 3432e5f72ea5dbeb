"""The flowcontrol tables, as v1.28's ``printers.go``: FlowSchemas (Name, PriorityLevel,
MatchingPrecedence, DistinguisherMethod, Age, MissingPL) and PriorityLevelConfigurations
(Name, Type, NominalConcurrencyShares, in v1beta2 AssuredConcurrencyShares, Queues,
HandSize, QueueLengthLimit, Age). Column descriptions are the served versions' field
documentation."""

from __future__ import annotations

from kubesim.machinery.printing import (
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

__all__ = ["FLOW_SCHEMA_PRINTER", "priority_level_printer"]

_FC = "io.k8s.api.flowcontrol.v1beta3."


def _fs_columns() -> list[Column]:
    return [
        name_column(),
        Column("PriorityLevel", "string", doc(_FC + "PriorityLevelConfigurationReference", "name")),
        Column("MatchingPrecedence", "string", doc(_FC + "FlowSchemaSpec", "matchingPrecedence")),
        Column("DistinguisherMethod", "string", doc(_FC + "FlowSchemaSpec", "distinguisherMethod")),
        age_column(),
        Column(
            "MissingPL",
            "string",
            "references a broken or non-existent PriorityLevelConfiguration",
        ),
    ]


def _fs_cells(obj: Obj, now: float) -> Cells:
    spec = spec_of(obj)
    method = mapping_of(spec.get("distinguisherMethod")).get("type")
    dangling = next(
        (
            mapping_of(c).get("status")
            for c in list_of(status_of(obj).get("conditions"))
            if mapping_of(c).get("type") == "Dangling"
        ),
        None,
    )
    return [
        name_of(obj),
        str_of(mapping_of(spec.get("priorityLevelConfiguration")).get("name")),
        spec.get("matchingPrecedence", 0),
        str_of(method) or "*",
        created_age(obj, now),
        dangling if dangling in ("True", "False") else "?",
    ]


def priority_level_printer(shares: str) -> Printer:
    """The PriorityLevelConfigurations' table whose shares column is named ``shares``."""

    def columns() -> list[Column]:
        queuing = _FC + "QueuingConfiguration"
        return [
            name_column(),
            Column("Type", "string", doc(_FC + "PriorityLevelConfigurationSpec", "type")),
            Column(
                shares,
                "string",
                doc(_FC + "LimitedPriorityLevelConfiguration", "nominalConcurrencyShares"),
            ),
            Column("Queues", "string", doc(queuing, "queues")),
            Column("HandSize", "string", doc(queuing, "handSize")),
            Column("QueueLengthLimit", "string", doc(queuing, "queueLengthLimit")),
            age_column(),
        ]

    def cells(obj: Obj, now: float) -> Cells:
        spec = spec_of(obj)
        limited = mapping_of(spec.get("limited"))
        queuing = mapping_of(mapping_of(limited.get("limitResponse")).get("queuing"))
        key = shares[0].lower() + shares[1:]
        share = limited.get(key, 0) if spec.get("type") == "Limited" else "<none>"
        queued = [queuing.get(k, 0) for k in ("queues", "handSize", "queueLengthLimit")]
        return [
            name_of(obj),
            str_of(spec.get("type")),
            share,
            *(queued if queuing else ["<none>"] * 3),
            created_age(obj, now),
        ]

    return Printer(columns, cells)


FLOW_SCHEMA_PRINTER = Printer(_fs_columns, _fs_cells)

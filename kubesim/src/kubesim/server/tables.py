"""``meta.k8s.io`` Tables: what ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` gets.

A Table has the kind's column definitions (its strategy's printer: for custom resources Name
plus the CRD version's ``additionalPrinterColumns``, :mod:`kubesim.apiextensions.printer`;
the default table, Name and Created At, for a kind without one) and one row per object.
Recorded (16d, 16e, 24a-24f):

* ``apiVersion`` is ``meta.k8s.io/v1`` or ``meta.k8s.io/v1beta1``, as asked; the response's
  Content-Type stays plain ``application/json``;
* ``metadata`` is the list's (``resourceVersion``, ``continue``, ``remainingItemCount``) or,
  for one object, its ``resourceVersion``;
* ``includeObject``: ``Metadata`` (the default) puts a PartialObjectMetadata of the Table's
  version in each row, ``Object`` the whole object, ``None`` null;
* in a watch every event carries a one-row Table whose resourceVersion is the object's, and
  only the first has columnDefinitions (the others ``null``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.errors import KubeSimApiError
from kubesim.machinery.printing import Printer, default_printer
from kubesim.registry.resource import ResourceType

__all__ = ["TableMaker", "include_object", "table_version"]

INCLUDE = ("Metadata", "Object", "None")


def table_version(params: Mapping[str, str]) -> str | None:
    """The Table version an Accept clause's parameters ask for (``as=Table;g=meta.k8s.io;
    v=v1|v1beta1``), or None when the clause is not a Table request this server serves."""
    if params.get("as") != "Table" or params.get("g", "meta.k8s.io") != "meta.k8s.io":
        return None
    version = params.get("v", "v1")
    return version if version in ("v1", "v1beta1") else None


def include_object(query: Mapping[str, str]) -> str:
    """The ``includeObject`` query parameter (default Metadata); 400 for anything else."""
    value = query.get("includeObject", "") or "Metadata"
    if value not in INCLUDE:
        raise KubeSimApiError.bad_request(
            f"unrecognized includeObject value: {value!r}".replace("'", '"')
        )
    return value


# -- custom resource columns -------------------------------------------------------------------


@dataclass
class TableMaker:
    """Tables of one resource type for one request (version and includeObject)."""

    rt: ResourceType
    version: str = "v1"
    include: str = "Metadata"
    clock: Callable[[], float] = time.time
    printer: Printer = field(init=False)

    def __post_init__(self) -> None:
        self.printer = self.rt.strategy.printer(self.rt) or default_printer()

    @property
    def api_version(self) -> str:
        return f"meta.k8s.io/{self.version}"

    def columns(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.printer.columns()]

    def row(self, obj: Mapping[str, Any], now: float | None = None) -> dict[str, Any]:
        """One row of ``obj`` (a full object, kind and apiVersion included or not)."""
        at = self.clock() if now is None else now
        row: dict[str, Any] = {"cells": self.printer.cells(obj, at)}
        if self.printer.conditions is not None:
            conditions = self.printer.conditions(obj)
            if conditions:
                row["conditions"] = conditions
        if self.include == "None":
            row["object"] = None
        elif self.include == "Object":
            full = dict(obj)
            if not self.rt.custom:
                full = {"kind": self.rt.kind, "apiVersion": self.rt.api_version, **full}
            row["object"] = full
        else:
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": self.api_version,
                "metadata": obj.get("metadata", {}),
            }
        return row

    def table(
        self, objects: list[Mapping[str, Any]], metadata: Mapping[str, Any], *, columns: bool = True
    ) -> dict[str, Any]:
        """The Table of ``objects`` with list (or object) ``metadata``; ``columns=False``
        leaves columnDefinitions null (every watch event after the first)."""
        now = self.clock()
        return {
            "kind": "Table",
            "apiVersion": self.api_version,
            "metadata": dict(metadata),
            "columnDefinitions": self.columns() if columns else None,
            "rows": [self.row(o, now) for o in objects],
        }

    def watch_encoder(self) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
        """A per-watch encoder: each object becomes a one-row Table; only the first has
        columnDefinitions."""
        first = [True]

        def encode(obj: Mapping[str, Any]) -> dict[str, Any]:
            rv = (obj.get("metadata") or {}).get("resourceVersion", "")
            out = self.table([obj], {"resourceVersion": rv}, columns=first[0])
            first[0] = False
            return out

        return encode

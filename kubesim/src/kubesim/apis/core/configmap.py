"""ConfigMaps: their data together at most 1 MiB (the cause's field is ``[]``, 25c), and the
table (Data, Age)."""

from __future__ import annotations

from typing import Any

from kubesim.apis.core.data import data_size_causes
from kubesim.machinery.printing import CORE, Column, doc, mapping_of, simple_printer
from kubesim.machinery.validation import Cause
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["ConfigMapStrategy"]

_ENCODED = frozenset({"binaryData"})


class ConfigMapStrategy(Strategy):
    """ConfigMaps (see the module docstring)."""

    table = simple_printer(
        [lambda: Column("Data", "string", doc(CORE + "ConfigMap", "data"))],
        lambda o: [len(mapping_of(o.get("data"))) + len(mapping_of(o.get("binaryData")))],
    )

    def validate(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        return super().validate(rt, obj) + data_size_causes(obj, _ENCODED, "[]")

    def validate_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any]
    ) -> list[Cause]:
        return super().validate_update(rt, old, new) + data_size_causes(new, _ENCODED, "[]")

"""Secrets: ``stringData`` folded into ``data`` (base64, as the v1 conversion does), type
Opaque by default, their data together at most 1 MiB (``data`` counted decoded), the
``type`` field selector, and the table (Type, Data, Age)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from kubesim.apis.core.data import data_size_causes
from kubesim.machinery.documents import sub
from kubesim.machinery.fields import field_label_not_supported, str_field
from kubesim.machinery.printing import CORE, Column, doc, mapping_of, simple_printer, str_of
from kubesim.machinery.validation import Cause
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["SecretStrategy"]

_ENCODED = frozenset({"data", "binaryData"})


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _default_secret(obj: dict[str, Any], creating: bool) -> None:
    string_data = obj.pop("stringData", None)
    for k, v in _d(string_data).items():  # v1 conversion folds stringData into data
        sub(obj, "data")[k] = base64.b64encode(str(v).encode()).decode()
    obj.setdefault("type", "Opaque")


class SecretStrategy(Strategy):
    """Secrets (see the module docstring)."""

    table = simple_printer(
        [
            lambda: Column("Type", "string", doc(CORE + "Secret", "type")),
            lambda: Column("Data", "string", doc(CORE + "Secret", "data")),
        ],
        lambda o: [str_of(o.get("type")), len(mapping_of(o.get("data")))],
    )

    def validate(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        return super().validate(rt, obj) + data_size_causes(obj, _ENCODED, "data")

    def validate_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any]
    ) -> list[Cause]:
        return super().validate_update(rt, old, new) + data_size_causes(new, _ENCODED, "data")

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        _default_secret(obj, creating)
        super().default(rt, obj, creating=creating)

    def fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        return {"type": str_field(obj, "type")}

    def unsupported_field_label(self, label: str) -> str:
        return field_label_not_supported(label)

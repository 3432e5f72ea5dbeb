"""Custom resources: the strategy of every type a CRD serves.

What apiextensions-apiserver v1.28 does with a custom resource, by its CRD version
(``rt.crd_version``): its structural schema defaults and validates every write
(:func:`~kubesim.apiextensions.schema.custom_causes`: on create with the metadata checks, on
every update after them); a create through a version with a status subresource drops the
status; no key order (custom resources are stored with sorted keys); the table is the
version's printer columns (:mod:`kubesim.apiextensions.printer`); the field selectors are
``metadata.name`` and, for a namespaced type, ``metadata.namespace``; the server keeps
``metadata.generation``.
"""

from __future__ import annotations

from typing import Any

from kubesim.apiextensions.printer import crd_printer
from kubesim.apiextensions.schema import custom_causes
from kubesim.machinery.fields import field_label_not_supported
from kubesim.machinery.printing import Printer
from kubesim.machinery.validation import Cause
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["CUSTOM_RESOURCE_STRATEGY", "CustomResourceStrategy"]


class CustomResourceStrategy(Strategy):
    """Custom resources, whatever their CRD (see the module docstring)."""

    uses_generation = True

    def validate(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        return super().validate(rt, obj) + custom_causes(rt, obj)

    def schema_causes(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        return custom_causes(rt, obj)

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        if creating and rt.has_status:
            obj.pop("status", None)

    def printer(self, rt: ResourceType) -> Printer | None:
        return crd_printer(rt)

    def field_labels(self, rt: ResourceType) -> frozenset[str]:
        if rt.namespaced:
            return frozenset({"metadata.name", "metadata.namespace"})
        return frozenset({"metadata.name"})

    def unsupported_field_label(self, label: str) -> str:
        return field_label_not_supported(label)


#: The strategy of every custom type.
CUSTOM_RESOURCE_STRATEGY = CustomResourceStrategy()

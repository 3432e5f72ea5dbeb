"""The HorizontalPodAutoscaler strategy: one storage (autoscaling/v2), served as v2 and v1.

The conversion between the versions and the defaults are the ``conversion`` module of this
package, the validation (run on the prepared object, create and update) its ``validation``
module, the table its ``printer``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesim.apis.autoscaling.horizontalpodautoscaler.conversion import (
    default_hpa,
    is_hpa_v1,
    to_storage,
    to_view,
)
from kubesim.apis.autoscaling.horizontalpodautoscaler.printer import HPA_PRINTER
from kubesim.apis.autoscaling.horizontalpodautoscaler.validation import validate_hpa
from kubesim.machinery.validation import Cause
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["HorizontalPodAutoscalerStrategy"]


class HorizontalPodAutoscalerStrategy(Strategy):
    """HorizontalPodAutoscalers, through either version (see the module docstring)."""

    table = HPA_PRINTER

    def converts(self, rt: ResourceType) -> bool:
        return is_hpa_v1(rt)

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return to_storage(rt, obj)

    def to_view(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return to_view(rt, obj)

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        default_hpa(rt, obj, creating)
        super().default(rt, obj, creating=creating)

    def prepare_for_create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        stored: Callable[[], Iterable[Mapping[str, Any]]],
    ) -> list[Cause]:
        return validate_hpa(rt, obj)

    def prepare_for_update(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> list[Cause]:
        return validate_hpa(rt, new)

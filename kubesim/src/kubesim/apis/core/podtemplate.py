"""PodTemplates: their zero value has an (empty) ``spec``, as the field manager compares a
create against it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.registry.resource import Strategy

__all__ = ["PodTemplateStrategy"]


class PodTemplateStrategy(Strategy):
    """PodTemplates (see the module docstring)."""

    zero_spec: Mapping[str, Any] = {}

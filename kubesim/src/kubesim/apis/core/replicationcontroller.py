"""ReplicationControllers (``SetDefaults_ReplicationController``): ``replicas`` 1, the
selector and labels taken from the template's labels when unset, the template's pod spec
defaults, status ``{replicas: 0}`` on create; the server keeps ``metadata.generation``; the
``status.replicas`` field selector."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.apis.core.podspec import default_template
from kubesim.machinery.documents import order_keys, sub
from kubesim.machinery.fields import field_label_not_supported, int_field
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["ReplicationControllerStrategy"]

_RC_SPEC_ORDER = ("replicas", "minReadySeconds", "selector", "template")


def _default_replication_controller(obj: dict[str, Any], creating: bool) -> None:
    spec = sub(obj, "spec")
    spec.setdefault("replicas", 1)
    template = default_template(spec) if "template" in spec else None
    labels = (template or {}).get("metadata", {}).get("labels") or {}
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = sub(obj, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    order_keys(spec, _RC_SPEC_ORDER)
    if creating:
        obj["status"] = {"replicas": 0}


class ReplicationControllerStrategy(Strategy):
    """ReplicationControllers (see the module docstring)."""

    uses_generation = True

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        _default_replication_controller(obj, creating)
        super().default(rt, obj, creating=creating)

    def fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        return {"status.replicas": int_field(obj, "status", "replicas")}

    def unsupported_field_label(self, label: str) -> str:
        return field_label_not_supported(label)

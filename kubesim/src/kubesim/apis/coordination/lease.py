"""Leases: the table (Holder, Age)."""

from __future__ import annotations

from kubesim.machinery.printing import Column, doc, simple_printer, spec_of, str_of
from kubesim.registry.resource import Strategy

__all__ = ["LeaseStrategy"]


class LeaseStrategy(Strategy):
    """Leases (see the module docstring)."""

    table = simple_printer(
        [
            lambda: Column(
                "Holder", "string", doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")
            )
        ],
        lambda o: [str_of(spec_of(o).get("holderIdentity"))],
    )

"""ServiceAccounts: a completed DELETE answers the object; the table (Secrets, Age)."""

from __future__ import annotations

from kubesim.machinery.printing import CORE, Column, doc, list_of, simple_printer
from kubesim.registry.resource import Strategy

__all__ = ["ServiceAccountStrategy"]


class ServiceAccountStrategy(Strategy):
    """ServiceAccounts (see the module docstring)."""

    returns_deleted_object = True
    table = simple_printer(
        [lambda: Column("Secrets", "string", doc(CORE + "ServiceAccount", "secrets"))],
        lambda o: [len(list_of(o.get("secrets")))],
    )

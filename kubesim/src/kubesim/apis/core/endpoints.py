"""Endpoints: the table (Endpoints: at most three addresses, ``+ N more...``; Age)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kubesim.machinery.printing import (
    CORE,
    Cells,
    Column,
    Obj,
    Printer,
    age_column,
    created_age,
    doc,
    int_of,
    list_of,
    mapping_of,
    name_column,
    name_of,
    str_of,
)
from kubesim.registry.resource import Strategy

__all__ = ["EndpointsStrategy"]


def _endpoints_columns() -> list[Column]:
    return [
        name_column(),
        Column("Endpoints", "string", doc(CORE + "Endpoints", "subsets")),
        age_column(),
    ]


def _endpoints_cells(obj: Obj, now: float) -> Cells:
    shown: list[str] = []
    count, more = 0, False
    for subset in (mapping_of(s) for s in list_of(obj.get("subsets"))):
        addresses = [str_of(mapping_of(a).get("ip")) for a in list_of(subset.get("addresses"))]
        ports: list[Mapping[str, Any] | None] = [
            mapping_of(p) for p in list_of(subset.get("ports"))
        ]
        for port in ports or [None]:
            count += len(addresses)
            for ip in addresses:
                if len(shown) == 3:
                    more = True
                    break
                if port is None:
                    shown.append(ip)
                else:
                    host = f"[{ip}]" if _is_ipv6(ip) else ip
                    shown.append(f"{host}:{int_of(port.get('port'))}")
    text = ",".join(shown) if list_of(obj.get("subsets")) else "<none>"
    if more:
        text = f"{text} + {count - 3} more..."
    return [name_of(obj), text, created_age(obj, now)]


def _is_ipv6(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 6
    except ValueError:
        return ":" in ip


class EndpointsStrategy(Strategy):
    """Endpoints (see the module docstring)."""

    table = Printer(_endpoints_columns, _endpoints_cells)

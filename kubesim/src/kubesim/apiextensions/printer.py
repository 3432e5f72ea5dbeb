"""The table of a custom resource: Name plus its CRD version's ``additionalPrinterColumns``.

As apiextensions-apiserver v1.28 prints them (16d, 16e, 24e): each column's cells are what
its JSONPath (:func:`jsonpath`: ``.a.b[0]``, ``['k']``, ``[*]``, ``[?(@.x=="y")]``) selects,
keeping their JSON type per column type (integer, number, boolean), a missing value is null,
a ``date`` column is an age string (``0s``), a ``string`` column prints the value as Go's
``%v`` does; a version without columns gets Age.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Mapping
from typing import Any

from kubesim.encoding.gotime import human_duration, parse_rfc3339
from kubesim.errors import GoTimeError
from kubesim.machinery.printing import Column, Printer, doc
from kubesim.registry.resource import ResourceType

__all__ = ["crd_printer", "jsonpath"]

_COLUMN_DOC = "Custom resource definition column (in JSONPath format): "
_TOKEN = re.compile(r"""\.\.|\.([^.\[\]]+)|\[(?:'([^']*)'|"([^"]*)"|(-?\d+)|(\*)|\?\((.*?)\))\]""")
_FILTER = re.compile(r"""@((?:\.[^.\s=!<>]+)+)\s*(==|!=)\s*(?:'([^']*)'|"([^"]*)"|(\S+))""")


def jsonpath(path: str, obj: Any) -> list[Any]:
    """The values a simple JSONPath (``.a.b[0]``, ``['k']``, ``[*]``, ``[?(@.x=="y")]``)
    selects in ``obj``; ``{...}`` around the path is allowed."""
    expr = path.strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1]
    current = [obj]
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            return []
        pos = m.end()
        key = m.group(1) or m.group(2) or m.group(3)
        nxt: list[Any] = []
        for value in current:
            if key is not None:
                if isinstance(value, Mapping) and key in value:
                    nxt.append(value[key])
            elif m.group(4) is not None:
                if isinstance(value, list):
                    i = int(m.group(4))
                    if -len(value) <= i < len(value):
                        nxt.append(value[i])
            elif m.group(5) is not None:
                if isinstance(value, list):
                    nxt.extend(value)
                elif isinstance(value, Mapping):
                    nxt.extend(value.values())
            elif m.group(6) is not None and isinstance(value, list):
                nxt.extend(v for v in value if _filter(m.group(6), v))
        current = nxt
    return current


def _filter(expr: str, item: Any) -> bool:
    m = _FILTER.fullmatch(expr.strip())
    if m is None:
        return False
    found = jsonpath(m.group(1), item)
    want = next((g for g in m.groups()[2:] if g is not None), "")
    equal = bool(found) and _go_v(found[0]) == want
    return equal if m.group(2) == "==" else not equal


def _go_float(f: float) -> str:
    """``%v`` of a float64: the shortest digits, ``e+XX`` form below 1e-4 or from 1e6."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digit_tuple, e = decimal.Decimal(repr(f)).normalize().as_tuple()
    assert isinstance(e, int)
    digits = "".join(map(str, digit_tuple))
    exp = len(digits) + e - 1
    neg = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{neg}{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    if e >= 0:
        return neg + digits + "0" * e
    point = len(digits) + e
    if point > 0:
        return f"{neg}{digits[:point]}.{digits[point:]}"
    return f"{neg}0.{'0' * -point}{digits}"


def _go_v(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON value (maps with sorted keys, slices space-separated)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if value is None:
        return "<nil>"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{_go_v(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_v(v) for v in value) + "]"
    return str(value)


def _cell(kind: str, value: Any, now: float) -> Any:
    """``cellForJSONValue`` (and the string columns' printing)."""
    if value is None:
        return None
    if kind == "string":
        return _go_v(value)
    if kind == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return int(value)
    elif kind == "number":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif kind == "boolean":
        if isinstance(value, bool):
            return value
    elif kind == "date" and isinstance(value, str):
        try:
            return human_duration(now - parse_rfc3339(value).timestamp())
        except GoTimeError:
            return "<invalid>"
    return None


def crd_printer(rt: ResourceType) -> Printer:
    """A custom type's table: Name plus its CRD version's ``additionalPrinterColumns`` (Age
    when it has none)."""
    version = rt.crd_version or {}
    specs = [c for c in version.get("additionalPrinterColumns") or [] if isinstance(c, Mapping)]
    if not specs:
        specs = [
            {
                "name": "Age",
                "type": "date",
                "jsonPath": ".metadata.creationTimestamp",
                "description": doc("ObjectMeta", "creationTimestamp"),
            }
        ]

    def columns() -> list[Column]:
        name = Column("Name", "string", doc("ObjectMeta", "name"), format="name")
        return [name] + [
            Column(
                str(c.get("name", "")),
                str(c.get("type", "string")),
                str(c.get("description") or _COLUMN_DOC + str(c.get("jsonPath", ""))),
                int(c.get("priority") or 0),
                str(c.get("format") or ""),
            )
            for c in specs
        ]

    def cells(obj: Mapping[str, Any], now: float) -> list[Any]:
        out: list[Any] = [str((obj.get("metadata") or {}).get("name", ""))]
        for c in specs:
            found = jsonpath(str(c.get("jsonPath", "")), obj)
            out.append(_cell(str(c.get("type", "string")), found[0], now) if found else None)
        return out

    return Printer(columns, cells)


# -- tables ------------------------------------------------------------------------------------

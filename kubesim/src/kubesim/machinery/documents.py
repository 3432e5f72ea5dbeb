"""Small helpers over decoded JSON documents, as the kinds' defaulting writes them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["order_keys", "ordered", "sub"]


def order_keys(d: dict[str, Any], order: Iterable[str]) -> None:
    """Reorder ``d`` in place: the keys of ``order`` first, in that order, then the others
    as they were (how a Go struct marshals its fields)."""
    rank = {k: i for i, k in enumerate(order)}
    items = sorted(d.items(), key=lambda kv: rank.get(kv[0], len(rank)))
    d.clear()
    d.update(items)


def ordered(d: Mapping[str, Any], order: Iterable[str]) -> dict[str, Any]:
    """A copy of ``d`` with the keys of ``order`` first, in that order, then the others."""
    out = {k: d[k] for k in order if k in d}
    out.update({k: v for k, v in d.items() if k not in out})
    return out


def sub(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]``, made an empty dict first when it is not a dict."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value

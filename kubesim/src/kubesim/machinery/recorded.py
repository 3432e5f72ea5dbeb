"""The OpenAPI documents recorded from kube-apiserver v1.28.0 (``openapi/*.json.gz``).

They are what the server serves at ``/openapi/v2`` and ``/openapi/v3``, and the built-in
types' schemas and field documentation every layer reads: the decoder (Go types), the
field manager (list types and keys), the printers (column descriptions). Each document is
read and decompressed once per process, on first use.
"""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path
from typing import Any

import orjson

__all__ = ["DATA", "recorded", "recorded_definitions", "recorded_json"]

#: The folder of the recorded documents.
DATA = Path(__file__).resolve().parent.parent / "openapi"


@cache
def recorded(name: str) -> bytes:
    """One recorded document (a file of :data:`DATA`), decompressed."""
    raw = (DATA / name).read_bytes()
    return gzip.decompress(raw) if name.endswith(".gz") else raw


@cache
def recorded_json(name: str) -> Any:
    """One recorded document, parsed (shared: never change it)."""
    return orjson.loads(recorded(name))


def recorded_definitions() -> dict[str, Any]:
    """The recorded ``/openapi/v2`` definitions (the built-in types' schemas and docs)."""
    defs: dict[str, Any] = recorded_json("v2.json.gz")["definitions"]
    return defs

"""Helpers shared by the tests: recorded transcripts, bounded polling, object factories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Recorded kube-apiserver v1.28 exchanges, copied into the repository (see its README).
CONFORMANCE = Path(__file__).resolve().parent / "conformance"
#: The repository's root (examples/, bench/ and README.md live there).
REPO = Path(__file__).resolve().parents[1]


def transcript(name: str) -> dict[str, Any]:
    """Load one recorded kube-apiserver exchange from tests/conformance (``"13a"`` or the
    whole file name)."""
    stem = name.removesuffix(".json")
    matches = sorted(CONFORMANCE.glob(f"{stem}*.json"))
    assert matches, f"no transcript {name!r} in {CONFORMANCE}"
    data: dict[str, Any] = json.loads(matches[0].read_text())
    return data

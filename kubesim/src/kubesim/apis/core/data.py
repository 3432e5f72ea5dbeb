"""What ConfigMaps and Secrets share: the 1 MiB their data may hold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.machinery.validation import Cause

__all__ = ["MAX_DATA_BYTES", "data_size_causes"]

#: ``corev1.MaxSecretSize``: the most data a ConfigMap or a Secret may hold
MAX_DATA_BYTES = 1024 * 1024


def _data_len(value: object, base64: bool) -> int:
    if not isinstance(value, str):
        return 0
    return len(value) * 3 // 4 - value.count("=") if base64 else len(value.encode())


def data_size_causes(obj: Mapping[str, Any], encoded: frozenset[str], field: str) -> list[Cause]:
    """The 422 cause (at ``field``) when the keys and values of ``data``, ``binaryData``
    and ``stringData`` together hold more than :data:`MAX_DATA_BYTES` (the values of the
    ``encoded`` ones counted decoded from base64)."""
    total = 0
    for key in ("data", "binaryData", "stringData"):
        value = obj.get(key)
        for k, v in (value if isinstance(value, dict) else {}).items():
            total += len(k.encode()) + _data_len(v, base64=key in encoded)
    if total <= MAX_DATA_BYTES:
        return []
    return [
        Cause("FieldValueTooLong", f"Too long: must have at most {MAX_DATA_BYTES} bytes", field)
    ]

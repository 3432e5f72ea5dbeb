"""Status conditions read as apimachinery reads them: only an entry of the type whose
status is "True" counts."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from aioinformer import KubeObject, decode_object, is_condition_true


def obj(status: Any) -> KubeObject:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "resourceVersion": "1"},
    }
    if status is not None:
        doc["status"] = status
    return decode_object(orjson.dumps(doc))


READY = {"type": "Ready", "status": "True"}


@pytest.mark.parametrize(
    ("status", "ready"),
    [
        ({"conditions": [{"type": "PodScheduled", "status": "True"}, READY]}, True),
        ({"conditions": [{"type": "Ready", "status": "False"}]}, False),
        ({"conditions": [{"type": "Ready", "status": "Unknown"}]}, False),
        ({"conditions": [{"type": "Ready", "status": True}]}, False),  # not the string
        ({"conditions": [{"type": "ready", "status": "True"}]}, False),  # types are exact
        ({"conditions": [{"type": "Scheduled", "status": "True"}]}, False),
        ({"conditions": []}, False),
        ({"conditions": None}, False),
        ({"conditions": {"Ready": "True"}}, False),  # malformed: not a list
        ({"conditions": ["Ready", READY]}, True),  # a malformed entry is skipped
        ({"phase": "Running"}, False),
        (None, False),
    ],
)
def test_is_condition_true(status: Any, ready: bool) -> None:
    assert is_condition_true(obj(status), "Ready") is ready

"""Status conditions read and written as apimachinery's ``meta`` helpers do: only an entry
of the type whose status is "True" counts; setting one moves its lastTransitionTime only
when its status changes, records observedGeneration, says whether anything changed, and
refuses what ``metav1.Condition``'s validation refuses."""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest

from aioinformer import (
    ConfigError,
    KubeObject,
    decode_object,
    find_condition,
    is_condition_true,
    remove_condition,
    set_condition,
)


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


# -- writing: set_condition / find_condition / remove_condition (meta.SetStatusCondition) --------

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def test_a_new_condition_is_appended_with_its_transition_time() -> None:
    status: dict[str, Any] = {"readyReplicas": 1}
    assert set_condition(status, "Ready", True, reason="PodsReady", message="1/1",
                         observed_generation=3, now=T0)  # fmt: skip
    assert status["conditions"] == [
        {
            "type": "Ready",
            "status": "True",
            "reason": "PodsReady",
            "message": "1/1",
            "lastTransitionTime": "2026-01-02T03:04:05Z",
            "observedGeneration": 3,
        }
    ]
    assert status["readyReplicas"] == 1


def test_the_transition_time_moves_only_when_the_status_changes() -> None:
    conditions: list[Any] = []
    set_condition(conditions, "Ready", "False", reason="PodsNotReady", message="0/2", now=T0)
    # same status, new reason and message: not a transition
    assert set_condition(conditions, "Ready", False, reason="Scheduling", message="1/2", now=T1)
    assert conditions[0]["lastTransitionTime"] == "2026-01-02T03:04:05Z"
    assert (conditions[0]["reason"], conditions[0]["message"]) == ("Scheduling", "1/2")
    assert set_condition(conditions, "Ready", True, reason="PodsReady", now=T1)
    assert conditions[0]["status"] == "True"
    assert conditions[0]["lastTransitionTime"] == "2026-01-02T03:09:05Z"
    assert conditions[0]["message"] == ""


def test_setting_what_is_there_changes_nothing_and_says_so() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "Ready", True, reason="PodsReady", message="2/2",
                  observed_generation=4, now=T0)  # fmt: skip
    before = copy.deepcopy(status)
    assert not set_condition(status, "Ready", True, reason="PodsReady", message="2/2",
                             observed_generation=4, now=T1)  # fmt: skip
    assert status == before
    # observed_generation None leaves the entry's as it is
    assert not set_condition(status, "Ready", True, reason="PodsReady", message="2/2", now=T1)
    assert set_condition(status, "Ready", True, reason="PodsReady", message="2/2",
                         observed_generation=5, now=T1)  # fmt: skip
    assert status["conditions"][0]["observedGeneration"] == 5
    assert status["conditions"][0]["lastTransitionTime"] == "2026-01-02T03:04:05Z"


def test_other_conditions_and_their_order_are_kept() -> None:
    other = {"type": "Progressing", "status": "True", "reason": "Scaling", "message": "",
             "lastTransitionTime": "2025-01-01T00:00:00Z"}  # fmt: skip
    ready = {"type": "Ready", "status": "True", "reason": "PodsReady", "message": "",
             "lastTransitionTime": "2025-01-01T00:00:00Z"}  # fmt: skip
    conditions: list[Any] = [copy.deepcopy(ready), copy.deepcopy(other)]
    assert set_condition(conditions, "Ready", "Unknown", reason="NodeLost", now=T0)
    assert [c["type"] for c in conditions] == ["Ready", "Progressing"]
    assert conditions[1] == other
    assert find_condition(conditions, "Progressing") is conditions[1]
    assert find_condition({"conditions": conditions}, "Missing") is None
    assert find_condition({}, "Ready") is None
    assert remove_condition({"conditions": conditions}, "Ready")
    assert conditions == [other]
    assert not remove_condition(conditions, "Ready")
    assert not remove_condition({}, "Ready")


def test_a_condition_read_from_an_object_is_written_back_unchanged() -> None:
    """The read-modify-write a reconcile does: the object's status (a copy), the condition
    set as it already is: nothing to write."""
    first: dict[str, Any] = {}
    set_condition(first, "Ready", True, reason="PodsReady", observed_generation=1, now=T0)
    site = obj(first)
    status = site.field("status", {})
    assert not set_condition(status, "Ready", True, reason="PodsReady", observed_generation=1)
    assert status == site.field("status") and is_condition_true(site, "Ready")


def test_a_naive_time_is_taken_as_utc_and_an_aware_one_converted() -> None:
    conditions: list[Any] = []
    set_condition(conditions, "A", True, reason="R", now=datetime(2026, 1, 2, 3, 4, 5))
    set_condition(conditions, "B", True, reason="R",
                  now=datetime(2026, 1, 2, 4, 4, 5, 999, tzinfo=timezone(timedelta(hours=1))))  # fmt: skip
    assert {c["lastTransitionTime"] for c in conditions} == {"2026-01-02T03:04:05Z"}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("ready condition", True, "PodsReady"), "a condition's type"),
        (("", True, "PodsReady"), "a condition's type"),
        (("Ready", "Yes", "PodsReady"), "'True', 'False' or 'Unknown'"),
        (("Ready", None, "PodsReady"), "'True', 'False' or 'Unknown'"),
        (("Ready", True, ""), "CamelCase"),
        (("Ready", True, "pods ready"), "CamelCase"),
        (("Ready", True, "1Ready"), "CamelCase"),
        (("Ready", True, "Ready:"), "CamelCase"),
    ],
)
def test_what_the_api_would_refuse_is_refused(args: tuple[Any, Any, Any], says: str) -> None:
    conditions: list[Any] = []
    with pytest.raises(ConfigError, match=re.escape(says)):
        set_condition(conditions, args[0], args[1], reason=args[2])
    assert conditions == []


def test_the_limits_and_the_generation_are_checked() -> None:
    for long in ({"message": "m" * 32769}, {"observed_generation": -1}):
        with pytest.raises(ConfigError):
            set_condition([], "Ready", True, reason="R", **long)
    with pytest.raises(ConfigError, match="CamelCase"):
        set_condition([], "Ready", True, reason="R" * 1025)
    with pytest.raises(ConfigError, match="type"):
        set_condition([], "A" * 317, True, reason="R")
    assert set_condition([], "example.com/Synced", True, reason="Done_1,2:ok", message="m" * 32768)
    with pytest.raises(ConfigError, match="is a list, not dict"):
        set_condition({"conditions": {"Ready": "True"}}, "Ready", True, reason="R")


def test_an_objects_condition_is_found_as_a_copy() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "Ready", False, reason="PodsNotReady", now=T0)
    pod = obj(status)
    found = find_condition(pod, "Ready")
    assert found == status["conditions"][0]
    assert found is not None
    found["status"] = "True"  # a copy: the object is not changed
    assert not is_condition_true(pod, "Ready")
    assert find_condition(pod, "Other") is None
    assert find_condition(obj({"conditions": "malformed"}), "Ready") is None
    assert find_condition(obj(None), "Ready") is None

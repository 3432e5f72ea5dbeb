"""The pod printer's READY, STATUS and RESTARTS for the states the recordings do not show
(init containers, sidecars, crashes, exits, signals, Completed while running, deletion,
scheduling gates), the wide columns and the Completed row condition."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.apis.core.pod.printer import POD_PRINTER
from tests.kubesim.apis.test_printers import AGO_5M, cells


def pod(status: dict[str, Any], spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    base_spec = {"containers": [{"name": "a"}, {"name": "b"}]}
    return {
        "metadata": {"name": "p", "creationTimestamp": AGO_5M, **meta},
        "spec": {**base_spec, **(spec or {})},
        "status": status,
    }


def running(name: str, ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    return {"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {}}}


@pytest.mark.parametrize(
    ("status", "spec", "meta", "want"),
    [
        (
            {"phase": "Running", "containerStatuses": [running("a"), running("b")]},
            None,
            {},
            ["2/2", "Running", "0"],
        ),
        (
            {
                "phase": "Running",
                "containerStatuses": [
                    running("a"),
                    {
                        "name": "b",
                        "restartCount": 4,
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "lastState": {"terminated": {"finishedAt": AGO_5M}},
                    },
                ],
            },
            None,
            {},
            ["1/2", "CrashLoopBackOff", "4 (5m ago)"],
        ),
        (
            {
                "phase": "Failed",
                "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 2}}}],
            },
            None,
            {},
            ["0/2", "ExitCode:2", "0"],
        ),
        (
            {
                "phase": "Failed",
                "containerStatuses": [{"name": "a", "state": {"terminated": {"signal": 9}}}],
            },
            None,
            {},
            ["0/2", "Signal:9", "0"],
        ),
        (
            {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [
                    {"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                    running("b"),
                ],
            },
            None,
            {},
            ["1/2", "NotReady", "0"],
        ),
        (
            {
                "phase": "Pending",
                "initContainerStatuses": [
                    {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                    {"name": "i2", "state": {"waiting": {"reason": "PodInitializing"}}},
                ],
            },
            {"initContainers": [{"name": "i1"}, {"name": "i2"}]},
            {},
            ["0/2", "Init:1/2", "0"],
        ),
        (
            {
                "phase": "Pending",
                "initContainerStatuses": [
                    {"name": "i1", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
                ],
            },
            {"initContainers": [{"name": "i1"}]},
            {},
            ["0/2", "Init:ImagePullBackOff", "0"],
        ),
        (
            {
                "phase": "Running",
                "initContainerStatuses": [
                    {"name": "side", "started": True, "ready": True, "state": {"running": {}}}
                ],
                "containerStatuses": [running("a"), running("b")],
            },
            {"initContainers": [{"name": "side", "restartPolicy": "Always"}]},
            {},
            ["3/3", "Running", "0"],
        ),
        (
            {"phase": "Running", "containerStatuses": [running("a"), running("b")]},
            None,
            {"deletionTimestamp": AGO_5M},
            ["2/2", "Terminating", "0"],
        ),
        (
            {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
                ],
            },
            None,
            {},
            ["0/2", "SchedulingGated", "0"],
        ),
        ({"phase": "Failed", "reason": "Evicted"}, None, {}, ["0/2", "Evicted", "0"]),
    ],
)
def test_pod_status_column(
    status: dict[str, Any], spec: Any, meta: dict[str, Any], want: list[str]
) -> None:
    got = cells("", "pods", pod(status, spec, **meta))
    assert got[1:4] == want
    assert got[4] == "5m0s" or got[4].startswith("5m")


def test_pod_wide_cells_and_row_conditions() -> None:
    p = pod(
        {
            "phase": "Succeeded",
            "podIPs": [{"ip": "10.0.0.7"}],
            "nominatedNodeName": "n2",
            "conditions": [{"type": "g1", "status": "True"}, {"type": "g2", "status": "False"}],
        },
        {"nodeName": "n1", "readinessGates": [{"conditionType": "g1"}, {"conditionType": "g2"}]},
    )
    assert cells("", "pods", p)[5:] == ["10.0.0.7", "n1", "n2", "1/2"]
    assert POD_PRINTER.conditions is not None
    assert POD_PRINTER.conditions(p) == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]
    assert POD_PRINTER.conditions(pod({"phase": "Running"})) == []

"""The pod printer: kubectl's READY, STATUS and RESTARTS, as v1.28's ``printPod``.

STATUS is the phase, or the pod's reason, or what the init containers and containers
report (``Init:1/2``, ``Init:ImagePullBackOff``, ``CrashLoopBackOff``, ``ExitCode:2``,
``Signal:9``), ``Completed`` turned back into ``Running``/``NotReady`` while a container
still runs, ``Terminating`` (``Unknown`` on a lost node) once deleted; restartable init
containers (sidecars) count as containers. RESTARTS adds ``(5m ago)`` after a restart.
The wide columns are IP, NODE, NOMINATED NODE and READINESS GATES; finished pods' rows
carry a Completed condition. Recorded: 24a, 24b, 16d.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesim.encoding.gotime import age
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
    spec_of,
    status_of,
    str_of,
)

__all__ = ["POD_PRINTER"]


def _pod_columns() -> list[Column]:
    return [
        name_column(),
        Column(
            "Ready", "string", "The aggregate readiness state of this pod for accepting traffic."
        ),
        Column("Status", "string", "The aggregate status of the containers in this pod."),
        Column(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the "
            "last container in this pod has restarted.",
        ),
        age_column(),
        Column("IP", "string", doc(CORE + "PodStatus", "podIP"), 1),
        Column("Node", "string", doc(CORE + "PodSpec", "nodeName"), 1),
        Column("Nominated Node", "string", doc(CORE + "PodStatus", "nominatedNodeName"), 1),
        Column("Readiness Gates", "string", doc(CORE + "PodSpec", "readinessGates"), 1),
    ]


def _restartable(container: Obj | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


def _pod_cells(pod: Obj, now: float) -> Cells:
    spec, status = spec_of(pod), status_of(pod)
    containers = list_of(spec.get("containers"))
    init_specs = {
        str_of(mapping_of(c).get("name")): mapping_of(c)
        for c in list_of(spec.get("initContainers"))
    }
    total = len(containers) + sum(1 for c in init_specs.values() if _restartable(c))
    ready = restarts = sidecar_restarts = 0
    last_restart = sidecar_last = ""
    reason = str_of(status.get("phase"))
    if status.get("reason"):
        reason = str_of(status["reason"])
    conditions = [mapping_of(c) for c in list_of(status.get("conditions"))]
    for cond in conditions:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    initializing = False
    init_statuses = [mapping_of(c) for c in list_of(status.get("initContainerStatuses"))]
    for i, cs in enumerate(init_statuses):
        restarts += int_of(cs.get("restartCount"))
        finished = str_of(
            mapping_of(mapping_of(cs.get("lastState")).get("terminated")).get("finishedAt")
        )
        last_restart = max(last_restart, finished)
        sidecar = _restartable(init_specs.get(str_of(cs.get("name"))))
        if sidecar:
            sidecar_restarts += int_of(cs.get("restartCount"))
            sidecar_last = max(sidecar_last, finished)
        state = mapping_of(cs.get("state"))
        term, wait = state.get("terminated"), state.get("waiting")
        if isinstance(term, Mapping) and int_of(term.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            ready += 1 if cs.get("ready") else 0
            continue
        if isinstance(term, Mapping):
            if term.get("reason"):
                reason = "Init:" + str_of(term["reason"])
            elif int_of(term.get("signal")):
                reason = f"Init:Signal:{int_of(term.get('signal'))}"
            else:
                reason = f"Init:ExitCode:{int_of(term.get('exitCode'))}"
        elif (
            isinstance(wait, Mapping) and wait.get("reason") and wait["reason"] != "PodInitializing"
        ):
            reason = "Init:" + str_of(wait["reason"])
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions
    )
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, sidecar_last
        running = False
        for cs in reversed([mapping_of(c) for c in list_of(status.get("containerStatuses"))]):
            restarts += int_of(cs.get("restartCount"))
            finished = str_of(
                mapping_of(mapping_of(cs.get("lastState")).get("terminated")).get("finishedAt")
            )
            last_restart = max(last_restart, finished)
            state = mapping_of(cs.get("state"))
            wait, term = mapping_of(state.get("waiting")), state.get("terminated")
            if wait.get("reason"):
                reason = str_of(wait["reason"])
            elif isinstance(term, Mapping) and term.get("reason"):
                reason = str_of(term["reason"])
            elif isinstance(term, Mapping):
                signal = int_of(term.get("signal"))
                reason = (
                    f"Signal:{signal}" if signal else f"ExitCode:{int_of(term.get('exitCode'))}"
                )
            elif cs.get("ready") and isinstance(state.get("running"), Mapping):
                running = True
                ready += 1
        if reason == "Completed" and running:
            has_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
            )
            reason = "Running" if has_ready else "NotReady"
    if mapping_of(pod.get("metadata")).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    restarts_cell = str(restarts)
    if restarts and last_restart:
        restarts_cell = f"{restarts} ({age(last_restart, now)} ago)"
    ips = list_of(status.get("podIPs"))
    ip = str_of(mapping_of(ips[0]).get("ip")) if ips else ""
    gates = "<none>"
    if list_of(spec.get("readinessGates")):
        wanted = [
            str_of(mapping_of(g).get("conditionType")) for g in list_of(spec.get("readinessGates"))
        ]
        true = 0
        for want in wanted:
            match = next((c for c in conditions if c.get("type") == want), None)
            true += 1 if match is not None and match.get("status") == "True" else 0
        gates = f"{true}/{len(wanted)}"
    return [
        name_of(pod),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        created_age(pod, now),
        ip or "<none>",
        str_of(spec.get("nodeName")) or "<none>",
        str_of(status.get("nominatedNodeName")) or "<none>",
        gates,
    ]


def _pod_conditions(pod: Obj) -> list[dict[str, str]]:
    phase = status_of(pod).get("phase")
    if phase == "Succeeded":
        msg = "The pod has completed successfully."
    elif phase == "Failed":
        msg = "The pod failed."
    else:
        return []
    return [{"type": "Completed", "status": "True", "reason": str(phase), "message": msg}]


POD_PRINTER = Printer(_pod_columns, _pod_cells, _pod_conditions)

"""``POST pods/<name>/binding``: what the scheduler writes to put a pod on a node.

:func:`bind` sets ``spec.nodeName`` once (a pod already bound is the recorded 409 of
``pods/binding``) and the ``PodScheduled`` condition True, as the binding REST does.
"""

from __future__ import annotations

from kubesim.encoding.timefmt import now_rfc3339
from kubesim.errors import KubeSimApiError
from kubesim.registry.store import Api
from kubesim.storage.mvcc import Stored

__all__ = ["bind"]


def bind(api: Api, namespace: str, name: str, node: str) -> Stored:
    """Bind the pod ``namespace/name`` to ``node`` (see the module docstring)."""
    rt = api.registry.lookup("", "v1", "pods")
    assert rt is not None
    cur = api.get(rt, namespace, name)
    obj = cur.decode()
    spec = obj.setdefault("spec", {})
    if spec.get("nodeName"):
        msg = (
            f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
            f'already assigned to node "{spec["nodeName"]}"'
        )
        conflict = KubeSimApiError.conflict("pods/binding", "", name)
        raise KubeSimApiError(409, {**conflict.body, "message": msg})
    spec["nodeName"] = node
    status = obj.setdefault("status", {})
    conds = [c for c in status.get("conditions", []) if c.get("type") != "PodScheduled"]
    conds.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now_rfc3339(),
        }
    )
    status["conditions"] = conds
    obj["status"] = {k: status[k] for k in ("phase", "conditions") if k in status} | status
    return api.put(rt, obj, cur)

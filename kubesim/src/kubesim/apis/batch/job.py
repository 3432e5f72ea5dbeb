"""Defaulting of the workload kinds outside apps/v1: batch Jobs and CronJobs and core
ReplicationControllers, as kube-apiserver v1.28 fills them in (pure functions, in place).

* Job (``SetDefaults_Job`` and the job strategy): ``parallelism`` and ``completions`` 1
  when neither is set, ``backoffLimit`` 6, ``completionMode`` NonIndexed, ``suspend``
  false; unless ``manualSelector``, the selector ``batch.kubernetes.io/controller-uid`` =
  the Job's uid and the template labels ``batch.kubernetes.io/controller-uid``,
  ``batch.kubernetes.io/job-name``, ``controller-uid`` and ``job-name``
  (:func:`generate_job_selector`, once the uid is known); status ``{}`` on create.
* CronJob (``SetDefaults_CronJob``): ``concurrencyPolicy`` Allow, ``suspend`` false,
  ``successfulJobsHistoryLimit`` 3, ``failedJobsHistoryLimit`` 1, and the Job template
  defaulted as a Job's spec is (without a selector); status ``{}`` on create.
* ReplicationController (``SetDefaults_ReplicationController``): ``replicas`` 1, the
  selector and labels taken from the template's labels when unset; status
  ``{replicas: 0}`` on create.

Pod templates get the pod spec defaults of :func:`._defaults.default_pod_spec`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["BATCH_DEFAULTERS", "generate_job_selector"]

_JOB_SPEC_ORDER = (
    "parallelism completions activeDeadlineSeconds podFailurePolicy backoffLimit "
    "backoffLimitPerIndex maxFailedIndexes selector manualSelector template "
    "ttlSecondsAfterFinished completionMode suspend podReplacementPolicy"
).split()
_CRONJOB_SPEC_ORDER = (
    "schedule timeZone startingDeadlineSeconds concurrencyPolicy suspend jobTemplate "
    "successfulJobsHistoryLimit failedJobsHistoryLimit"
).split()
_RC_SPEC_ORDER = ("replicas", "minReadySeconds", "selector", "template")

PodSpecDefaulter = Callable[[dict[str, Any]], None]


def _sub(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _order(d: dict[str, Any], order: list[str] | tuple[str, ...]) -> None:
    items = {k: d.pop(k) for k in order if k in d}
    rest = dict(d)
    d.clear()
    d.update(items)
    d.update(rest)


def _template(spec: dict[str, Any], pod_spec: PodSpecDefaulter) -> dict[str, Any]:
    template = _sub(spec, "template")
    meta = _sub(template, "metadata")
    meta.setdefault("creationTimestamp", None)
    _order(meta, ("name", "namespace", "creationTimestamp", "labels", "annotations"))
    pod_spec(_sub(template, "spec"))
    _order(template, ("metadata", "spec"))
    return template


def _default_job_spec(spec: dict[str, Any], pod_spec: PodSpecDefaulter) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    _template(spec, pod_spec)
    _order(spec, _JOB_SPEC_ORDER)


def _job(obj: dict[str, Any], creating: bool, pod_spec: PodSpecDefaulter) -> None:
    _default_job_spec(_sub(obj, "spec"), pod_spec)
    if creating:
        obj["status"] = {}


def _cronjob(obj: dict[str, Any], creating: bool, pod_spec: PodSpecDefaulter) -> None:
    spec = _sub(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = _sub(spec, "jobTemplate")
    meta = _sub(job_template, "metadata")
    meta.setdefault("creationTimestamp", None)
    _default_job_spec(_sub(job_template, "spec"), pod_spec)
    _order(job_template, ("metadata", "spec"))
    _order(spec, _CRONJOB_SPEC_ORDER)
    if creating:
        obj["status"] = {}


def _replication_controller(
    obj: dict[str, Any], creating: bool, pod_spec: PodSpecDefaulter
) -> None:
    spec = _sub(obj, "spec")
    spec.setdefault("replicas", 1)
    template = _template(spec, pod_spec) if "template" in spec else None
    labels = (template or {}).get("metadata", {}).get("labels") or {}
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = _sub(obj, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    _order(spec, _RC_SPEC_ORDER)
    if creating:
        obj["status"] = {"replicas": 0}


#: (group, plural) -> defaulter(obj, creating, pod spec defaulter)
BATCH_DEFAULTERS: dict[tuple[str, str], Callable[[dict[str, Any], bool, PodSpecDefaulter], None]]
BATCH_DEFAULTERS = {
    ("batch", "jobs"): _job,
    ("batch", "cronjobs"): _cronjob,
    ("", "replicationcontrollers"): _replication_controller,
}


def generate_job_selector(obj: dict[str, Any]) -> None:
    """The job strategy's selector for a new Job (its ``metadata.uid`` is set): unless
    ``spec.manualSelector``, ``matchLabels`` ``batch.kubernetes.io/controller-uid`` and the
    four controller-uid/job-name labels on the pod template, as v1.28 writes them."""
    spec = _sub(obj, "spec")
    if spec.get("manualSelector"):
        return
    meta = obj.get("metadata") or {}
    uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
    labels = _sub(_sub(_sub(spec, "template"), "metadata"), "labels")
    labels.update(
        {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
    )
    if not spec.get("selector"):
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    _order(spec, _JOB_SPEC_ORDER)

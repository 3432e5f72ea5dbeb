"""What Jobs and CronJobs share: a Job's spec defaults (``SetDefaults_Job``), also a
CronJob's ``jobTemplate.spec``'s."""

from __future__ import annotations

from typing import Any

from kubesim.apis.core.podspec import default_template
from kubesim.machinery.documents import order_keys

__all__ = ["JOB_SPEC_ORDER", "default_job_spec"]

JOB_SPEC_ORDER = (
    "parallelism completions activeDeadlineSeconds podFailurePolicy backoffLimit "
    "backoffLimitPerIndex maxFailedIndexes selector manualSelector template "
    "ttlSecondsAfterFinished completionMode suspend podReplacementPolicy"
).split()


def default_job_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_Job``'s spec defaults and the template's, in Go struct order."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    default_template(spec)
    order_keys(spec, JOB_SPEC_ORDER)

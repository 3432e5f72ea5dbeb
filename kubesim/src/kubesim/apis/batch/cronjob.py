"""CronJobs (``SetDefaults_CronJob``): ``concurrencyPolicy`` Allow, ``suspend`` false,
``successfulJobsHistoryLimit`` 3, ``failedJobsHistoryLimit`` 1, the Job template's spec
defaulted as a Job's (without a selector); status ``{}`` on create; the server keeps
``metadata.generation``."""

from __future__ import annotations

from typing import Any

from kubesim.apis.batch.jobspec import default_job_spec
from kubesim.machinery.documents import order_keys, sub
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["CronJobStrategy"]

_CRONJOB_SPEC_ORDER = (
    "schedule timeZone startingDeadlineSeconds concurrencyPolicy suspend jobTemplate "
    "successfulJobsHistoryLimit failedJobsHistoryLimit"
).split()


def _default_cronjob(obj: dict[str, Any], creating: bool) -> None:
    spec = sub(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = sub(spec, "jobTemplate")
    meta = sub(job_template, "metadata")
    meta.setdefault("creationTimestamp", None)
    default_job_spec(sub(job_template, "spec"))
    order_keys(job_template, ("metadata", "spec"))
    order_keys(spec, _CRONJOB_SPEC_ORDER)
    if creating:
        obj["status"] = {}


class CronJobStrategy(Strategy):
    """CronJobs (see the module docstring)."""

    uses_generation = True

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        _default_cronjob(obj, creating)
        super().default(rt, obj, creating=creating)

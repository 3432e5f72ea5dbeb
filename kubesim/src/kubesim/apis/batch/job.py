"""Jobs: defaults (``SetDefaults_Job`` and the job strategy) and the selector the registry
generates.

* ``parallelism`` and ``completions`` 1 when neither is set, ``backoffLimit`` 6,
  ``completionMode`` NonIndexed, ``suspend`` false, the template's pod spec defaults;
  status ``{}`` on create;
* once the uid is known, unless ``manualSelector``: the selector
  ``batch.kubernetes.io/controller-uid`` = the Job's uid and the template labels
  ``batch.kubernetes.io/controller-uid``, ``batch.kubernetes.io/job-name``,
  ``controller-uid`` and ``job-name`` (:func:`generate_job_selector`);
* the server keeps ``metadata.generation``; the ``status.successful`` field selector, with
  the Job's own message for any other label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesim.apis.batch.jobspec import JOB_SPEC_ORDER, default_job_spec
from kubesim.apis.core.podspec import ZERO_TEMPLATE
from kubesim.encoding.gofmt import go_quote
from kubesim.machinery.documents import order_keys, sub
from kubesim.machinery.fields import int_field
from kubesim.machinery.validation import Cause
from kubesim.registry.resource import ResourceType, Strategy

__all__ = ["JobStrategy", "generate_job_selector"]


def generate_job_selector(obj: dict[str, Any]) -> None:
    """The job strategy's selector for a new Job (its ``metadata.uid`` is set): unless
    ``spec.manualSelector``, ``matchLabels`` ``batch.kubernetes.io/controller-uid`` and the
    four controller-uid/job-name labels on the pod template, as v1.28 writes them."""
    spec = sub(obj, "spec")
    if spec.get("manualSelector"):
        return
    meta = obj.get("metadata") or {}
    uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
    labels = sub(sub(sub(spec, "template"), "metadata"), "labels")
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
    order_keys(spec, JOB_SPEC_ORDER)


class JobStrategy(Strategy):
    """Jobs (see the module docstring)."""

    uses_generation = True
    zero_spec: Mapping[str, Any] = {"template": ZERO_TEMPLATE}

    def default(self, rt: ResourceType, obj: dict[str, Any], *, creating: bool) -> None:
        default_job_spec(sub(obj, "spec"))
        if creating:
            obj["status"] = {}
        super().default(rt, obj, creating=creating)

    def prepare_for_create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        stored: Callable[[], Iterable[Mapping[str, Any]]],
    ) -> list[Cause]:
        generate_job_selector(obj)
        return []

    def fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        return {"status.successful": int_field(obj, "status", "succeeded")}

    def unsupported_field_label(self, label: str) -> str:
        return f"field label {go_quote(label)} not supported for batchv1.Job"

"""Pod update validation: what ``ValidatePodUpdate`` allows to change in a pod's spec.

A pod's spec is immutable but for its containers' images, ``activeDeadlineSeconds`` (only
shorter), added tolerations and a negative ``terminationGracePeriodSeconds`` set to 1;
anything else is refused with upstream's exact message, the go-cmp diff of what changed
included (:mod:`kubesim.apis.core.pod.specdiff`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubesim.apis.core.pod.specdiff import pod_spec_diff, pod_specs_equal
from kubesim.apis.core.podspec import default_pod_spec, qos_class
from kubesim.machinery.validation import Cause, forbidden, invalid, required

__all__ = ["UPDATABLE_POD_FIELDS", "validate_pod_update"]


def _d(v: object) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


UPDATABLE_POD_FIELDS = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _tol_key(t: object) -> tuple[tuple[str, Any], ...]:
    return tuple(
        sorted((k, v) for k, v in _d(t).items() if v not in (None, "") and k != "tolerationSeconds")
    )


def validate_pod_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePodUpdate``'s spec rules for replacing ``old`` by ``new``: containers
    neither added nor removed, images, ``activeDeadlineSeconds``, tolerations only added,
    QoS immutable, and the catch-all with upstream's go-cmp diff of what else changed."""
    if old.get("spec") == new.get("spec"):  # the common metadata-only update: nothing to check
        return []
    ospec, nspec = _d(old.get("spec")), copy.deepcopy(_d(new.get("spec")))
    default_pod_spec(nspec, pod=True)
    errs: list[Cause] = []
    for key in ("containers", "initContainers"):
        if len(_l(ospec.get(key))) != len(_l(nspec.get(key))):
            return [*errs, forbidden(f"spec.{key}", "pod updates may not add or remove containers")]
        for i, c in enumerate(map(_d, _l(nspec.get(key)))):
            image = str(c.get("image") or "")
            if not image:
                errs.append(required(f"spec.{key}[{i}].image"))
            elif image.strip() != image:
                errs.append(
                    invalid(
                        f"spec.{key}[{i}].image",
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    nads, oads = nspec.get("activeDeadlineSeconds"), ospec.get("activeDeadlineSeconds")
    if isinstance(nads, int) and nads <= 0:
        return [
            *errs,
            invalid(
                "spec.activeDeadlineSeconds", nads, f"must be between 1 and {2**31 - 1}, inclusive"
            ),
        ]
    if isinstance(nads, int) and isinstance(oads, int) and oads < nads:
        return [
            *errs,
            invalid(
                "spec.activeDeadlineSeconds", nads, "must be less than or equal to previous value"
            ),
        ]
    if nads is None and isinstance(oads, int):
        errs.append(
            invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    new_tols = {_tol_key(t) for t in _l(nspec.get("tolerations"))}
    if any(_tol_key(t) not in new_tols for t in _l(ospec.get("tolerations"))):
        errs.append(
            forbidden(
                "spec.tolerations",
                "existing toleration can not be modified except its tolerationSeconds",
            )
        )
    if pod_specs_equal(ospec, nspec):
        return errs
    if (_d(old.get("status")).get("qosClass") or qos_class(ospec)) != qos_class(nspec):
        errs.append(
            invalid("metadata", _d(new.get("status")).get("qosClass") or "", "Pod QoS is immutable")
        )
    munged = copy.deepcopy(nspec)  # the fields that may change are copied back from old
    for key in ("containers", "initContainers"):
        for oc, nc in zip(_l(ospec.get(key)), map(_d, _l(munged.get(key))), strict=True):
            nc["image"] = _d(oc).get("image")
    for key in ("activeDeadlineSeconds", "tolerations"):
        munged.pop(key, None)
        if key in ospec:
            munged[key] = ospec[key]
    otg = ospec.get("terminationGracePeriodSeconds")
    if isinstance(otg, int) and otg < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = otg
    if not pod_specs_equal(ospec, munged):
        detail = f"pod updates may not change fields other than {UPDATABLE_POD_FIELDS}\n"
        errs.append(forbidden("spec", detail + pod_spec_diff(ospec, munged)))
    return errs

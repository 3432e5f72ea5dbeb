"""PATCH as the apiserver's patch handler applies one: its content types and the patch of
each type applied to an object (or to a subresource's object, such as a Scale).

A content type other than the three (or a strategic merge patch of a custom resource) is the
recorded 415; a patch that cannot apply answers the Status of its
:class:`~kubesim.errors.PatchError`.
"""

from __future__ import annotations

from typing import Any

from kubesim.errors import KubeSimApiError, PatchError
from kubesim.fieldmanager.jsonpatch import json_merge_patch, json_patch
from kubesim.fieldmanager.strategic import strategic_merge_patch

__all__ = ["JSON_PATCH", "MERGE_PATCH", "STRATEGIC_PATCH", "apply_patch", "patch_type"]

MERGE_PATCH = "application/merge-patch+json"
"""The Content-Type of a JSON merge patch (RFC 7386)."""
JSON_PATCH = "application/json-patch+json"
"""The Content-Type of a JSON patch (RFC 6902)."""
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
"""The Content-Type of a strategic merge patch (built-in kinds only): what
``Api.patch(rt, ns, name, STRATEGIC_PATCH, patch)`` and a PATCH request take."""


def patch_type(content_type: str, custom: bool) -> str:
    """The patch type a ``Content-Type`` names (parameters and case ignored), or the 415 for
    one that does not patch this kind (``custom``: a custom resource's)."""
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH) or (
        ctype == STRATEGIC_PATCH and custom
    ):
        raise KubeSimApiError.unsupported_patch(custom)
    return ctype


def apply_patch(patch_type: str, target: Any, patch: Any, kind: str) -> Any:
    """``patch`` of ``patch_type`` applied to ``target``, an object of ``kind`` (the strategic
    merge table's key); ``target`` is not changed."""
    try:
        if patch_type == MERGE_PATCH:
            if not isinstance(patch, dict):
                raise PatchError("json: cannot unmarshal array into Go value", 400)
            return json_merge_patch(target, patch)
        if patch_type == JSON_PATCH:
            return json_patch(target, patch)
        return strategic_merge_patch(target, patch, kind)
    except PatchError as exc:
        raise KubeSimApiError(exc.code, exc.status()) from None

"""The 400 of a request body the decoders cannot read at all, as kube-apiserver words it."""

from __future__ import annotations

from kubesim.errors import KubeSimApiError

__all__ = ["summarize", "unrecognized"]


def summarize(raw: bytes, limit: int = 30) -> str:
    """``summarizeData``: the first bytes as text for JSON, as hex otherwise."""
    if not raw:
        return "<empty>"
    if raw[:1] == b"{":
        text = raw[:limit].decode("utf-8", "replace")
        return text + " ..." if len(raw) > limit else text
    return raw[:limit].hex() + (" ..." if len(raw) > limit else "")


def unrecognized(kind: str, detail: str, raw: bytes) -> KubeSimApiError:
    """The 400 of a body that does not decode at all."""
    msg = f"the object provided is unrecognized (must be of type {kind}): {detail}"
    return KubeSimApiError.bad_request(f"{msg} ({summarize(raw)})")

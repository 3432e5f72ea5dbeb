"""Kubernetes ``Status`` error bodies, as the real apiserver writes them.

Every error KubeSim answers is an :class:`ApiError` carrying the HTTP code, the ``Status``
body and any extra headers. The constructors below reproduce the bodies recorded from a
kube-apiserver v1.28 in ``tests/kubesim/conformance`` (message texts, ``reason``, ``details``
shape, key order), so clients see exactly what they would see from a real cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ApiError", "status_body", "success_status"]


def status_body(
    code: int,
    message: str,
    reason: str | None = None,
    details: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build a ``Status`` with ``status: Failure`` in the apiserver's key order."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": dict(metadata or {}),
        "status": "Failure",
        "message": message,
    }
    if reason is not None:
        body["reason"] = reason
    if details is not None:
        body["details"] = dict(details)
    body["code"] = code
    return body


def success_status(details: Mapping[str, Any]) -> dict[str, Any]:
    """The ``Status{status: Success}`` a DELETE of most kinds answers with."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": dict(details),
    }


def _details(name: str | None, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name is not None:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


class ApiError(Exception):
    """KubeSim's error answer: HTTP ``code``, a ``Status`` ``body`` and extra ``headers``.

    Raised anywhere below KubeSim's HTTP layer, and by its in-process API
    (:meth:`KubeSim.create <aioinformer.testing.KubeSim.create>`, ``get``, ``patch``,
    ``delete``): ``except aioinformer.testing.ApiError as e: e.code, e.reason``. Over HTTP
    the server turns it into the response, which a client sees as the Status; through
    :class:`aioinformer.Client` or an informer that is an :class:`aioinformer.ApiError`
    (a subclass per code), the library's error for a failed request. This one is the
    server side of the same answer: it is not an ``aioinformer.AioinformerError``.

    The constructors (class methods) are named after the ``reason`` they produce and write
    the bodies a kube-apiserver v1.28 writes.

    Args:
        code: the HTTP status.
        body: the ``Status`` object to answer with.
        headers: extra response headers (e.g. ``Retry-After``).
    """

    def __init__(
        self, code: int, body: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(body.get("message", ""))
        self.code = code
        self.body = body
        self.headers = dict(headers or {})

    @property
    def reason(self) -> str:
        """The Status ``reason`` ("" when the body has none)."""
        return str(self.body.get("reason", ""))

    @classmethod
    def not_found(cls, plural: str, group: str, name: str) -> ApiError:
        """404 NotFound: ``plural.group "name" not found``."""
        msg = f'{_qualified(plural, group)} "{name}" not found'
        return cls(404, status_body(404, msg, "NotFound", _details(name, group, plural)))

    @classmethod
    def already_exists(cls, plural: str, group: str, name: str) -> ApiError:
        """409 AlreadyExists: a create of a name that is taken."""
        msg = f'{_qualified(plural, group)} "{name}" already exists'
        return cls(409, status_body(409, msg, "AlreadyExists", _details(name, group, plural)))

    @classmethod
    def conflict(cls, plural: str, group: str, name: str) -> ApiError:
        """409 Conflict: a write with a stale resourceVersion."""
        msg = (
            f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": the object '
            "has been modified; please apply your changes to the latest version and try again"
        )
        return cls(409, status_body(409, msg, "Conflict", _details(name, group, plural)))

    @classmethod
    def precondition_failed(
        cls, kind: str, group: str, name: str, what: str, expected: str, actual: str
    ) -> ApiError:
        """A DELETE precondition (``what`` is "UID" or "ResourceVersion") that does not hold."""
        tail = (
            "The object might have been deleted and then recreated"
            if what == "UID"
            else "The object might have been modified"
        )
        msg = (
            f'Operation cannot be fulfilled on {_qualified(kind, group)} "{name}": the {what} '
            "in the precondition "
            f"({expected}) does not match the {what} in record ({actual}). {tail}"
        )
        return cls(409, status_body(409, msg, "Conflict", _details(name, group, kind)))

    @classmethod
    def invalid(
        cls, kind: str, group: str, name: str, message: str, causes: Sequence[Mapping[str, str]]
    ) -> ApiError:
        """422 Invalid, with ``details.causes`` (reason, message, field)."""
        details = _details(name, group, kind)
        details["causes"] = [dict(c) for c in causes]
        return cls(422, status_body(422, message, "Invalid", details))

    @classmethod
    def invalid_list_options(cls, field: str, message: str) -> ApiError:
        """422 for bad ListOptions (resourceVersionMatch, sendInitialEvents, ...)."""
        full = f'ListOptions.meta.k8s.io "" is invalid: {field}: {message}'
        details = {
            "group": "meta.k8s.io",
            "kind": "ListOptions",
            "causes": [{"reason": "FieldValueForbidden", "message": message, "field": field}],
        }
        return cls(422, status_body(422, full, "Invalid", details))

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        """400 BadRequest with ``message``."""
        return cls(400, status_body(400, message, "BadRequest"))

    @classmethod
    def unauthorized(cls) -> ApiError:
        """401 Unauthorized: a wrong bearer token."""
        return cls(401, status_body(401, "Unauthorized", "Unauthorized"))

    @classmethod
    def forbidden(
        cls,
        user: str,
        verb: str,
        plural: str,
        group: str,
        namespace: str | None,
        *,
        name: str | None = None,
        subresource: str | None = None,
    ) -> ApiError:
        """RBAC's 403: ``pods "x" is forbidden: User "u" cannot patch resource
        "pods/status" in API group "" in the namespace "ns"`` (no name for a list)."""
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        resource = f"{plural}/{subresource}" if subresource else plural
        subject = _qualified(plural, group) + (f' "{name}"' if name else "")
        msg = (
            f'{subject} is forbidden: User "{user}" cannot {verb} resource '
            f'"{resource}" in API group "{group}"{where}'
        )
        details = _details(name or None, group, plural)
        return cls(
            403,
            status_body(403, msg, "Forbidden", details),
            {"X-Content-Type-Options": "nosniff"},
        )

    @classmethod
    def unsupported_patch(cls, custom: bool) -> ApiError:
        """415 UnsupportedMediaType for a patch content type the resource does not take
        (``custom``: a custom resource, which takes no strategic merge patch)."""
        if custom:
            msg = (
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml"
            )
            return cls(415, status_body(415, msg, "UnsupportedMediaType"))
        return cls(415, status_body(415, "415: Unsupported Media Type", "UnsupportedMediaType", {}))

    @classmethod
    def not_acceptable(cls, accepted: str) -> ApiError:
        """406 NotAcceptable: the ``Accept`` header asks for nothing served."""
        msg = f"only the following media types are accepted: {accepted}"
        return cls(406, status_body(406, msg, "NotAcceptable"))

    @classmethod
    def method_not_allowed(cls) -> ApiError:
        """405 MethodNotAllowed: a verb the resource does not support."""
        msg = "the server does not allow this method on the requested resource"
        return cls(405, status_body(405, msg, "MethodNotAllowed", {}))

    @classmethod
    def page_not_found(cls) -> ApiError:
        """404 for a path no resource is served at (the apiserver's plain-text 404, as JSON)."""
        return cls(
            404,
            status_body(404, "the server could not find the requested resource", "NotFound", {}),
        )

    @classmethod
    def expired(cls, message: str, continue_token: str | None = None) -> ApiError:
        """410 Expired: a resourceVersion or continue token too old."""
        meta = {"continue": continue_token} if continue_token is not None else None
        return cls(410, status_body(410, message, "Expired", metadata=meta))

    @classmethod
    def too_large_rv(cls, requested: int, current: int) -> ApiError:
        """504 Timeout, cause ResourceVersionTooLarge, ``Retry-After: 1``: a list at a
        resourceVersion the server has not reached."""
        msg = f"Timeout: Too large resource version: {requested}, current: {current}"
        details = {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        }
        return cls(504, status_body(504, msg, "Timeout", details), {"Retry-After": "1"})

    @classmethod
    def internal(cls, message: str) -> ApiError:
        """500 with ``message`` and no reason."""
        return cls(500, status_body(500, message))

    @classmethod
    def too_many_requests(cls, retry_after: int) -> ApiError:
        """429 TooManyRequests with ``Retry-After``."""
        msg = "Too many requests, please try again later."
        details = {"causes": [{"reason": "", "message": ""}], "retryAfterSeconds": retry_after}
        return cls(
            429,
            status_body(429, msg, "TooManyRequests", details),
            {"Retry-After": str(retry_after)},
        )

    @classmethod
    def timeout(
        cls, message: str = "Timeout: request did not complete within the allotted timeout"
    ) -> ApiError:
        """504 Timeout: the request did not complete in time."""
        return cls(504, status_body(504, message, "Timeout", {}), {})

"""KubeSim's errors: one root, and the ``Status`` bodies its answers carry.

Every exception KubeSim raises on purpose is a :class:`KubeSimError`::

    KubeSimError
    ├── KubeSimApiError        the answer to a request: HTTP code, Status body, headers
    ├── RvTooLarge             a list at a resourceVersion the store has not reached yet
    ├── PatchError             a patch that cannot be decoded or applied (also ValueError)
    ├── SelectorError          a label or field selector that does not parse (also ValueError)
    ├── GoDecodeError          a value Go's JSON decoder refuses
    ├── DeepJsonError          text that is not one JSON value (also ValueError)
    ├── GoTimeError            a time Go's time.Parse refuses (also ValueError)
    ├── WireError              bytes that are not a protobuf message (also ValueError)
    ├── ProtobufUnsupported    a protobuf body KubeSim cannot decode faithfully
    └── TlsUnavailable         https asked for without ``cryptography`` (also RuntimeError)

:class:`KubeSimApiError` is what a caller of the in-process API (``sim.create``,
``sim.get``, ...) catches, and what the HTTP layer turns into the response; every other
error is translated into one at the layer that knows which answer the real server gives
(a :class:`PatchError` is the patch's 400/422/500, a :class:`SelectorError` a 400, ...).
The errors that are also a ``ValueError`` or ``RuntimeError`` stay catchable as those.

The constructors of :class:`KubeSimApiError` (class methods named after the ``reason``
they produce) and :func:`status_body` reproduce the bodies recorded from a kube-apiserver
v1.28 in ``tests/kubesim/conformance`` (message texts, ``reason``, ``details`` shape, key
order), so clients see exactly what they would see from a real cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DeepJsonError",
    "GoDecodeError",
    "GoTimeError",
    "KubeSimApiError",
    "KubeSimError",
    "PatchError",
    "ProtobufUnsupported",
    "RvTooLarge",
    "SelectorError",
    "TlsUnavailable",
    "WireError",
    "status_body",
    "success_status",
]


class KubeSimError(Exception):
    """The root of every error KubeSim raises on purpose (see the module docstring)."""


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


class KubeSimApiError(KubeSimError):
    """KubeSim's error answer: HTTP ``code``, a ``Status`` ``body`` and extra ``headers``.

    Raised anywhere below KubeSim's HTTP layer, and by its in-process API
    (:meth:`KubeSim.create <kubesim.KubeSim.create>`, ``get``, ``patch``, ``delete``):
    ``except kubesim.KubeSimApiError as e: e.code, e.reason``. Over HTTP the server turns
    it into the response, which a client sees as the Status (a client library raises its
    own error for it, e.g. aioinformer's ``ApiError``): this is the server side of the
    same answer.

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
    def not_found(cls, plural: str, group: str, name: str) -> KubeSimApiError:
        """404 NotFound: ``plural.group "name" not found``."""
        msg = f'{_qualified(plural, group)} "{name}" not found'
        return cls(404, status_body(404, msg, "NotFound", _details(name, group, plural)))

    @classmethod
    def already_exists(cls, plural: str, group: str, name: str) -> KubeSimApiError:
        """409 AlreadyExists: a create of a name that is taken."""
        msg = f'{_qualified(plural, group)} "{name}" already exists'
        return cls(409, status_body(409, msg, "AlreadyExists", _details(name, group, plural)))

    @classmethod
    def conflict(cls, plural: str, group: str, name: str) -> KubeSimApiError:
        """409 Conflict: a write with a stale resourceVersion."""
        msg = (
            f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": the object '
            "has been modified; please apply your changes to the latest version and try again"
        )
        return cls(409, status_body(409, msg, "Conflict", _details(name, group, plural)))

    @classmethod
    def uid_precondition_failed(
        cls, plural: str, group: str, name: str, key: str, expected: str, actual: str
    ) -> KubeSimApiError:
        """409 Conflict: an update whose object names a uid (``expected``) that is not the
        stored object's (``actual``, "" when there is none), as etcd3's storage words it
        for the object at etcd key ``key``."""
        msg = (
            f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": '
            f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
            f"AdditionalErrorMsg: Precondition failed: UID in precondition: {expected}, "
            f"UID in object meta: {actual}"
        )
        return cls(409, status_body(409, msg, "Conflict", _details(name, group, plural)))

    @classmethod
    def precondition_failed(
        cls, kind: str, group: str, name: str, what: str, expected: str, actual: str
    ) -> KubeSimApiError:
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
    ) -> KubeSimApiError:
        """422 Invalid, with ``details.causes`` (reason, message, field)."""
        details = _details(name, group, kind)
        details["causes"] = [dict(c) for c in causes]
        return cls(422, status_body(422, message, "Invalid", details))

    @classmethod
    def invalid_list_options(cls, field: str, message: str) -> KubeSimApiError:
        """422 for bad ListOptions (resourceVersionMatch, sendInitialEvents, ...)."""
        full = f'ListOptions.meta.k8s.io "" is invalid: {field}: {message}'
        details = {
            "group": "meta.k8s.io",
            "kind": "ListOptions",
            "causes": [{"reason": "FieldValueForbidden", "message": message, "field": field}],
        }
        return cls(422, status_body(422, full, "Invalid", details))

    @classmethod
    def bad_request(cls, message: str) -> KubeSimApiError:
        """400 BadRequest with ``message``."""
        return cls(400, status_body(400, message, "BadRequest"))

    @classmethod
    def unauthorized(cls) -> KubeSimApiError:
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
    ) -> KubeSimApiError:
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
    def unsupported_patch(cls, custom: bool) -> KubeSimApiError:
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
    def not_acceptable(cls, accepted: str) -> KubeSimApiError:
        """406 NotAcceptable: the ``Accept`` header asks for nothing served."""
        msg = f"only the following media types are accepted: {accepted}"
        return cls(406, status_body(406, msg, "NotAcceptable"))

    @classmethod
    def method_not_allowed(cls) -> KubeSimApiError:
        """405 MethodNotAllowed: a verb the resource does not support."""
        msg = "the server does not allow this method on the requested resource"
        return cls(405, status_body(405, msg, "MethodNotAllowed", {}))

    @classmethod
    def page_not_found(cls) -> KubeSimApiError:
        """404 for a path no resource is served at (the apiserver's plain-text 404, as JSON)."""
        return cls(
            404,
            status_body(404, "the server could not find the requested resource", "NotFound", {}),
        )

    @classmethod
    def expired(cls, message: str, continue_token: str | None = None) -> KubeSimApiError:
        """410 Expired: a resourceVersion or continue token too old."""
        meta = {"continue": continue_token} if continue_token is not None else None
        return cls(410, status_body(410, message, "Expired", metadata=meta))

    @classmethod
    def too_large_rv(cls, requested: int, current: int) -> KubeSimApiError:
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
    def internal(cls, message: str) -> KubeSimApiError:
        """500 with ``message`` and no reason."""
        return cls(500, status_body(500, message))

    @classmethod
    def too_many_requests(cls, retry_after: int) -> KubeSimApiError:
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
    ) -> KubeSimApiError:
        """504 Timeout: the request did not complete in time."""
        return cls(504, status_body(504, message, "Timeout", {}), {})


_REJECTED = "the server rejected our request due to an error in our request"


class RvTooLarge(KubeSimError):
    """A list asked for a resourceVersion the store has not reached yet."""

    def __init__(self, requested: int) -> None:
        super().__init__(requested)
        self.requested = requested


class PatchError(KubeSimError, ValueError):
    """A patch that cannot be decoded or applied.

    ``str(err)`` (also ``err.detail``) says what is wrong. ``err.code`` is the HTTP status
    kube-apiserver answers with (400 for undecodable patches and bad directive formats,
    422 for JSON patch operations that do not apply, 500 for the strategic-merge errors
    it does not classify) and :meth:`status` is its whole Status body; note that for 422
    the real server replaces the detail by a generic message.
    """

    def __init__(self, detail: str, code: int = 422) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code

    @property
    def reason(self) -> str:
        """The Status ``reason`` (empty for 500: the apiserver sends none)."""
        return {400: "BadRequest", 422: "Invalid"}.get(self.code, "")

    @property
    def status_message(self) -> str:
        """The Status ``message`` the apiserver sends."""
        return _REJECTED if self.code == 422 else self.detail

    def status(self) -> dict[str, Any]:
        """The full ``Status`` body, keys in the apiserver's order."""
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}}
        body.update(status="Failure", message=self.status_message)
        if self.reason:
            body["reason"] = self.reason
        if self.code == 422:
            body["details"] = {}
        body["code"] = self.code
        return body


class SelectorError(KubeSimError, ValueError):
    """Selector parse/validation failure; ``str(err)`` is the apiserver's Status message."""


class GoDecodeError(KubeSimError):
    """A value the Go decoder refuses; ``str()`` is its message."""


class DeepJsonError(KubeSimError, ValueError):
    """Invalid JSON for :func:`kubesim.encoding.deepjson.parse`: ``pos`` is the offending
    character's offset, ``expected`` what the parser was looking for there ("value", "key",
    "colon", "next" or "end") and ``container`` the innermost open one ("object", "array" or "")."""

    def __init__(self, pos: int, expected: str = "value", container: str = "") -> None:
        super().__init__(f"invalid JSON at {pos}")
        self.pos = pos
        self.expected = expected
        self.container = container


class GoTimeError(KubeSimError, ValueError):
    """A ``time.ParseError``; ``str()`` is Go's message."""


class WireError(KubeSimError, ValueError):
    """Bytes that are not a well-formed protobuf message (the message says where)."""


class ProtobufUnsupported(KubeSimError):
    """A protobuf body KubeSim cannot decode faithfully (the message says what)."""


class TlsUnavailable(KubeSimError, RuntimeError):
    """https was asked for but ``cryptography`` is not installed."""

"""The exception tree of aioinformer. Every error the library raises derives from
:class:`AioinformerError`, so ``except aioinformer.AioinformerError`` catches them all::

    AioinformerError
    ├── ConfigError            a bad option or argument, found before anything runs
    ├── ClosedError            the thing was closed (by you): an informer, a queue, a FIFO
    ├── WouldBlock             a *_nowait call that would have to wait
    ├── FreshnessTimeout       a freshness wait (wait_for_rv, wait_until, ...) timed out
    ├── DecodeError            bytes from the server that are not a valid object or event
    ├── NotOwner               this replica no longer holds the key (leadership or shard lost):
    │                          the write was not sent
    └── ApiError               a request to the API server failed; names verb, resource, namespace
        ├── StatusError        the server answered with an error Status (code, reason, causes)
        │   ├── BadRequest        400
        │   ├── Unauthorized      401  the credentials were rejected
        │   ├── Forbidden         403  an RBAC rule is missing (or the namespace is terminating)
        │   ├── NotFound          404
        │   ├── Conflict          409  a stale resourceVersion, a precondition, an apply conflict
        │   ├── AlreadyExists     409  a create of a name that exists
        │   ├── Expired           410  a resourceVersion or continue token too old: relist
        │   ├── Invalid           422  the object failed validation (``causes`` say where)
        │   ├── TooManyRequests   429  throttled (``retry_after``)
        │   ├── ServerTimeout     504  (or reason Timeout, e.g. a resourceVersion too large)
        │   └── ServerError       any other 5xx
        └── TransportError     no usable answer: connection failed, reset, cut or silent stream

ConfigError and DecodeError are also ``ValueError`` s, FreshnessTimeout a ``TimeoutError``.
API errors are made in one place, the client layer (``aioinformer._client.rest``), which maps
an HTTP status and its ``Status`` body to the most specific class (by the Status' ``reason``
first, then by the code), so a reconcile can write ``except aioinformer.Conflict:``. The
watcher retries every :class:`ApiError` with backoff (an :class:`Expired` by relisting); a
write client surfaces them to its caller. No message ever includes a token, a client key, a
password or an Authorization header, whatever the server echoed (see ``_core.redact``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "AioinformerError",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Cause",
    "ClosedError",
    "ConfigError",
    "Conflict",
    "DecodeError",
    "Expired",
    "Forbidden",
    "FreshnessTimeout",
    "Invalid",
    "NotFound",
    "NotOwner",
    "ServerError",
    "ServerTimeout",
    "StatusError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "WouldBlock",
    "in_namespace",
    "status_error_class",
]


def in_namespace(namespace: str | None) -> str:
    """``in namespace "ns"`` or ``in all namespaces``: how every error names its scope."""
    return f'in namespace "{namespace}"' if namespace else "in all namespaces"


class AioinformerError(Exception):
    """Root of every error aioinformer raises."""


class ConfigError(AioinformerError, ValueError):
    """An invalid option or argument (also a ``ValueError``)."""


class ClosedError(AioinformerError):
    """The object was closed by its owner; no more items will come."""


class WouldBlock(AioinformerError):
    """A ``*_nowait`` call found nothing to take."""


class FreshnessTimeout(AioinformerError, TimeoutError):
    """A wait for freshness did not complete in time (also a ``TimeoutError``)."""


class DecodeError(AioinformerError, ValueError):
    """Bytes from the server that are not a valid object or watch event."""


class NotOwner(AioinformerError):
    """This replica no longer holds ``key`` (its leader or shard Lease is lost or being
    released): the toolkit refused to send a write on its behalf.

    Args:
        message: what was refused and why.
        key: the primary key (``namespace/name``) the write was made for.
    """

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class ApiError(AioinformerError):
    """A request to the API server failed.

    The client layer raises it (as one of its subclasses) for every request the library
    sends: informers' lists and watches, and writes through :class:`~aioinformer.Client`.
    Not to be confused with :class:`aioinformer.testing.KubeSimApiError`, the error
    KubeSim's in-process API raises (a Status to answer with, not a failed request).

    Args:
        message: the whole message, naming the request (secrets removed).
        verb: "list", "watch", "get", "create", "update", "patch", "delete", ...
        resource: "pods", or "podsets.example.aioinformer.dev" for a group's resource.
        namespace: the request's namespace; None for all namespaces or a cluster-scoped
            resource.
    """

    def __init__(self, message: str, *, verb: str, resource: str, namespace: str | None) -> None:
        super().__init__(message)
        self.verb = verb
        self.resource = resource
        self.namespace = namespace


@dataclass(frozen=True, slots=True)
class Cause:
    """One entry of a Status' ``details.causes``: what was wrong, where, and the server's
    message."""

    reason: str
    """What was wrong, e.g. "FieldValueInvalid" or "FieldManagerConflict"."""
    message: str
    """The server's message for this cause."""
    field: str
    """Where, e.g. "spec.replicas" ("" when the server names no field)."""


class StatusError(ApiError):
    """The API server answered with an error ``Status``.

    The attributes keep the arguments (``message`` as ``server_message``; ``str(error)``
    is the whole message, with a hint for 401, 403 and a 404 on a list or watch). Raised
    as the most specific subclass for the code and reason (see the tree above).

    Args:
        code: the HTTP status, or a watch ERROR event's code.
        reason: the Status reason ("Conflict", "NotFound", ...).
        message: the server's message (secrets removed).
        verb: the request's verb, as for :class:`ApiError`.
        resource: the request's resource, as for :class:`ApiError`.
        namespace: the request's namespace, as for :class:`ApiError`.
        name: the object's name when the request named one (or ``details.name``).
        causes: the Status' ``details.causes``.
        retry_after: the server's Retry-After in seconds, or None.
        source: how it came: "HTTP" (a response status) or "ERROR event" (on a watch).
    """

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        verb: str,
        resource: str,
        namespace: str | None,
        name: str | None = None,
        causes: Sequence[Cause] = (),
        retry_after: float | None = None,
        source: str = "HTTP",
    ) -> None:
        what = f"{resource} {name!r}" if name else resource
        text = f"{verb} {what} {in_namespace(namespace)}: {source} {code} {reason}: {message}"
        super().__init__(
            text + _hint(code, verb, resource, namespace),
            verb=verb,
            resource=resource,
            namespace=namespace,
        )
        self.code = code
        self.reason = reason
        self.server_message = message
        self.name = name
        self.causes = tuple(causes)
        self.retry_after = retry_after
        self.source = source


def _hint(code: int, verb: str, resource: str, namespace: str | None) -> str:
    if code == 401:
        return " (the credentials were rejected: check the token or certificate)"
    if code == 403:
        hint = f' (missing RBAC permission: "{verb}" on "{resource}" {in_namespace(namespace)}'
        if verb in ("list", "watch"):
            hint += '; an informer needs both "list" and "watch"'
        return hint + ")"
    if code == 404 and verb in ("list", "watch"):
        return " (the resource is not served: is the CRD installed?)"
    return ""


class BadRequest(StatusError):
    """400: the request could not be decoded or had a bad parameter."""


class Unauthorized(StatusError):
    """401: the credentials were rejected."""


class Forbidden(StatusError):
    """403: the user may not do this (a missing RBAC rule), or the namespace is
    terminating (reason "Forbidden", cause NamespaceTerminating)."""


class NotFound(StatusError):
    """404: the object (or the resource, or its namespace) does not exist."""


class Conflict(StatusError):
    """409 Conflict: the object changed since it was read (a stale resourceVersion), a
    delete precondition failed, or a server-side apply conflicts with another manager."""


class AlreadyExists(StatusError):
    """409 AlreadyExists: a create of a name that is taken."""


class Expired(StatusError):
    """410: the resourceVersion (or a list's continue token) is too old; relist."""


class Invalid(StatusError):
    """422: the object failed validation; ``causes`` name each field and what is wrong."""


class TooManyRequests(StatusError):
    """429: the server throttled the request; ``retry_after`` says when to try again."""


class ServerTimeout(StatusError):
    """504, or reason Timeout: the server gave up (e.g. a resourceVersion it has not
    reached yet, reported as ResourceVersionTooLarge)."""


class ServerError(StatusError):
    """Any other 5xx answer."""


class TransportError(ApiError):
    """No usable answer: the connection failed or was reset, the stream was cut in the
    middle of a line or stayed silent too long, or the body was not a Status."""


_BY_CODE: Mapping[int, type[StatusError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Expired,
    422: Invalid,
    429: TooManyRequests,
    504: ServerTimeout,
}


def status_error_class(code: int, reason: str) -> type[StatusError]:
    """The most specific class for an error Status: by ``code``, with 409 split by
    ``reason`` (AlreadyExists or Conflict) and reason Timeout a :class:`ServerTimeout`
    whatever the code; any other 5xx is a :class:`ServerError`."""
    if code == 409 and reason == "AlreadyExists":
        return AlreadyExists
    if reason == "Timeout" and code >= 500:
        return ServerTimeout
    if code in _BY_CODE:
        return _BY_CODE[code]
    return ServerError if code >= 500 else StatusError

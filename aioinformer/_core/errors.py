"""The exception tree of aioinformer. Every error the library raises derives from
:class:`AioinformerError`, so ``except aioinformer.AioinformerError`` catches them all::

    AioinformerError
    ├── ConfigError            a bad option or argument, found before anything runs
    ├── ClosedError            the thing was closed (by you): a FIFO, an informer, a queue
    ├── WouldBlock             a *_nowait call that would have to wait
    ├── FreshnessTimeout       a freshness wait (wait_for_rv, wait_until, ...) timed out
    ├── DecodeError            bytes from the server that are not a valid object or event
    ├── HandlerError           an event handler raised (carries the object key)
    └── WatchError             list/watch failed; retried with backoff by the watcher
        ├── ApiStatusError     the server answered with a Status (code, reason, verb, ...)
        │   └── WatchExpired   410 Expired/Gone: the watcher relists
        └── StreamError        the connection or the stream broke (cut, stalled, reset)

Errors are translated at the boundary (the watcher maps aiohttp and HTTP statuses to the
most specific class) and name the resource, namespace and verb. No message ever includes a
token, a client key or an Authorization header.
"""

from __future__ import annotations

__all__ = [
    "AioinformerError",
    "ApiStatusError",
    "ClosedError",
    "ConfigError",
    "DecodeError",
    "FreshnessTimeout",
    "HandlerError",
    "StreamError",
    "WatchError",
    "WatchExpired",
    "WouldBlock",
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


class HandlerError(AioinformerError):
    """An event handler raised; ``key`` names the object it was handling."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class WatchError(AioinformerError):
    """Listing or watching failed. The watcher retries these with backoff."""


class ApiStatusError(WatchError):
    """The API server answered a list or watch with an error ``Status``.

    ``code`` is the HTTP status, ``reason`` the Status reason, ``verb`` "list" or "watch",
    ``resource`` e.g. "pods" or "podsets.example.aioinformer.dev", ``namespace`` None for
    all namespaces, ``retry_after`` the server's Retry-After in seconds (or None);
    ``source`` says how the Status came ("HTTP" status, or a watch "ERROR event").
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
        retry_after: float | None = None,
        source: str = "HTTP",
    ) -> None:
        where = in_namespace(namespace)
        hint = ""
        if code == 401:
            hint = " (the credentials were rejected: check the token or certificate)"
        elif code == 403:
            hint = f' (missing RBAC permission: "{verb}" on "{resource}" {where}'
            if verb in ("list", "watch"):
                hint += '; an informer needs both "list" and "watch"'
            hint += ")"
        elif code == 404:
            hint = " (the resource is not served: is the CRD installed?)"
        super().__init__(f"{verb} {resource} {where}: {source} {code} {reason}: {message}{hint}")
        self.code = code
        self.reason = reason
        self.verb = verb
        self.resource = resource
        self.namespace = namespace
        self.retry_after = retry_after


class WatchExpired(ApiStatusError):
    """410: the resourceVersion is too old (or a continue token expired): relist."""


class StreamError(WatchError):
    """The response stream broke: connection reset, cut mid-line, or silent too long."""

"""The client layer: one HTTP call to the API server, its errors mapped to the error tree.

:class:`RestClient` rides on a kubernetes_asyncio ``ApiClient`` for everything but the bytes
(the ``Configuration``'s host, bearer token with exec-plugin and token-file refresh, client
certificates, TLS, proxy, and the client's aiohttp session): each call goes through
``ApiClient.call_api(..., _preload_content=False)`` and the response is read here. Every
request the library makes (lists and watches, Leases, the toolkit's writes) goes through it.

Contract:

* :meth:`RestClient.open` returns the aiohttp response of a 2xx answer, unread (the caller
  reads it and closes it); :meth:`RestClient.request` reads the body too (at most
  ``max_body`` bytes) and :meth:`RestClient.request_json` decodes it.
* Any other answer raises the most specific :class:`~aioinformer.StatusError` subclass (by
  the Status' reason and code: :func:`status_error`), with the server's message, causes and
  ``retry_after`` (the ``Retry-After`` header, or ``details.retryAfterSeconds``). A body
  that is not a Status (an HTML page from a proxy) is described briefly. A connection
  failure is a :class:`~aioinformer.TransportError`. Errors name verb, resource, namespace
  (and the object's name when the request has one).
* Secrets never leave: every text put into an error passes through the client's
  :class:`~aioinformer._core.redact.Redactor` (the token, password and client key of the
  configuration, and every credential this client sent: each request's Authorization
  value is remembered before it goes out, so a token rotated while the request was in
  flight is still known when its answer echoes it), whatever the server echoed, whole
  before it is cut. No error carries request headers or aiohttp's exception: errors made
  for a network failure are raised outside its handler, so their ``__context__`` is not
  aiohttp's error (whose ``request_info`` holds the Authorization header, and whose
  connection key holds the proxy's credentials). The redactor is registered for the
  library's log lines and statistics too (:func:`~aioinformer._core.redact.register`,
  :mod:`~aioinformer._core.logs`).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

import aiohttp
import orjson
from aiohttp.abc import AbstractStreamWriter
from multidict import CIMultiDictProxy

from aioinformer._client.envproxy import stop_env_lookups, trusts_env
from aioinformer._core import logs
from aioinformer._core.errors import (
    AioinformerError,
    Cause,
    StatusError,
    TransportError,
    in_namespace,
    status_error_class,
)
from aioinformer._core.redact import Redactor, register

__all__ = [
    "JSON",
    "NETWORK_ERRORS",
    "ApiClientLike",
    "BodyTooLarge",
    "Request",
    "Response",
    "RestClient",
    "describe_network_error",
    "parse_retry_after",
    "status_error",
]


class BodyTooLarge(TransportError):
    """A response body grew past the limit its reader set (reading stopped there)."""


JSON = "application/json"
NETWORK_ERRORS: tuple[type[BaseException], ...] = (aiohttp.ClientError, OSError, TimeoutError)
"""What a failed connection, TLS handshake or read raises below the client layer."""
_MAX_ERROR_BODY = 64 * 1024
_DEFAULT_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30.0, sock_read=60.0)


@dataclass(frozen=True, slots=True)
class Request:
    """What a request is about, for its errors: ``verb`` ("get", "create", "list", ...),
    ``resource`` ("pods", "leases.coordination.k8s.io"), ``namespace`` (None: all or
    cluster-scoped), ``name`` (the object's, when the request names one)."""

    verb: str
    resource: str
    namespace: str | None = None
    name: str | None = None

    def where(self) -> str:
        """``verb resource['name'] in namespace "ns"``: how messages name the request."""
        what = f"{self.resource} {self.name!r}" if self.name else self.resource
        return f"{self.verb} {what} {in_namespace(self.namespace)}"


@dataclass(frozen=True, slots=True)
class Response:
    """A read 2xx answer: ``status``, ``headers`` and ``body`` bytes."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes


class ApiClientLike(Protocol):
    """What the library needs of a kubernetes_asyncio ``ApiClient`` (which is one): its
    ``Configuration`` (host, credentials, TLS, proxy), the headers and cookie it sends, the
    session it sends them through, and ``call_api``."""

    configuration: Any
    """A kubernetes_asyncio ``Configuration`` (host, auth settings, TLS, proxy)."""
    default_headers: dict[str, str]
    """Headers sent with every request."""
    rest_client: Any
    """Its ``RESTClientObject`` (the aiohttp session and proxy settings)."""

    async def call_api(self, resource_path: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Send one request (kubernetes_asyncio's signature)."""
        ...

    async def close(self) -> None:
        """Close its session."""
        ...


class RestClient:
    """HTTP calls to one API server through a kubernetes_asyncio ``ApiClient`` (see the
    module docstring). ``redactor`` defaults to one over the client's configuration."""

    def __init__(self, api_client: ApiClientLike, *, redactor: Redactor | None = None) -> None:
        self.api_client = api_client
        self._owns_api_client = False
        self.redact = register(redactor or Redactor(getattr(api_client, "configuration", None)))
        """Removes this client's secrets from any text (used for every error message, and
        registered for every log line and statistics field of the library)."""
        logs.install()

    def __repr__(self) -> str:
        host = getattr(getattr(self.api_client, "configuration", None), "host", "?")
        return f"<RestClient {host}>"

    def clone(self) -> RestClient:
        """A client of the same server whose connections belong to the running event loop
        (an informer factory's pipeline thread): a new ``ApiClient`` with this one's
        configuration (host, credentials, TLS), default headers and cookie, and this
        client's redactor. Close it with :meth:`aclose`."""
        from kubernetes_asyncio.client import ApiClient

        source = self.api_client
        api = ApiClient(configuration=source.configuration, cookie=getattr(source, "cookie", None))
        api.default_headers.update(getattr(source, "default_headers", {}))
        if not trusts_env(source):  # (as the source: its proxy, if any, is in the configuration)
            stop_env_lookups(api)
        clone = RestClient(api, redactor=self.redact)
        clone._owns_api_client = True
        return clone

    async def aclose(self) -> None:
        """Close the ``ApiClient`` this client made (:meth:`clone`); one it was given
        belongs to the caller and is left open. Idempotent."""
        if self._owns_api_client:
            self._owns_api_client = False
            await self.api_client.close()

    async def open(
        self,
        method: str,
        path: str,
        about: Request,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
        timeout: aiohttp.ClientTimeout = _DEFAULT_TIMEOUT,
        guard: Callable[[], None] | None = None,
    ) -> aiohttp.ClientResponse:
        """Send one request; return the response of a 2xx answer, unread (close it).

        ``body`` is a JSON-ready value (dict or list), sent with ``content_type``
        (default application/json). ``guard`` (with a body) is called right before the
        first byte of the request is written to the connection, with no await in
        between: what it raises stops the request unsent (a replica that lost its Lease
        while the request was waiting to go out sends nothing). Raises a
        :class:`StatusError` for any other answer (the response is closed) and
        :class:`TransportError` for a failed connection.
        """
        headers = {"Accept": accept}
        if content_type is not None:
            headers["Content-Type"] = content_type
        error: BaseException | None = None
        try:
            headers.update(await self._credentials())
            if guard is not None and body is not None:
                resp = await self._send_guarded(method, path, query, body, headers, timeout, guard)
            else:
                resp = await self.api_client.call_api(
                    path,
                    method,
                    query_params=list(query),
                    header_params=headers,
                    body=body,
                    auth_settings=[],  # (sent above: remembered by the redactor first)
                    _preload_content=False,
                    _request_timeout=timeout,
                )
        except aiohttp.ClientConnectionError as exc:
            refused = exc.__cause__
            if isinstance(refused, AioinformerError):  # the guard refused: nothing was sent
                error = refused
            else:
                error = self.transport_error(about, "request failed", exc)
        except NETWORK_ERRORS as exc:
            error = self.transport_error(about, "request failed", exc)
        if error is not None:
            # raised here, not in the handler: the error's __context__ would be the
            # aiohttp exception, whose request_info holds the Authorization header
            raise error
        if 200 <= resp.status < 300:
            return resp
        try:
            raise await self._error(resp, about)
        finally:
            resp.close()

    async def _credentials(self) -> dict[str, str]:
        """The headers that carry the configuration's credentials (its bearer token, read
        now: an exec plugin or a token file may refresh it), remembered by the redactor
        before they are sent, with the Authorization value of the default headers."""
        api = self.api_client
        cfg = api.configuration
        settings = getattr(cfg, "auth_settings", None)
        sent: dict[str, str] = {}
        if settings is not None:
            for auth in (await settings()).values():
                if auth.get("in") == "header" and auth.get("value"):
                    sent[auth["key"]] = auth["value"]
        defaults = getattr(api, "default_headers", None) or {}
        self.redact.remember(
            *sent.values(),
            *(v for k, v in defaults.items() if k.lower().endswith("authorization")),
        )
        return sent

    async def _send_guarded(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        body: Any,
        headers: dict[str, str],
        timeout: aiohttp.ClientTimeout,
        guard: Callable[[], None],
    ) -> aiohttp.ClientResponse:
        """The request as kubernetes_asyncio's ``call_api`` sends it (its configuration's
        host, credentials and TLS, its session), with the body written by a payload that
        calls ``guard`` first."""
        api = self.api_client
        cfg = api.configuration
        sent = {**api.default_headers, **headers}
        cookie = getattr(api, "cookie", None)
        if cookie:
            sent["Cookie"] = cookie
        url = cfg.host + path + (f"?{urlencode(list(query))}" if query else "")
        rest = api.rest_client
        options: dict[str, Any] = {"headers": sent, "timeout": timeout}
        if getattr(rest, "proxy", None):
            options["proxy"] = rest.proxy
            if getattr(rest, "proxy_headers", None):
                options["proxy_headers"] = rest.proxy_headers
        if getattr(rest, "server_hostname", None):
            options["server_hostname"] = rest.server_hostname
        ctype = sent.get("Content-Type", JSON)
        options["data"] = _GuardedBody(orjson.dumps(body), guard, ctype)
        resp: aiohttp.ClientResponse = await rest.pool_manager.request(method, url, **options)
        return resp

    async def request(
        self,
        method: str,
        path: str,
        about: Request,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
        timeout: aiohttp.ClientTimeout = _DEFAULT_TIMEOUT,
        max_body: int | None = None,
        guard: Callable[[], None] | None = None,
    ) -> Response:
        """:meth:`open`, then read the whole body (a :class:`TransportError` if it is cut,
        or longer than ``max_body`` bytes)."""
        resp = await self.open(
            method,
            path,
            about,
            query=query,
            body=body,
            content_type=content_type,
            accept=accept,
            timeout=timeout,
            guard=guard,
        )
        try:
            data = await self.read_body(resp, about, max_body)
        finally:
            resp.close()
        return Response(resp.status, resp.headers, data)

    async def read_body(
        self, resp: aiohttp.ClientResponse, about: Request, max_body: int | None
    ) -> bytes:
        """The whole (decompressed) body of ``resp``; a :class:`TransportError` if reading
        fails or the body grows past ``max_body`` bytes (it stops reading there)."""
        chunks: list[bytes] = []
        size = 0
        error: TransportError | None = None
        try:
            async for chunk in resp.content.iter_any():
                size += len(chunk)
                if max_body is not None and size > max_body:
                    chunks.clear()  # (not kept alive by the error's traceback)
                    raise BodyTooLarge(
                        f"{about.where()}: the response body is longer than {max_body} bytes, "
                        "the limit for this response",
                        verb=about.verb,
                        resource=about.resource,
                        namespace=about.namespace,
                    )
                chunks.append(chunk)
        except NETWORK_ERRORS as exc:
            error = self.transport_error(about, "reading the response failed", exc)
        if error is not None:
            raise error  # (outside the handler: no __context__, see open)
        return b"".join(chunks)

    async def request_json(
        self,
        method: str,
        path: str,
        about: Request,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str | None = None,
        timeout: aiohttp.ClientTimeout = _DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        """:meth:`request` and decode the JSON object it answered (TransportError if the
        body is not a JSON object)."""
        answer = await self.request(
            method, path, about, query=query, body=body, content_type=content_type, timeout=timeout
        )
        try:
            data = orjson.loads(answer.body)
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            raise TransportError(
                f"{about.where()}: the server answered {answer.status} with a body that is not "
                "a JSON object",
                verb=about.verb,
                resource=about.resource,
                namespace=about.namespace,
            )
        return data

    async def _error(self, resp: aiohttp.ClientResponse, about: Request) -> StatusError:
        try:
            raw = await resp.content.read(_MAX_ERROR_BODY)
        except NETWORK_ERRORS:
            raw = b""
        status: Any = None
        try:
            status = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        retry_after = parse_retry_after(resp.headers.get("Retry-After"))
        if isinstance(status, dict) and status.get("kind") == "Status":
            return self.status_error(status, about, code=resp.status, retry_after=retry_after)
        ctype = self.redact(resp.headers.get("Content-Type", "no Content-Type"))[:100]
        # cleaned whole, then cut: a cut must not keep a piece of a secret
        text = " ".join(self.redact(raw.decode("utf-8", "replace")).split())[:200]
        message = f"non-JSON error body ({ctype}): {text!r}" if text else f"empty body ({ctype})"
        return self.status_error(
            {"reason": self.redact(resp.reason or "")[:100], "message": message},
            about,
            code=resp.status,
            retry_after=retry_after,
        )

    def status_error(
        self,
        status: Mapping[str, Any],
        about: Request,
        *,
        code: int | None = None,
        retry_after: float | None = None,
    ) -> StatusError:
        """The error for a ``Status`` (an HTTP error body, or the object of a watch ERROR
        event when ``code`` is None), its texts redacted."""
        return status_error(status, about, code=code, retry_after=retry_after, redact=self.redact)

    def transport_error(self, about: Request, what: str, exc: BaseException) -> TransportError:
        """The :class:`TransportError` for a network failure ``exc`` during ``what``."""
        message = self.redact(f"{about.where()}: {what}: {describe_network_error(exc)}")
        return TransportError(
            message, verb=about.verb, resource=about.resource, namespace=about.namespace
        )


class _GuardedBody(aiohttp.BytesPayload):
    """A request body that calls ``guard`` right before it is written (aiohttp writes the
    buffered headers with the first body bytes, so nothing has been sent before)."""

    def __init__(self, data: bytes, guard: Callable[[], None], content_type: str) -> None:
        super().__init__(data, content_type=content_type)
        self._guard = guard

    async def write(self, writer: AbstractStreamWriter) -> None:
        self._guard()
        await super().write(writer)

    async def write_with_length(
        self, writer: AbstractStreamWriter, content_length: int | None
    ) -> None:
        self._guard()
        await super().write_with_length(writer, content_length)


def status_error(
    status: Mapping[str, Any],
    about: Request,
    *,
    code: int | None = None,
    retry_after: float | None = None,
    redact: Redactor | None = None,
) -> StatusError:
    """The most specific :class:`StatusError` for ``status`` (see
    :func:`~aioinformer._core.errors.status_error_class`). ``code`` None means the Status
    came as a watch ERROR event (its own ``code`` is used, 500 if missing)."""
    source = "HTTP"
    if code is None:
        source = "ERROR event"
        raw_code = status.get("code")
        code = raw_code if isinstance(raw_code, int) else 500
    details = status.get("details")
    details = details if isinstance(details, Mapping) else {}
    if retry_after is None:
        seconds = details.get("retryAfterSeconds")
        retry_after = float(seconds) if isinstance(seconds, int | float) else None
    clean = redact or (lambda text: text)
    raw_causes = details.get("causes")
    raw_causes = raw_causes if isinstance(raw_causes, list) else ()
    reason = clean(str(status.get("reason") or ""))
    causes = tuple(
        Cause(
            clean(str(c.get("reason") or "")),
            clean(str(c.get("message") or "")),
            clean(str(c.get("field") or "")),
        )
        for c in raw_causes
        if isinstance(c, Mapping)
    )
    name = about.name or (clean(str(details["name"]))[:253] if details.get("name") else None)
    cls = status_error_class(code, reason)
    return cls(
        code,
        reason,
        clean(str(status.get("message") or "")),
        verb=about.verb,
        resource=about.resource,
        namespace=about.namespace,
        name=name,
        causes=causes,
        retry_after=retry_after,
        source=source,
    )


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date); None if absent
    or unparsable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def describe_network_error(exc: BaseException) -> str:
    """A short description of a network error (never its request headers)."""
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"{type(exc).__name__}: {exc.status} {exc.message}"
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return "timed out"
    text = str(exc)
    described = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        described += (
            " (TLS verification failed: is the cluster's CA in the kubeconfig, as "
            "certificate-authority or certificate-authority-data?)"
        )
    return described

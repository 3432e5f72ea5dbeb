"""ListWatch: the raw HTTP side of a watcher (one resource, one namespace or all, selectors).

It rides on a kubernetes_asyncio ``ApiClient`` for everything but the bytes: the client's
``Configuration`` (host, bearer token, exec plugins and token refresh, client certificates,
TLS, proxy) and its aiohttp session. It sends the requests through
``ApiClient.call_api(..., _preload_content=False)``, which returns the raw aiohttp response,
and reads the body itself: kubernetes_asyncio's own ``Watch`` turns every event into models
(about 1.3 ms per pod event), which is what this library exists to avoid.

Contract:

* :meth:`ListWatch.list_page` returns one page of a list as decoded objects, the list's
  resourceVersion and the continue token (None on the last page).
* :meth:`ListWatch.watch` yields the raw event lines (without the newline) of one watch
  request, until the server closes the stream cleanly. Lines may be arbitrarily long up to
  ``max_line_bytes`` (16 MiB by default; aiohttp's ``readline`` limit does not apply, the
  stream is split here). A longer line is skipped up to its newline and reported through
  ``on_oversized``; blank lines (keep-alives) are dropped.
* Errors are translated here, at the boundary, and name verb, resource and namespace:
  an HTTP error status is :class:`ApiStatusError` (410 is :class:`WatchExpired`) with the
  server's Status reason and message, or a clear description of a non-JSON (e.g. HTML)
  body, and ``retry_after`` from the ``Retry-After`` header (or the Status'
  ``details.retryAfterSeconds``); a 200 whose Content-Type is not JSON is
  :class:`DecodeError`; a connection failure, a stream cut mid-line or a stream silent for
  longer than ``idle_timeout`` is :class:`StreamError`. No message includes a token or an
  Authorization header.
* Metadata-only mode asks for ``PartialObjectMetadataList`` on lists and
  ``PartialObjectMetadata`` on watches (conformance 16a/16b; the list media type on a
  watch makes the server close the stream at the first event, 16c).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from aioinformer._core.errors import (
    ApiStatusError,
    DecodeError,
    StreamError,
    WatchExpired,
    in_namespace,
)
from aioinformer._core.objects import KubeObject, decode_list

__all__ = ["IdleStreamError", "ListWatch", "parse_retry_after"]

_JSON = "application/json"
_PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
_PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
_MAX_ERROR_BODY = 64 * 1024
# Lists: the server may need a while to produce the first byte of a big etcd list.
_LIST_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30.0, sock_read=120.0)
# Watches: no read timeout here; the idle watchdog (``idle_timeout``) covers silence.
_WATCH_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30.0)
_NETWORK_ERRORS = (aiohttp.ClientError, OSError, asyncio.TimeoutError)


class IdleStreamError(StreamError):
    """The watch stream sent nothing for ``idle_timeout`` seconds (the watchdog fired)."""


class ListWatch:
    """Lists and watches one resource over HTTP through a kubernetes_asyncio ``ApiClient``.

    ``group_version`` is ``"v1"`` for the core group or ``"GROUP/VERSION"``; ``plural`` the
    resource (``"pods"``); ``namespace`` None means all namespaces. ``metadata_only``
    fetches PartialObjectMetadata instead of whole objects.

    Example::

        lw = ListWatch(api, "apps/v1", "statefulsets", namespace="default")
        items, rv, cont = await lw.list_page("", 500, None)
        async with contextlib.aclosing(lw.watch(rv, 300)) as reads:
            async for lines in reads:
                ...
    """

    def __init__(
        self,
        api_client: Any,
        group_version: str,
        plural: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        max_line_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        group, _, version = group_version.rpartition("/")
        self.api_client = api_client
        self.group = group
        """The API group ("" for core)."""
        self.version = version
        self.plural = plural
        self.namespace = namespace
        """The namespace watched, None for all namespaces."""
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.metadata_only = metadata_only
        self.max_line_bytes = max_line_bytes
        """Longest watch line accepted; longer ones are skipped."""
        self.resource = f"{plural}.{group}" if group else plural
        """``plural`` or ``plural.group``, as in RBAC rules and error messages."""
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        ns = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
        self.path = f"{base}{ns}/{plural}"
        """The collection's URL path."""

    def __repr__(self) -> str:
        return f"<ListWatch {self.path}>"

    def _query(self) -> list[tuple[str, str]]:
        query: list[tuple[str, str]] = []
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        if self.field_selector:
            query.append(("fieldSelector", self.field_selector))
        return query

    def _where(self, verb: str) -> str:
        return f"{verb} {self.resource} {in_namespace(self.namespace)}"

    async def _get(
        self, verb: str, query: list[tuple[str, str]], accept: str, timeout: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        """Send the GET; return the response if it is a 200 with a JSON body, else raise."""
        try:
            resp: aiohttp.ClientResponse = await self.api_client.call_api(
                self.path,
                "GET",
                query_params=query,
                header_params={"Accept": accept},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout,
            )
        except _NETWORK_ERRORS as exc:
            raise StreamError(f"{self._where(verb)}: request failed: {_describe(exc)}") from exc
        try:
            if resp.status != 200:
                raise await self._status_error(resp, verb)
            ctype = resp.headers.get("Content-Type", _JSON)
            if "json" not in ctype.lower():
                raise DecodeError(
                    f"{self._where(verb)}: the server answered 200 with Content-Type "
                    f"{ctype!r}, not JSON (a proxy or a login page in the way?)"
                )
        except BaseException:
            resp.close()
            raise
        return resp

    async def _status_error(self, resp: aiohttp.ClientResponse, verb: str) -> ApiStatusError:
        try:
            raw = await resp.content.read(_MAX_ERROR_BODY)
        except _NETWORK_ERRORS:
            raw = b""
        status: Any = None
        try:
            status = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        retry_after = parse_retry_after(resp.headers.get("Retry-After"))
        if isinstance(status, dict) and status.get("kind") == "Status":
            return self.error_from_status(status, verb, code=resp.status, retry_after=retry_after)
        ctype = resp.headers.get("Content-Type", "no Content-Type")
        text = " ".join(raw[:200].decode("utf-8", "replace").split())
        message = f"non-JSON error body ({ctype}): {text!r}" if text else f"empty body ({ctype})"
        cls = WatchExpired if resp.status == 410 else ApiStatusError
        return cls(
            resp.status,
            resp.reason or "",
            message,
            verb=verb,
            resource=self.resource,
            namespace=self.namespace,
            retry_after=retry_after,
        )

    def error_from_status(
        self,
        status: Mapping[str, Any],
        verb: str,
        *,
        code: int | None = None,
        retry_after: float | None = None,
    ) -> ApiStatusError:
        """The :class:`ApiStatusError` for a ``Status`` (an HTTP error body or the object of
        a watch ERROR event); :class:`WatchExpired` for code 410."""
        source = "HTTP"
        if code is None:
            source = "ERROR event"
            raw_code = status.get("code")
            code = raw_code if isinstance(raw_code, int) else 500
        details = status.get("details")
        if retry_after is None and isinstance(details, dict):
            ras = details.get("retryAfterSeconds")
            retry_after = float(ras) if isinstance(ras, int | float) else None
        cls = WatchExpired if code == 410 else ApiStatusError
        return cls(
            code,
            str(status.get("reason") or ""),
            str(status.get("message") or ""),
            verb=verb,
            resource=self.resource,
            namespace=self.namespace,
            retry_after=retry_after,
            source=source,
        )

    async def list_page(
        self, resource_version: str, limit: int, continue_: str | None
    ) -> tuple[list[KubeObject], str, str | None]:
        """One page of the list: ``(items, list_resource_version, continue_token)``.

        ``resource_version`` "" asks for a consistent (quorum) read; it is not sent with a
        continue token (the token carries it). ``limit`` 0 means no paging.
        """
        query = self._query()
        if continue_:
            query.append(("continue", continue_))
        elif resource_version:
            query.append(("resourceVersion", resource_version))
        if limit > 0:
            query.append(("limit", str(limit)))
        accept = _PARTIAL_LIST if self.metadata_only else _JSON
        resp = await self._get("list", query, accept, _LIST_TIMEOUT)
        try:
            body = await resp.read()
        except _NETWORK_ERRORS as exc:
            raise StreamError(f"{self._where('list')}: reading failed: {_describe(exc)}") from exc
        finally:
            resp.close()
        try:
            items, rv, cont = decode_list(body)
        except DecodeError as exc:
            raise DecodeError(f"{self._where('list')}: {exc}") from exc
        return items, rv, cont or None

    async def watch(
        self,
        resource_version: str,
        timeout_seconds: int,
        *,
        send_initial_events: bool = False,
        allow_bookmarks: bool = True,
        idle_timeout: float | None = None,
        on_oversized: Callable[[int], None] | None = None,
    ) -> AsyncGenerator[list[bytes], None]:
        """Yield the lines of one watch from ``resource_version`` until the server closes it,
        as lists: the complete lines of each read from the socket, in order (never empty).

        An async generator: the request is sent at the first iteration, and HTTP errors
        surface there. Close it (``contextlib.aclosing``) when stopping early; cancelling
        the iterating task closes the response. ``send_initial_events`` makes it a
        streaming list (``resourceVersionMatch=NotOlderThan``). ``idle_timeout``: raise
        :class:`StreamError` when no byte arrives for that many seconds. ``on_oversized``
        receives the size of each line skipped for exceeding ``max_line_bytes``.
        """
        query = self._query()
        query += [("watch", "1"), ("timeoutSeconds", str(int(timeout_seconds)))]
        if resource_version or not send_initial_events:
            query.append(("resourceVersion", resource_version))
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if send_initial_events:
            query += [("sendInitialEvents", "true"), ("resourceVersionMatch", "NotOlderThan")]
        resp = await self._get(
            "watch", query, _PARTIAL if self.metadata_only else _JSON, _WATCH_TIMEOUT
        )
        try:
            async with contextlib.aclosing(self._lines(resp, idle_timeout, on_oversized)) as reads:
                async for lines in reads:
                    yield lines
        finally:
            resp.close()

    async def _lines(
        self,
        resp: aiohttp.ClientResponse,
        idle_timeout: float | None,
        on_oversized: Callable[[int], None] | None,
    ) -> AsyncGenerator[list[bytes], None]:
        """The complete, non-empty lines of each read, one list per read that has any.

        Each line is found by ``bytes.find`` (memchr; ``bytes.split`` scans ~10x slower) and
        copied once. The start of a line still waiting for its newline is kept as pieces,
        joined once when the newline comes; when they exceed ``max_line_bytes`` the line is
        dropped up to its newline and its size reported to ``on_oversized``.
        """
        content = resp.content
        limit = self.max_line_bytes
        pieces: list[bytes] = []  # the start of the line after the last newline
        pending = 0  # their total size
        skipping = 0  # > 0: inside an oversized line, this many bytes dropped so far
        while True:
            try:
                if idle_timeout is None:
                    chunk = await content.readany()
                else:
                    async with asyncio.timeout(idle_timeout):
                        chunk = await content.readany()
            except TimeoutError as exc:
                raise IdleStreamError(
                    f"{self._where('watch')}: no data for {idle_timeout:g} s (stalled stream)"
                ) from exc
            except _NETWORK_ERRORS as exc:
                raise StreamError(f"{self._where('watch')}: {_describe(exc)}") from exc
            if not chunk:
                break
            if skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    skipping += len(chunk)
                    continue
                if on_oversized is not None:
                    on_oversized(skipping + nl)
                skipping = 0
                chunk = chunk[nl + 1 :]
            lines = []
            start = 0
            while (nl := chunk.find(b"\n", start)) >= 0:
                if pieces:  # the end of the line begun in earlier reads
                    pieces.append(chunk[:nl])
                    lines.append(b"".join(pieces))
                    pieces.clear()
                    pending = 0
                elif nl > start:
                    lines.append(chunk[start:nl])
                start = nl + 1
            if start < len(chunk):
                pieces.append(chunk[start:] if start else chunk)
                pending += len(chunk) - start
                if pending > limit:
                    skipping = pending
                    pieces.clear()
                    pending = 0
            if lines:
                yield lines
        if skipping or b"".join(pieces).strip():
            size = skipping or pending
            raise StreamError(
                f"{self._where('watch')}: the stream ended in the middle of a line "
                f"({size} bytes without a newline)"
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


def _describe(exc: BaseException) -> str:
    """A short description of a network error (never its request headers)."""
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"{type(exc).__name__}: {exc.status} {exc.message}"
    text = str(exc)
    described = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        described += (
            " (TLS verification failed: is the cluster's CA in the kubeconfig, as "
            "certificate-authority or certificate-authority-data?)"
        )
    return described

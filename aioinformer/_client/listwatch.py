"""ListWatch: the list and watch requests of one resource (one namespace or all, selectors).

It sends its requests through :class:`~aioinformer._client.rest.RestClient` (one HTTP call,
errors mapped to the error tree, secrets redacted) and reads the bodies itself:
kubernetes_asyncio's own ``Watch`` turns every event into models (about 1.3 ms per pod
event), which is what this library exists to avoid.

Contract:

* :meth:`ListWatch.list_page` returns one page of a list as decoded objects, the list's
  resourceVersion and the continue token (None on the last page). An item that cannot be
  decoded is left out and reported in the page's ``bad`` (the other items are kept), and so
  is an object that is not one of the resource's (another kind, apiVersion or namespace,
  labels outside the selector: :class:`~aioinformer._client.kinds.Expected`); a list of
  another kind is a :class:`DecodeError`. The page's ``nbytes`` is its body's size. A
  body longer than :meth:`ListWatch.body_limit` (what the items asked for can take: 32 MiB
  for a page of 500, counted after decompression, so a compressed bomb stops there too) is
  a :class:`TransportError` (reading stops at the limit; the next pages ask for fewer
  items), and so is a list whose answer does not finish within ``list_timeout``.
* :meth:`ListWatch.decode_event` decodes a watch line and refuses an object that is not
  one of the resource's (a :class:`DecodeError`, as for a malformed line).
* :meth:`ListWatch.watch` yields the raw event lines (without the newline) of one watch
  request, until the server closes the stream cleanly. Lines may be arbitrarily long up to
  ``max_line_bytes`` (16 MiB by default; aiohttp's ``readline`` limit does not apply, the
  stream is split here). A longer line is skipped up to its newline and reported through
  ``on_oversized`` (a line over 4 times the limit and 64 MiB ends the watch: a
  :class:`TransportError`); blank lines (keep-alives) are dropped.
* **No wait is unbounded.** From the request's start, the response headers must come within
  ``header_timeout`` (a watch's within its ``idle_timeout`` if shorter: a watch answers
  its headers at once, so a silent connection is as dead as a silent stream); then the
  stream may stay silent no longer than ``idle_timeout`` (:class:`IdleStreamError`); and
  a watch that outlives its own ``timeoutSeconds`` by ``watch_deadline_margin``
  (:data:`WATCH_DEADLINE_MARGIN` by default) is ended by the client
  (:class:`WatchDeadlineError`), so a server or proxy that trickles bytes cannot hold a
  watch open for ever.
* Errors name verb, resource and namespace: an HTTP error status is the most specific
  :class:`~aioinformer.StatusError` (410 is :class:`~aioinformer.Expired`), a 200 whose
  Content-Type is not JSON is :class:`DecodeError`; a connection failure, a stream cut
  mid-line or a stalled stream is :class:`TransportError`.
* Sharded (``shards``): lists and watches send ``shardSelector``. A list page the server
  did not apply it to (no ``shardInfo`` echo) is filtered here, each item outside the
  ranges left out before it is built (counted in the page's ``dropped``); a watch event's
  object outside the ranges, whatever the server did, decodes to ``DROPPED`` (see
  :mod:`~aioinformer._client.shardfilter`).
* Metadata-only mode asks for ``PartialObjectMetadataList`` on lists and
  ``PartialObjectMetadata`` on watches (conformance 16a/16b; the list media type on a
  watch makes the server close the stream at the first event, 16c).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from aioinformer._client.discovery import Discovery
from aioinformer._client.kinds import Expected
from aioinformer._client.rest import (
    JSON,
    NETWORK_ERRORS,
    ApiClientLike,
    BodyTooLarge,
    Request,
    RestClient,
)
from aioinformer._client.shardfilter import ShardFilter
from aioinformer._core import logs
from aioinformer._core.errors import (
    ConfigError,
    DecodeError,
    StatusError,
    TransportError,
    in_namespace,
)
from aioinformer._core.labels import label_matcher
from aioinformer._core.objects import BadItem, ItemList, KubeObject, decode_event, decode_list
from aioinformer._core.shardkeys import ShardSelector

__all__ = ["IdleStreamError", "ListWatch", "WatchDeadlineError"]

log = logs.logger("aioinformer.watch")

_PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
_PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
_CONNECT_TIMEOUT = 30.0
DEFAULT_HEADER_TIMEOUT = 30.0
"""Seconds from sending a request to its response headers (a watch's come at once)."""
DEFAULT_LIST_TIMEOUT = 600.0
"""Seconds one list page may take in all (a 200k-pod page arrives in well under a minute)."""
DEFAULT_MAX_LIST_BYTES = 2 << 30
"""The hard cap on one list response body (decompressed): 2 GiB. Below it, each response's
limit follows the request (:meth:`ListWatch.body_limit`)."""
PAGE_ITEM_BYTES = 64 << 10
"""The bytes a page may spend per item it asked for: 64 KiB, several times a pod's
(4-20 KiB with its managedFields). A page of 500 may be 32 MiB."""
UNPAGED_LIST_BYTES = 256 << 20
"""The least an unpaged list may be: 256 MiB (or twice the largest whole list read)."""
ENDLESS_LINE_BYTES = 64 << 20
"""A line longer than this and 4 times ``max_line_bytes`` ends the watch (skipping it
would take until the watch's deadline, however long the server kept sending)."""
WATCH_DEADLINE_MARGIN = 30.0
"""Seconds past its ``timeoutSeconds`` after which the client ends a watch itself."""


class IdleStreamError(TransportError):
    """The watch stream sent nothing for ``idle_timeout`` seconds (the watchdog fired)."""


class WatchDeadlineError(TransportError):
    """The watch outlived its ``timeoutSeconds`` by the deadline margin: the server never
    closed it, so the client did."""


@dataclass
class _Sizes:
    """What a ListWatch (and its copies) learned of the resource's list sizes."""

    shift: int = 0  # pages ask for limit >> shift items (big objects made a page too large)
    largest: int = 0  # the largest whole list read, in bytes
    current: int = 0  # the bytes of the list being read


class ListWatch:
    """Lists and watches one resource over HTTP.

    ``client`` is a :class:`~aioinformer._client.rest.RestClient` or a kubernetes_asyncio
    ``ApiClient`` (wrapped in one). ``group_version`` is ``"v1"`` for the core group or
    ``"GROUP/VERSION"``; ``plural`` the resource (``"pods"``); ``namespace`` None means all
    namespaces. ``metadata_only`` fetches PartialObjectMetadata instead of whole objects.
    ``shards`` scopes both to hash ranges (KEP-5866 ``shardSelector``, applied here too
    when the server does not: :mod:`~aioinformer._client.shardfilter`).
    The limits and timeouts are described in the module docstring.

    Example::

        lw = ListWatch(api, "apps/v1", "statefulsets", namespace="default")
        items, rv, cont = await lw.list_page("", 500, None)
        async with contextlib.aclosing(lw.watch(rv, 300)) as reads:
            async for lines in reads:
                ...
    """

    def __init__(
        self,
        client: RestClient | ApiClientLike,
        group_version: str,
        plural: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        max_line_bytes: int = 16 * 1024 * 1024,
        max_list_bytes: int = DEFAULT_MAX_LIST_BYTES,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
        list_timeout: float = DEFAULT_LIST_TIMEOUT,
        watch_deadline_margin: float = WATCH_DEADLINE_MARGIN,
        kind: str | None = None,
        shards: ShardSelector | None = None,
    ) -> None:
        group, _, version = group_version.rpartition("/")
        self.rest = client if isinstance(client, RestClient) else RestClient(client)
        """The client every request goes through."""
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
        self.max_list_bytes = max_list_bytes
        """Largest list page body accepted (decompressed); a longer one fails the list."""
        self.header_timeout = header_timeout
        self.list_timeout = list_timeout
        self.watch_deadline_margin = watch_deadline_margin
        """Seconds past its ``timeoutSeconds`` after which the client ends a watch."""
        self.resource = f"{plural}.{group}" if group else plural
        """``plural`` or ``plural.group``, as in RBAC rules and error messages."""
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        ns = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
        self.path = f"{base}{ns}/{plural}"
        """The collection's URL path."""
        try:
            labels = label_matcher(label_selector) if label_selector else None
        except ConfigError:  # (the server judges a selector this client cannot read)
            labels = None
        self._sizes = _Sizes()
        self.expected = Expected(
            group,
            version,
            plural,
            kind=kind,
            namespace=namespace,
            labels=labels,
            metadata_only=metadata_only,
        )
        """What the resource's objects are: anything else in a list or watch is refused."""
        where = f"{self.resource}[{namespace}]" if namespace else self.resource
        self.shards = ShardFilter(shards, name=where) if shards is not None else None
        """The shard scope (None: every object): sent as ``shardSelector`` on lists and
        watches, and applied here (:mod:`~aioinformer._client.shardfilter`); shared by
        the copies :meth:`using` makes."""

    def __repr__(self) -> str:
        return f"<ListWatch {self.path}>"

    def using(self, rest: RestClient) -> ListWatch:
        """The same requests through ``rest`` (a client whose connections belong to
        another event loop: an informer factory's pipeline thread)."""
        moved = copy.copy(self)
        moved.rest = rest
        return moved

    def _query(self) -> list[tuple[str, str]]:
        query: list[tuple[str, str]] = []
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        if self.field_selector:
            query.append(("fieldSelector", self.field_selector))
        if self.shards is not None:
            query.append(("shardSelector", self.shards.text))
        return query

    def _about(self, verb: str) -> Request:
        return Request(verb, self.resource, self.namespace)

    def _where(self, verb: str) -> str:
        return f"{verb} {self.resource} {in_namespace(self.namespace)}"

    def _transport(
        self, verb: str, message: str, cls: type[TransportError] = TransportError
    ) -> TransportError:
        return cls(
            self.rest.redact(f"{self._where(verb)}: {message}"),
            verb=verb,
            resource=self.resource,
            namespace=self.namespace,
        )

    async def _get(
        self,
        verb: str,
        query: list[tuple[str, str]],
        accept: str,
        timeout: aiohttp.ClientTimeout,
        header_timeout: float,
    ) -> aiohttp.ClientResponse:
        """Send the GET; return the response once its headers came (within
        ``header_timeout``), if it is a 200 with a JSON body; else raise."""
        try:
            async with asyncio.timeout(header_timeout):
                resp = await self.rest.open(
                    "GET", self.path, self._about(verb), query=query, accept=accept, timeout=timeout
                )
        except TimeoutError:
            raise self._transport(
                verb, f"no response headers within {header_timeout:g} s"
            ) from None
        ctype = resp.headers.get("Content-Type", JSON)
        if "json" not in ctype.lower():
            resp.close()
            raise DecodeError(
                self.rest.redact(
                    f"{self._where(verb)}: the server answered 200 with Content-Type "
                    f"{ctype!r}, not JSON (a proxy or a login page in the way?)"
                )
            )
        return resp

    def error_from_status(self, status: Mapping[str, Any], verb: str) -> StatusError:
        """The :class:`~aioinformer.StatusError` for the Status of a watch ERROR event
        (:class:`~aioinformer.Expired` for code 410)."""
        return self.rest.status_error(status, self._about(verb))

    async def list_page(
        self, resource_version: str, limit: int, continue_: str | None
    ) -> tuple[ItemList, str, str | None]:
        """One page of the list: ``(items, list_resource_version, continue_token)``.

        ``resource_version`` "" asks for a consistent (quorum) read; it is not sent with a
        continue token (the token carries it). ``limit`` 0 means no paging. ``items.bad``
        holds the items left out (undecodable), ``items.nbytes`` the body's size.
        """
        query = self._query()
        if continue_:
            query.append(("continue", continue_))
        elif resource_version:
            query.append(("resourceVersion", resource_version))
        sizes = self._sizes
        if limit > 0:
            limit = max(1, limit >> sizes.shift)
            query.append(("limit", str(limit)))
        max_body = self.body_limit(limit)
        accept = _PARTIAL_LIST if self.metadata_only else JSON
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT)
        if not continue_:
            await self._learn_kind()
        try:
            async with asyncio.timeout(self.list_timeout):
                resp = await self._get("list", query, accept, timeout, self.header_timeout)
                try:
                    body = await self.rest.read_body(resp, self._about("list"), max_body)
                except BodyTooLarge:
                    if limit > 1:  # (objects this large: the next pages ask for fewer)
                        sizes.shift += 3
                    raise
                finally:
                    resp.close()
        except TimeoutError:
            raise self._transport(
                "list", f"the list did not complete within {self.list_timeout:g} s"
            ) from None
        shards = self.shards
        try:
            keep = shards.list_filter if shards is not None else None
            items, rv, cont = decode_list(body, skip_bad=True, keep=keep)
        except DecodeError as exc:
            raise DecodeError(self.rest.redact(f"{self._where('list')}: {exc}")) from None
        items.nbytes = len(body)
        sizes.current = len(body) + (sizes.current if continue_ else 0)
        if not cont:
            sizes.largest = max(sizes.largest, sizes.current)
        return self._own(items), rv, cont or None

    def body_limit(self, limit: int) -> int:
        """The largest body a list response of ``limit`` items (0: unpaged) may have: what
        the objects it may keep can take, not what a server may send. A page may spend
        :data:`PAGE_ITEM_BYTES` per item, and hold at least one object as large as a
        watch line may be (``max_line_bytes``); an unpaged list twice the largest whole
        list read, at least :data:`UNPAGED_LIST_BYTES`; never more than ``max_list_bytes``.
        A page over its limit fails, and the next pages ask for 8 times fewer items."""
        if limit > 0:
            budget = max(self.max_line_bytes, limit * PAGE_ITEM_BYTES) + (64 << 10)
        else:
            budget = max(UNPAGED_LIST_BYTES, 2 * self._sizes.largest)
        return min(self.max_list_bytes, budget)

    def _own(self, items: ItemList) -> ItemList:
        """The items that are the resource's objects; the others moved to ``items.bad``. A
        list of another kind or apiVersion is refused whole (a :class:`DecodeError`): a
        misrouted answer must not empty the cache."""
        expected = self.expected
        if not (expected.list_kind_ok(items.kind) and expected.api_version_ok(items.api_version)):
            raise DecodeError(
                self.rest.redact(
                    f"{self._where('list')}: the answer is a {items.kind[:64]!r} of "
                    f"{items.api_version[:64]!r}, not a list of {self.resource}"
                )
            )
        foreign = expected.foreign
        if not any(map(foreign, items)):
            return items
        kept = _like(items)
        for obj in items:
            why = foreign(obj)
            if why:
                kept.bad.append(BadItem(obj.key, f"not one of {self.resource}: {why}"))
            else:
                kept.append(obj)
        return kept

    def decode_event(self, line: bytes) -> tuple[str, KubeObject | None, dict[str, Any] | None]:
        """:func:`~aioinformer._core.objects.decode_event`, and a :class:`DecodeError` for
        an object that is not one of the resource's (another kind, apiVersion or
        namespace; labels the selector does not match, but on a DELETED event: an object
        that leaves the selector is deleted with its new labels). Sharded, an object outside
        the ranges gives ``("DROPPED", None, {"resourceVersion": TEXT})``, unbuilt."""
        shards = self.shards
        decoded = decode_event(line, shards.keeps_meta if shards is not None else None)
        obj = decoded[1]
        if obj is not None and decoded[0] != "BOOKMARK":
            why = self.expected.foreign(obj)
            if why and not (decoded[0] == "DELETED" and why.startswith("its labels")):
                raise DecodeError(f"not one of {self.resource}: {why}")
        return decoded

    async def _learn_kind(self) -> None:
        """Ask discovery for the resource's kind, once it answers (a custom resource's:
        built-in kinds are known, and a given one is used)."""
        expected = self.expected
        if expected.kind is not None:
            return
        gv = expected.api_version
        try:
            served = await Discovery(self.rest, wait=0).resources(gv)
            kind = next((r.kind for r in served if r.plural == self.plural), "")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # (any answer: the plural rule applies until it works)
            log.debug("%s: discovery of %s did not answer its kind: %s", self.resource, gv, exc)
            return
        if kind:
            expected.kind = kind

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
        :class:`IdleStreamError` when no byte arrives for that many seconds. A watch still
        open ``watch_deadline_margin`` seconds after ``timeout_seconds`` raises
        :class:`WatchDeadlineError`. ``on_oversized`` receives the size of each line
        skipped for exceeding ``max_line_bytes``.
        """
        query = self._query()
        query += [("watch", "1"), ("timeoutSeconds", str(int(timeout_seconds)))]
        if resource_version or not send_initial_events:
            query.append(("resourceVersion", resource_version))
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if send_initial_events:
            query += [("sendInitialEvents", "true"), ("resourceVersionMatch", "NotOlderThan")]
        if send_initial_events:
            await self._learn_kind()
        loop = asyncio.get_running_loop()
        margin = self.watch_deadline_margin
        deadline = loop.time() + timeout_seconds + margin
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT)
        accept = _PARTIAL if self.metadata_only else JSON
        # a watch's headers come at once (before any event): a silent server is found as
        # soon as the stream's own idle timeout would find it
        wait = (
            self.header_timeout if idle_timeout is None else min(self.header_timeout, idle_timeout)
        )
        resp = await self._get("watch", query, accept, timeout, wait)
        try:
            reads = self._lines(resp, idle_timeout, on_oversized)
            async with contextlib.aclosing(reads):
                while True:
                    try:
                        async with asyncio.timeout_at(deadline):
                            lines = await anext(reads)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        raise self._transport(
                            "watch",
                            f"still open {margin:g} s after its timeoutSeconds "
                            f"({timeout_seconds}); ended by the client",
                            WatchDeadlineError,
                        ) from None
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
            except TimeoutError:
                raise self._transport(
                    "watch", f"no data for {idle_timeout:g} s (stalled stream)", IdleStreamError
                ) from None
            except NETWORK_ERRORS as exc:
                raise self.rest.transport_error(self._about("watch"), "reading", exc) from None
            if not chunk:
                break
            if skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    skipping += len(chunk)
                    if skipping > max(4 * limit, ENDLESS_LINE_BYTES):
                        raise self._transport(
                            "watch",
                            f"a line of more than {skipping} bytes without its end: not an "
                            "event stream",
                        )
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
            raise self._transport(
                "watch",
                f"the stream ended in the middle of a line ({size} bytes without a newline)",
            )


def _like(items: ItemList) -> ItemList:
    """An empty ItemList with ``items``' bad items and list attributes."""
    like = ItemList(bad=items.bad)
    like.nbytes, like.kind, like.api_version = items.nbytes, items.kind, items.api_version
    like.shard_selector, like.dropped = items.shard_selector, items.dropped
    return like

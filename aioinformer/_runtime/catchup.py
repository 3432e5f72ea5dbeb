"""Catching a replica's caches up with a Lease it just took, before it reconciles.

A replica that becomes leader (or takes a shard) was a standby: its informers may lag
behind what its predecessor wrote (a slow watch, a paused process), and a reconcile on
such a cache makes again what the predecessor made. Every write the predecessor made
while it held the Lease came before the write that took the Lease over (the server orders
them by resourceVersion), so once every informer the controllers read has caught up with
the resourceVersion of that Lease write, none of the predecessor's writes is missing.

An informer has caught up with ``rv`` when its store has reached it (an event or bookmark
at or past it: :meth:`~aioinformer.Informer.wait_fresh`), or when its store holds exactly
what the server lists now (every object at the resourceVersion listed: the same state as of
a resourceVersion at or past ``rv``), which is how a resource nobody wrote since is found
fresh without waiting for a bookmark: a metadata-only list of the informer's scope, sent
only when the store has not reached ``rv`` within :data:`QUICK` seconds. Catching up is
bounded (the caller's ``timeout``): an informer that has not caught up by then is named in
a WARNING, and the caller decides: a new leader goes on (``then``'s default), a
replica's sharded caches keep their gained shards not ready and try again
(:mod:`~aioinformer._runtime.shardcaches`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Final

from aioinformer._cache.informer import Informer
from aioinformer._client.listwatch import ListWatch
from aioinformer._client.rest import RestClient
from aioinformer._core import logs
from aioinformer._core.errors import AioinformerError, ClosedError, FreshnessTimeout

__all__ = ["ON_WHAT_THEY_HOLD", "QUICK", "catch_up", "caught_up"]

log = logs.logger("aioinformer.manager")

QUICK = 0.2
"""Seconds an informer may take to reach the Lease's resourceVersion by itself before its
state is compared with a list (most watches deliver within that)."""
_RETRY = 1.0
"""Seconds between two comparisons of a lagging informer with the server's list."""


ON_WHAT_THEY_HOLD: Final = "reconciling on what they hold (their watches lag or fail)"
"""What a new leader does when its caches did not catch up in time (the default ``then``)."""


async def catch_up(
    informers: Iterable[Informer],
    rv: int,
    rest: RestClient,
    *,
    what: str,
    timeout: float,
    then: str = ON_WHAT_THEY_HOLD,
) -> list[Informer]:
    """Wait until every informer caught up with ``rv`` (see the module docstring), for at
    most ``timeout`` seconds; return those that did not (logged at WARNING, naming
    ``what`` the replica took and ``then``, what it does next)."""
    unique = list({id(i): i for i in informers}.values())
    results = await asyncio.gather(*(caught_up(i, rv, rest, timeout) for i in unique))
    behind = [i for i, ok in zip(unique, results, strict=True) if not ok]
    if behind:
        log.warning(
            "%s: taken at resourceVersion %d, but %s did not catch up with it within %gs: %s",
            what, rv, ", ".join(i.name for i in behind), timeout, then,
        )  # fmt: skip
    return behind


async def caught_up(informer: Informer, rv: int, rest: RestClient, timeout: float) -> bool:
    """Whether ``informer`` caught up with ``rv`` (see the module docstring) within
    ``timeout`` seconds; True for one that stops meanwhile (released by its last holder:
    nothing reads it any more)."""
    try:
        return await _caught_up(informer, rv, rest, timeout)
    except ClosedError:  # it stopped meanwhile (released): no reconcile reads it
        return True


async def _caught_up(informer: Informer, rv: int, rest: RestClient, timeout: float) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        await informer.wait_fresh(rv, timeout=min(QUICK, timeout))
        return True
    except FreshnessTimeout:
        pass
    while (left := deadline - loop.time()) > 0:
        try:
            async with asyncio.timeout(left):
                listed = await _listed(informer, rest)
        except (AioinformerError, TimeoutError) as exc:
            log.debug("%s: listing to compare with the cache failed: %r", informer.name, exc)
            listed = None
        if listed is not None:
            versions, list_rv = listed
            held = {o.key: str(o.rv) for o in informer.snapshot().list()}
            if held == versions or int(list_rv or 0) <= informer.snapshot().resource_version:
                return True
        left = deadline - loop.time()
        if left <= 0:
            break
        try:
            await informer.wait_fresh(rv, timeout=min(_RETRY, left))
            return True
        except FreshnessTimeout:
            continue
    return False


async def _listed(informer: Informer, rest: RestClient) -> tuple[dict[str, str], str]:
    """The keys and resourceVersions the server lists now in ``informer``'s scope (its
    selectors, and its shard ranges if it is sharded), and the list's resourceVersion (one
    consistent read, page by page, metadata only)."""
    group_version = f"{informer.group}/{informer.version}" if informer.group else informer.version
    lister = ListWatch(
        rest,
        group_version,
        informer.plural,
        namespace=informer.namespace,
        label_selector=informer.label_selector,
        field_selector=informer.field_selector,
        metadata_only=True,
        shards=informer.shards,  # (a sharded informer: its ranges, filtered here if need be)
    )
    versions: dict[str, str] = {}
    token: str | None = None
    list_rv = ""
    while True:
        page, page_rv, token = await lister.list_page("", 500, token)
        list_rv = list_rv or page_rv
        versions.update((o.key, str(o.rv)) for o in page)
        if not token:
            return versions, list_rv

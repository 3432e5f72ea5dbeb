"""Events: what a controller tells the people who ``kubectl describe`` its objects.

:class:`EventRecorder` writes ``core/v1`` Events about objects, the way client-go's
EventRecorder does, so that a controller stuck in a loop cannot flood the API server:

* **Aggregation.** An event identical to one already sent about the same object (type,
  reason, message, source) within :data:`AGGREGATION_WINDOW` is not created again: the
  existing Event's ``count`` is incremented and its ``lastTimestamp`` moved (a patch).
* **Rate limiting.** Per object and source, a token bucket of :data:`BURST` events refilled
  one token every :data:`REFILL_SECONDS` (client-go's 25 and 5 minutes); an event over
  the limit is dropped and counted (``dropped``).
* **Never in the way.** :meth:`EventRecorder.record` does not wait: events are sent in
  order by :meth:`EventRecorder.run` (the manager runs the recorders it made; alone, use
  ``async with recorder:``), outside any reconcile even when recorded inside one (the
  manager's client neither fences nor books them); a failure to send one is counted
  (``failed``) and logged as every repeated failure is (the first of each kind, then a
  summary every 10 s: a server refusing every event is one line, not one per event), never
  raised into the reconcile. :meth:`EventRecorder.flush` waits
  until what was recorded is sent; stopping ``run`` sends what is recorded first (for at
  most :data:`DRAIN_TIMEOUT` seconds).
* **Valid names.** An Event is named ``<object name>.<hex timestamp>`` (cut to 253
  characters), in the object's namespace (``default`` for a cluster-scoped object), as
  client-go names them; the server accepts every one.
* **Clean messages.** A message is cleaned of the credentials the library knows
  (:func:`~aioinformer._core.redact.redact_known`, as every log line is) and then cut to
  :data:`MESSAGE_LIMIT` bytes (the API's limit on an event's note), so an error's text can
  be recorded as it is.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from aioinformer._client.client import Client
from aioinformer._core import logs
from aioinformer._core.errors import ApiError, ClosedError, ConfigError
from aioinformer._core.failurelog import FailureLog
from aioinformer._core.objects import KubeObject
from aioinformer._core.redact import redact_known
from aioinformer._core.service import Service

__all__ = [
    "AGGREGATION_WINDOW",
    "BURST",
    "MESSAGE_LIMIT",
    "REFILL_SECONDS",
    "EventRecorder",
    "EventType",
]

log = logs.logger("aioinformer.events")

EventType: TypeAlias = Literal["Normal", "Warning"]
"""An Event's type."""
AGGREGATION_WINDOW = 600.0
"""Seconds within which an identical event increments the count of the one sent before."""
BURST = 25
"""Events one object may get at once from one source."""
REFILL_SECONDS = 300.0
"""Seconds after which an object's bucket gets one more event."""
MESSAGE_LIMIT = 1024
"""Bytes of a message kept (``events.k8s.io/v1``'s limit on ``note``); a longer one is cut,
ending with "..."."""
DRAIN_TIMEOUT = 10.0
"""Seconds a stopping recorder spends sending what is still recorded."""
_NAME_LIMIT = 253


@dataclass(slots=True)
class _Sent:
    name: str
    namespace: str
    count: int
    at: float


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


def _timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder(Service):
    """Records core/v1 Events about objects (see the module docstring).

    Args:
        client: the client that writes them (e.g. :attr:`aioinformer.Manager.client`; its
            writes outside a reconcile are not fenced, events are advisory).
        component: the ``source.component`` / ``reportingComponent`` (the controller's name).
        host: the ``source.host`` / ``reportingInstance`` (default: this machine's name).
        clock: the aggregation and rate-limiting clock.
    """

    def __init__(
        self,
        client: Client,
        component: str,
        *,
        host: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not component:
            raise ConfigError("an EventRecorder needs a component name")
        self.client = client
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self._clock = clock
        self._queue: asyncio.Queue[tuple[dict[str, Any], tuple[str, ...]]] = asyncio.Queue()
        self._sent: dict[tuple[str, ...], _Sent] = {}
        self._buckets: dict[tuple[str, ...], _Bucket] = {}
        self._closed = False
        self.recorded = 0
        """Events accepted by :meth:`record`."""
        self.dropped = 0
        """Events over the rate limit, not sent."""
        self.failed = 0
        """Events the server did not take (logged)."""
        self._drops = FailureLog(log, logging.WARNING, clock=clock)
        self._failures = FailureLog(log, logging.WARNING, clock=clock)

    def record(
        self,
        obj: KubeObject | Mapping[str, Any],
        type: EventType,
        reason: str,
        message: str,
        *,
        action: str | None = None,
    ) -> None:
        """Record an event about ``obj`` (a cached object or a body with apiVersion, kind
        and metadata): ``type`` "Normal" or "Warning", a CamelCase ``reason``, a human
        ``message`` (cleaned of known credentials, cut to :data:`MESSAGE_LIMIT` bytes).
        Returns at once; the event is sent in the background."""
        if self._closed:
            raise ClosedError(f"EventRecorder {self.component} is closed")
        if type not in ("Normal", "Warning"):
            raise ConfigError(f"an event's type is 'Normal' or 'Warning', not {type!r}")
        involved = _involved(obj)
        message = _clean_message(message)
        source = (involved["uid"] or f"{involved['namespace']}/{involved['name']}", self.component)
        if not self._take(source):
            self.dropped += 1
            self._drops.failed(None, "%s: event about %s dropped (rate limit): %s %s",
                               self.component, involved["name"], reason, message)  # fmt: skip
            return
        event = {
            "involvedObject": involved,
            "type": type,
            "reason": reason,
            "message": message,
            "action": action,
        }
        self.recorded += 1
        self._queue.put_nowait((event, (*source, type, reason, message)))

    async def flush(self) -> None:
        """Wait until every event recorded so far has been sent (or failed); while it
        runs (:meth:`run`)."""
        if not self._active:
            raise ClosedError(f"EventRecorder {self.component} is not running")
        await self._queue.join()

    def _service_name(self) -> str:
        return f"events:{self.component}"

    async def run(self) -> None:
        """Send the recorded events, in order, until cancelled; then send what is still
        recorded (for at most :data:`DRAIN_TIMEOUT` seconds) and refuse new ones."""
        self._begin()
        try:
            self._ready()
            await self._send_all()
        finally:
            self._closed = True
            try:
                async with asyncio.timeout(DRAIN_TIMEOUT):
                    while not self._queue.empty():
                        await self._send_one(self._queue.get_nowait())
            except TimeoutError:
                log.warning("%s: %d events not sent (the recorder stopped)",
                            self.component, self._queue.qsize())  # fmt: skip
            finally:
                self._end()

    def _take(self, source: tuple[str, ...]) -> bool:
        now = self._clock()
        bucket = self._buckets.get(source)
        if bucket is None:
            bucket = self._buckets[source] = _Bucket(float(BURST), now)
        bucket.tokens = min(float(BURST), bucket.tokens + (now - bucket.at) / REFILL_SECONDS)
        bucket.at = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    async def _send_all(self) -> None:
        while True:
            await self._send_one(await self._queue.get())

    async def _send_one(self, item: tuple[dict[str, Any], tuple[str, ...]]) -> None:
        try:
            await self._send(*item)
        except asyncio.CancelledError:
            raise
        except (ApiError, ConfigError) as exc:  # (403: no RBAC for events: one line, not many)
            self.failed += 1
            self._failures.failed(exc, "%s: an event was not recorded: %s", self.component, exc,
                                  traceback=False)  # fmt: skip
        except Exception as exc:
            self.failed += 1
            self._failures.failed(exc, "%s: an event was not recorded: %r", self.component, exc)
        finally:
            self._queue.task_done()

    async def _send(self, event: dict[str, Any], key: tuple[str, ...]) -> None:
        now, stamp = self._clock(), _timestamp()
        involved = event["involvedObject"]
        earlier = self._sent.get(key)
        if earlier is not None and now - earlier.at < AGGREGATION_WINDOW:
            patch = {"count": earlier.count + 1, "lastTimestamp": stamp}
            ref = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": earlier.name, "namespace": earlier.namespace},
            }
            try:
                await self.client.patch(ref, patch, type="merge")
            except ApiError as exc:
                log.info("%s: event %s not aggregated (%s): sending anew", self.component,
                         earlier.name, exc)  # fmt: skip
            else:
                earlier.count += 1
                earlier.at = now
                return
        namespace = involved["namespace"] or "default"
        suffix = f".{time.time_ns():x}"
        name = involved["name"][: _NAME_LIMIT - len(suffix)] + suffix
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {k: v for k, v in involved.items() if v},
            "reason": event["reason"],
            "message": event["message"],
            "type": event["type"],
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        if event["action"]:
            body["action"] = event["action"]
        await self.client.create(body)
        self._sent[key] = _Sent(name, namespace, 1, now)


def _clean_message(text: str) -> str:
    """``text`` cleaned of known credentials, then cut to :data:`MESSAGE_LIMIT` bytes of
    UTF-8 (at a character's boundary, ending with "...")."""
    text = redact_known(text)
    data = text.encode()
    if len(data) <= MESSAGE_LIMIT:
        return text
    return data[: MESSAGE_LIMIT - 3].decode(errors="ignore") + "..."


def _involved(obj: KubeObject | Mapping[str, Any]) -> dict[str, str]:
    """The ``involvedObject`` reference of ``obj``."""
    if isinstance(obj, KubeObject):
        api_version, kind, meta = obj.api_version, obj.kind, obj.metadata
        namespace, name, uid, rv = meta.namespace, meta.name, meta.uid, meta.resource_version
    else:
        m = obj.get("metadata") or {}
        api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
        namespace, name = str(m.get("namespace") or ""), str(m.get("name") or "")
        uid, rv = str(m.get("uid") or ""), str(m.get("resourceVersion") or "")
    if not (api_version and kind and name):
        raise ConfigError("an event needs an object with apiVersion, kind and metadata.name")
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace}
    ref["uid"] = uid
    ref["resourceVersion"] = rv
    return ref

"""Fault injection for KubeSim: the network and server failures informers must survive.

Each fault is a method call on the running sim (``sim.faults``), usable from tests and from
the command line. Request faults are consumed in order by matching requests; watch faults
act on the watch streams open right now (or, for delays and stalls, until lifted): a watch
is open once its response headers are sent, so a client that has them may inject a fault
and count on it reaching that watch (``sim.open_watches`` counts them).

The faults and what a client sees:

* ``fail_next(n, status)``: the next ``n`` matching requests get 429 (with Retry-After),
  500 or 504 (with Retry-After), with the apiserver's Status bodies.
* ``set_latency(seconds)``: every matching request waits before it is served.
* ``drop_watches()``: open watch connections are closed abruptly (no terminating chunk).
* ``stall_watches()``: open watches keep their connection but send nothing until
  ``unstall_watches()`` (or the stall's duration passes).
* ``delay_watch_events(seconds)``: each watch event is delivered no earlier than its
  commit time plus ``seconds`` (the "stale informer" of the seed scenario).
* ``cut_next(n)``: the next ``n`` matching responses (lists, or the next event of a watch)
  stop in the middle of a line and the connection is closed.
* ``inject_line(data)``: the bytes are sent as one chunk on every matching open watch (a
  malformed or oversized line).
* ``respond_next(n, body, status=..., content_type=...)``: the next ``n`` matching requests
  get exactly these bytes (an HTML page from a proxy, a login page, a non-JSON 200), and
  the server does nothing else with them (what a proxy or a misrouted request answers).
* ``lose_answers(n)``: the next ``n`` matching requests are served (a write is committed)
  and then their connection is closed with no answer: the client cannot tell whether its
  write happened.

Request faults match on the request's path (``path_contains``), Kubernetes verb (``verbs``)
and authenticated user (``users``), so one client of many can be singled out. A
``scheduler`` (``faults.scheduler = decide``) is asked about every resource request that no
pending fault took, with a :class:`RequestInfo`, and answers a :class:`RequestFault` for
that one request or None: a test or a simulation decides request by request, between each
request and its answer (``RequestFault.status_error(...)``, ``.raw(...)``, ``.lost()``).
Stalls are timed on ``faults.clock`` (``time.monotonic``; a test on virtual time sets its
loop's).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kubesim.errors import KubeSimApiError, status_body

__all__ = ["LOSABLE_VERBS", "Faults", "RequestFault", "RequestInfo", "fault_error"]

LOSABLE_VERBS = frozenset({"get", "create", "update", "patch", "delete"})
"""The verbs whose answer :meth:`Faults.lose_answers` can lose (a list or a watch streams
its answer as it is made: cut those with :meth:`Faults.cut_next` or a drop)."""


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """A request as a :attr:`Faults.scheduler` sees it, before it is served."""

    method: str
    """The HTTP method."""
    path: str
    """The request's path (no query)."""
    verb: str
    """The Kubernetes verb (get, list, watch, create, update, patch, delete, ...)."""
    user: str
    """The authenticated user's name."""


@dataclass
class RequestFault:
    """What happens to matching requests instead of (or after) being served: an error
    ``status`` (the apiserver's Status body), exactly ``body`` (``status`` and
    ``content_type`` as given), or, with ``lose_answer``, the request served and its
    connection then closed with no answer. ``remaining`` counts the requests it still
    takes."""

    status: int
    remaining: int
    retry_after: int
    path_contains: str | None = None
    verbs: frozenset[str] | None = None
    body: bytes | None = None  # None: the apiserver's Status for ``status``
    content_type: str = "application/json"
    users: frozenset[str] | None = None
    """Only requests of these users match (None: anyone's)."""
    lose_answer: bool = False
    """Serve the request, then close the connection without answering."""

    @classmethod
    def status_error(cls, status: int, retry_after: int = 1) -> RequestFault:
        """One request answered with ``status`` (429, 500, 503 or 504)."""
        _check_status(status)
        return cls(status, 1, retry_after)

    @classmethod
    def raw(
        cls, body: bytes, status: int = 200, content_type: str = "application/json"
    ) -> RequestFault:
        """One request answered with exactly ``body``, and not served."""
        return cls(status, 1, 0, body=body, content_type=content_type)

    @classmethod
    def lost(cls) -> RequestFault:
        """One request served, its answer lost (the connection closed instead)."""
        return cls(0, 1, 0, lose_answer=True)

    @property
    def kind(self) -> str:
        """How ``Faults.injected`` counts it: ``http_STATUS``, ``raw_response`` or
        ``lost_answer``."""
        if self.lose_answer:
            return "lost_answer"
        return f"http_{self.status}" if self.body is None else "raw_response"

    def matches(self, path: str, verb: str, user: str | None = None) -> bool:
        if self.path_contains is not None and self.path_contains not in path:
            return False
        if self.users is not None and user not in self.users:
            return False
        if self.lose_answer and verb not in LOSABLE_VERBS:
            return False
        return self.verbs is None or verb in self.verbs


def _check_status(status: int) -> None:
    if status not in (429, 500, 503, 504):
        raise ValueError(f"unsupported fault status {status}: use 429, 500, 503 or 504")


def _users(users: Iterable[str] | None) -> frozenset[str] | None:
    return frozenset(users) if users is not None else None


@dataclass
class Faults:
    """The fault state a running sim consults on every request and watch event.

    Every KubeSim has one, ``sim.faults``: call its methods (see the module docstring) to
    inject faults; the fields are its state, set by those methods.
    """

    request_faults: list[RequestFault] = field(default_factory=list)
    """Pending "answer the next N requests with ..." faults, in order."""
    latency: float = 0.0
    """Seconds every matching request waits (0: none)."""
    latency_path_contains: str | None = None
    """Only requests whose path contains this wait (None: all)."""
    watch_delay: float = 0.0
    """Seconds after its commit that each watch event is delivered at the earliest."""
    cut_remaining: int = 0
    """Responses still to be cut in the middle of a line."""
    cut_path_contains: str | None = None
    """Only responses to paths containing this are cut (None: all)."""
    stalled_until: float = 0.0  # a deadline on ``clock``; inf = until unstalled
    """``clock()`` until which watches send nothing (inf: until unstalled)."""
    clock: Callable[[], float] = time.monotonic
    """What stalls are timed by (the event loop's clock on a virtual-time loop)."""
    scheduler: Callable[[RequestInfo], RequestFault | None] | None = None
    """Asked about every resource request no pending fault took: a fault for that one
    request (its ``remaining`` is ignored), or None to serve it."""
    injected: dict[str, int] = field(default_factory=dict)  # fault kind -> times injected
    """Faults injected so far, by kind."""
    _unstall: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _drop_generation: int = field(default=0, init=False, repr=False)
    _drops: list[str | None] = field(default_factory=list, init=False, repr=False)
    _lines: list[tuple[bytes, str | None]] = field(default_factory=list, init=False, repr=False)
    _line_generation: int = field(default=0, init=False, repr=False)
    wake: Callable[[], None] = lambda: None  # set by the server: wakes every watch stream
    """Wakes every open watch stream (set by the server) so it sees a new fault at once."""

    def _count(self, kind: str, n: int = 1) -> None:
        self.injected[kind] = self.injected.get(kind, 0) + n

    # -- request faults --------------------------------------------------------------------

    def fail_next(
        self,
        n: int,
        status: int = 500,
        *,
        retry_after: int = 1,
        path_contains: str | None = None,
        verbs: Iterable[str] | None = None,
        users: Iterable[str] | None = None,
    ) -> None:
        """Answer the next ``n`` matching requests with ``status`` (429, 500 or 504).

        ``verbs`` are Kubernetes verbs (list, watch, get, create, update, patch, delete);
        ``users`` the names of the users whose requests match (default: anyone's).
        """
        _check_status(status)
        self.request_faults.append(
            RequestFault(
                status,
                n,
                retry_after,
                path_contains,
                frozenset(verbs) if verbs else None,
                users=_users(users),
            )
        )

    def take_request_fault(
        self, path: str, verb: str, user: str | None = None, method: str = ""
    ) -> RequestFault | None:
        """Consume one matching pending request fault, if any; else ask the
        :attr:`scheduler` (when set) about this request."""
        for rf in self.request_faults:
            if rf.remaining > 0 and rf.matches(path, verb, user):
                rf.remaining -= 1
                self._count(rf.kind)
                if rf.remaining == 0:
                    self.request_faults.remove(rf)
                return rf
        if self.scheduler is None:
            return None
        fault = self.scheduler(RequestInfo(method, path, verb, user or ""))
        if fault is None or (fault.lose_answer and verb not in LOSABLE_VERBS):
            return None
        self._count(fault.kind)
        return fault

    def respond_next(
        self,
        n: int,
        body: bytes,
        *,
        status: int = 200,
        content_type: str = "text/html",
        path_contains: str | None = None,
        verbs: Iterable[str] | None = None,
        users: Iterable[str] | None = None,
    ) -> None:
        """Answer the next ``n`` matching requests with ``body`` as is (``status``,
        ``content_type``), without serving them: what a proxy, a login page, a broken
        gateway or a request routed to another server sends."""
        fault = RequestFault(status, n, 0, path_contains, frozenset(verbs) if verbs else None)
        fault.body, fault.content_type, fault.users = body, content_type, _users(users)
        self.request_faults.append(fault)

    def lose_answers(
        self,
        n: int = 1,
        *,
        path_contains: str | None = None,
        verbs: Iterable[str] | None = None,
        users: Iterable[str] | None = None,
    ) -> None:
        """Serve the next ``n`` matching requests (a write is committed, its watch events
        go out), then close each one's connection without an answer: the client gets a
        connection error and cannot tell that its write happened. Only requests with one
        answer (:data:`LOSABLE_VERBS`) match."""
        verbs_set = frozenset(verbs) if verbs else None
        fault = RequestFault(0, n, 0, path_contains, verbs_set, users=_users(users))
        fault.lose_answer = True
        self.request_faults.append(fault)

    def set_latency(self, seconds: float, *, path_contains: str | None = None) -> None:
        """Delay every matching request by ``seconds`` (0 lifts it)."""
        self.latency = seconds
        self.latency_path_contains = path_contains

    def latency_for(self, path: str) -> float:
        """The seconds a request to ``path`` waits now (counted as injected when > 0)."""
        if self.latency and (
            self.latency_path_contains is None or self.latency_path_contains in path
        ):
            self._count("latency")
            return self.latency
        return 0.0

    def cut_next(self, n: int = 1, *, path_contains: str | None = None) -> None:
        """Cut the next ``n`` matching responses in the middle of a line."""
        self.cut_remaining = n
        self.cut_path_contains = path_contains

    def take_cut(self, path: str) -> bool:
        """Whether the response to ``path`` is to be cut (consumes one pending cut)."""
        if self.cut_remaining > 0 and (
            self.cut_path_contains is None or self.cut_path_contains in path
        ):
            self.cut_remaining -= 1
            self._count("cut_mid_line")
            return True
        return False

    # -- watch faults -----------------------------------------------------------------------

    def drop_watches(self, *, path_contains: str | None = None) -> None:
        """Close open watch connections abruptly: all of them, or those whose request
        path contains ``path_contains`` (e.g. ``"/pods"`` or ``"/namespaces/team-a/"``)."""
        self._drops.append(path_contains)
        self._drop_generation += 1
        self._count("drop_watches")
        self.wake()

    @property
    def drop_generation(self) -> int:
        """How many drops were requested so far (a watch remembers it when it starts)."""
        return self._drop_generation

    def dropped_since(self, generation: int, path: str) -> bool:
        """Whether a drop matching ``path`` was requested after ``generation``."""
        if generation >= self._drop_generation:
            return False
        recent = self._drops[len(self._drops) - (self._drop_generation - generation) :]
        return any(p is None or p in path for p in recent)

    def stall_watches(self, seconds: float | None = None) -> None:
        """Open watches send nothing for ``seconds`` (None: until :meth:`unstall_watches`)."""
        self.stalled_until = float("inf") if seconds is None else self.clock() + seconds
        self._unstall = asyncio.Event()
        self._count("stall_watches")
        self.wake()

    def unstall_watches(self) -> None:
        """End the stall: stalled watches send again at once."""
        self.stalled_until = 0.0
        self._unstall.set()
        self.wake()

    def stall_remaining(self) -> float:
        """Seconds the current stall still lasts (0 when not stalled)."""
        return max(0.0, self.stalled_until - self.clock())

    async def wait_unstalled(self) -> None:
        """Return once no stall is in force."""
        while (left := self.stall_remaining()) > 0:
            try:
                await asyncio.wait_for(self._unstall.wait(), min(left, 3600.0))
            except TimeoutError:
                pass

    def delay_watch_events(self, seconds: float) -> None:
        """Deliver each watch event ``seconds`` after its commit (0 lifts it)."""
        self.watch_delay = seconds
        if seconds:
            self._count("watch_delay")
        self.wake()

    def inject_line(self, data: bytes, *, path_contains: str | None = None) -> None:
        """Send ``data`` as one chunk on every matching open watch (e.g. a malformed line)."""
        self._lines.append((data, path_contains))
        self._line_generation += 1
        self._count("inject_line")
        self.wake()

    def lines_since(self, generation: int, path: str) -> tuple[int, list[bytes]]:
        """Injected lines a watch at ``generation`` has not sent yet, and the new generation."""
        if generation >= self._line_generation:
            return generation, []
        new = self._lines[len(self._lines) - (self._line_generation - generation) :]
        return self._line_generation, [d for d, p in new if p is None or p in path]

    @property
    def line_generation(self) -> int:
        """How many lines were injected so far (a watch remembers it when it starts)."""
        return self._line_generation


def fault_error(status: int, retry_after: int) -> KubeSimApiError:
    """The answer of an injected request fault: the recorded 429, 503 or 504 with
    ``Retry-After``, or a 500."""
    if status == 429:
        return KubeSimApiError.too_many_requests(retry_after)
    if status == 504:
        err = KubeSimApiError.timeout()
        err.headers["Retry-After"] = str(retry_after)
        return err
    if status == 503:
        return KubeSimApiError(
            503,
            status_body(
                503,
                "the server is currently unable to handle the request",
                "ServiceUnavailable",
            ),
            {"Retry-After": str(retry_after)},
        )
    return KubeSimApiError.internal("Internal error occurred: injected fault")

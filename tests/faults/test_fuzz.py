"""The hostile-server fuzzer: Hypothesis draws a server's misbehaviour, an informer lives
through it, and four invariants must hold.

Each example is a :class:`Case`: the informer's scope (all namespaces or one, a label
selector or none, list or streaming list, a page size) and a script of :class:`Step` s,
one per request, each a change to the server's truth and a fault: well-formed but wrong
(another kind, apiVersion, namespace or labels, a name with ``/``, RVs out of order, going
back or ahead, a Status in a 200, a stale list, ``sendInitialEvents`` ignored, a stream
ending before its initial-events-end bookmark, a reset of the server's history) or broken
(hung, cut, trickled, endless or compressed bodies, a gzip bomb, bad UTF-8, invalid JSON,
huge lines, error statuses with and without a Status). The server
(:mod:`tests.faults.scripted`) serves the script, then behaves. Throughout:

1. **Only the resource's objects are cached**: after every publish, every cached object
   is one the server sent as the resource's (key, resourceVersion and uid), of its kind
   and apiVersion, and can be read whole (``to_dict``);
2. **It converges**: once the script is spent, the cache equals the server's state, and a
   write made then is in the snapshot ``wait_for_rv`` returns for its RV (read-your-writes,
   also across a reset of the server's history);
3. **Requests and memory stay bounded**: no window of the run saw more requests than
   ``request_burst + request_rate * seconds``, and the resident memory grew by less than
   :data:`MAX_GROWTH` whatever the bodies' sizes;
4. **Every failure is a counted, logged AioinformerError**: each fault that must fail a
   request is counted in the informer's statistics, a WARNING says so, no record carries an
   exception outside the error tree, and asyncio reports nothing.

CI runs the profile ``fuzz-ci``: ``AIOINFORMER_FUZZ_EXAMPLES`` examples (12 by default),
derandomized (the same examples every run), without an example database and without
shrinking, so a run is deterministic and bounded. ``AIOINFORMER_FUZZ_PROFILE=fuzz-long``
draws new examples (replay a run with ``--hypothesis-seed=N``), shrinks a failure and
keeps it in ``.hypothesis/``. A failure prints its example and a blob:
``AIOINFORMER_FUZZ_REPLAY=<blob>`` runs exactly that example again (docs/testing.md).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from dataclasses import dataclass, field
from typing import Any, get_args

import hypothesis
from hypothesis import HealthCheck, Phase, given, reproduce_failure, settings
from hypothesis import strategies as st

from aioinformer import AioinformerError, Informer, InformerFactory, WatchOptions
from aioinformer.testing import eventually
from tests.faults.hostile import RssSampler, hostile_server
from tests.faults.scripted import (
    API_VERSION,
    KIND,
    MUST_COUNT_ANY,
    Ahead,
    Alien,
    BadJson,
    Cut,
    EndEarly,
    Endless,
    ErrorEvent,
    ErrorStatus,
    Fault,
    Foreign,
    Gzip,
    GzipBomb,
    Hang,
    Html200,
    IgnoreInitialEvents,
    Reset,
    ScriptedServer,
    Served,
    Shuffled,
    Stale,
    StatusIn2xx,
    Step,
    Trickle,
)

EXAMPLES = int(os.environ.get("AIOINFORMER_FUZZ_EXAMPLES", "12"))
RATE, BURST = 50.0, 20
MAX_LINE = 256 * 1024
MAX_LIST = 16 << 20
MAX_GROWTH = 48 << 20
"""The resident memory an example may add (its caches hold a few KB; the endless bodies
and the gzip bomb would cost up to ``MAX_LIST`` each)."""


def options(page_size: int) -> WatchOptions:
    return WatchOptions(
        page_size=page_size,
        min_watch_timeout=30.0,
        max_watch_timeout=30.0,
        idle_timeout=0.6,
        header_timeout=0.3,
        list_timeout=5.0,
        watch_deadline_margin=1.0,
        initial_events_timeout=2.0,
        backoff_initial=0.01,
        backoff_maximum=0.05,
        backoff_jitter=0.0,
        request_rate=RATE,
        request_burst=BURST,
        max_line_bytes=MAX_LINE,
        max_list_bytes=MAX_LIST,
    )


# -- what Hypothesis draws ----------------------------------------------------------------------

faults: st.SearchStrategy[Fault] = st.one_of(
    st.none(),
    st.just(Hang()),
    st.builds(
        ErrorStatus,
        st.sampled_from([401, 403, 404, 409, 429, 500, 503, 504]),
        st.sampled_from(["status", "html", "empty"]),
        st.none() | st.sampled_from([0.0, 0.2]),
    ),
    st.builds(StatusIn2xx, st.sampled_from([200, 410, 500])),
    st.just(Html200()),
    st.builds(Cut, st.floats(0.05, 0.95)),
    st.builds(Trickle, st.integers(64, 2048)),
    st.just(Gzip()),
    st.just(GzipBomb()),
    st.builds(Endless, st.sampled_from(["spaces", "items"])),
    st.builds(BadJson, st.floats(0.1, 0.9)),
    st.builds(Alien, st.sampled_from(get_args(Foreign)), st.booleans()),
    st.builds(Stale, st.integers(1, 4)),
    st.builds(Ahead, st.integers(1, 1_000_000)),
    st.just(Shuffled()),
    st.builds(ErrorEvent, st.sampled_from([410, 500, 504])),
    st.just(EndEarly()),
    st.builds(IgnoreInitialEvents, st.booleans()),
    st.builds(Reset, st.integers(0, 4)),
)
changes = st.lists(
    st.tuples(st.sampled_from(["add", "modify", "delete"]), st.integers(0, 20)), max_size=2
).map(tuple)


@dataclass(frozen=True)
class Case:
    """One example: the informer's scope and the server's script."""

    steps: tuple[Step, ...]
    initial: int
    namespace: str | None
    selector: bool
    streaming: bool
    page_size: int


cases = st.builds(
    Case,
    steps=st.lists(st.builds(Step, faults, changes), min_size=1, max_size=8).map(tuple),
    initial=st.integers(0, 6),
    namespace=st.sampled_from([None, "a"]),
    selector=st.booleans(),
    streaming=st.booleans(),
    page_size=st.sampled_from([0, 2, 5]),
)


# -- the invariants -------------------------------------------------------------------------------


@dataclass
class Findings:
    """What broke an invariant, in the order seen."""

    violations: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        if len(self.violations) < 20:
            self.violations.append(text)


def check_cache(inf: Informer, server: ScriptedServer, found: Findings) -> None:
    """Invariant 1, on the state just published (on the pipeline's thread)."""
    for obj in inf.snapshot().list():
        sent = (obj.key, obj.rv, obj.uid) in server.sent
        if not sent or obj.kind != KIND or obj.api_version != API_VERSION:
            found.add(
                f"cached {obj.kind} {obj.api_version} {obj.key!r} rv={obj.rv} uid={obj.uid}: "
                "not an object the server sent as the resource's"
            )
        try:
            obj.to_dict()
        except Exception as exc:
            found.add(f"{obj.key}: to_dict() raised {exc!r}")


def must_count(served: Served, case: Case) -> bool:
    """Whether the informer must count a failure for this request (invariant 4)."""
    fault, kind = served.fault, served.kind
    if isinstance(fault, MUST_COUNT_ANY):
        return True
    if kind == "probe":  # (a history check reads only the list's RV)
        return isinstance(fault, ErrorEvent)
    if isinstance(fault, Alien):
        if fault.what == "other_namespace":
            return case.namespace is not None
        if fault.what == "other_labels":
            return case.selector
        return True
    if isinstance(fault, ErrorEvent):
        return True
    if kind == "stream":
        return isinstance(fault, EndEarly | IgnoreInitialEvents)
    if kind == "watch":  # ended at once: a very short watch
        return isinstance(fault, EndEarly | Stale | Ahead | Shuffled)
    return False


def counted(inf: Informer) -> int:
    st_ = inf.statistics()
    return (
        st_.decode_errors
        + st_.stream_errors
        + sum(st_.errors_by_code.values())
        + st_.history_resets
        + st_.transform_errors
    )


def check_requests(served: list[Served], found: Findings) -> float:
    """Invariant 3 (requests): no window over the ceiling; returns the overall rate."""
    times = [s.at for s in served]
    for i, j in itertools.combinations(range(len(times)), 2):
        if j - i + 1 > BURST + RATE * (times[j] - times[i]) + 1:
            found.add(f"{j - i + 1} requests in {times[j] - times[i]:.3f} s: over the ceiling")
            break
    if len(times) < 2:
        return 0.0
    return (len(times) - 1) / max(times[-1] - times[0], 1e-3)


class Records(logging.Handler):
    """Every record of the library's and asyncio's loggers during an example."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def check_logs(records: list[logging.LogRecord], found: Findings, failures: int) -> None:
    """Invariant 4 (logged, and in the error tree); ``failures`` leaves out the 410s (an
    expired RV only means "relist": logged at INFO)."""
    for r in records:
        exc = r.exc_info[1] if r.exc_info else None
        if exc is not None and not isinstance(exc, AioinformerError):
            found.add(f"logged {type(exc).__name__} outside the error tree: {r.getMessage()}")
        if r.name.startswith("asyncio") and r.levelno >= logging.ERROR:
            found.add(f"asyncio reported: {r.getMessage()}")
    warned = any(r.levelno >= logging.WARNING and r.name.startswith("aioinformer") for r in records)
    if failures and not warned:
        found.add(f"{failures} failures counted, none logged")


# -- one example ----------------------------------------------------------------------------------


async def run_case(case: Case) -> dict[str, Any]:
    """Run ``case``; returns its figures; raises AssertionError naming every violation."""
    found = Findings()
    server = ScriptedServer(
        list(case.steps), initial=case.initial, scope=case.namespace, page_size=case.page_size
    )
    records = Records()
    loggers = [logging.getLogger("aioinformer"), logging.getLogger("asyncio")]
    for logger in loggers:
        logger.addHandler(records)
    try:
        async with hostile_server(server.handle) as http, http.api_client() as api:
            opts = options(case.page_size)
            async with RssSampler() as rss, InformerFactory(api, watch_options=opts) as factory:
                inf = factory.informer(
                    "v1",
                    "pods",
                    namespace=case.namespace,
                    label_selector="app=web" if case.selector else None,
                    streaming_list=case.streaming,
                )
                inf.on_publish(lambda _seq, _rv: check_cache(inf, server, found))
                await eventually(lambda: server.done, "the script to be spent", timeout=30)
                want = server.truth.versions

                def converged() -> bool:  # the server's objects, at no RV it has not reached
                    snap = inf.snapshot()
                    at_most = snap.resource_version <= server.truth.rv
                    return at_most and {o.key: o.rv for o in snap.list()} == want()

                await eventually(converged, "the cache to converge", timeout=15)
                rv, key = server.truth.mutate("add", 0)  # a write once the server behaves
                snap = await inf.wait_for_rv(rv, timeout=10)
                if snap.get(key) is None:
                    found.add(f"wait_for_rv({rv}) returned a snapshot without {key}")
                check_cache(inf, server, found)
                failures = counted(inf)
                stats = inf.statistics()
    finally:
        for logger in loggers:
            logger.removeHandler(records)
    rate = check_requests(server.served, found)
    if rss.growth > MAX_GROWTH:
        found.add(f"resident memory grew by {rss.growth / 2**20:.0f} MiB")
    must = sum(must_count(s, case) for s in server.served)
    if failures < must:
        found.add(f"{must} requests had to fail, {failures} failures counted")
    check_logs(records.records, found, failures - stats.errors_by_code.get(410, 0))
    assert not found.violations, "\n".join(found.violations) + f"\nlast error: {stats.last_error}"
    return {"requests_per_s": rate, "rss_growth": rss.growth, "requests": len(server.served)}


settings.register_profile(
    "fuzz-ci",
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # (no shrinking in CI: fuzz-long shrinks)
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz-long",
    settings.get_profile("fuzz-ci"),
    derandomize=False,
    database=settings.default.database,
    phases=list(Phase),
)
PROFILE = settings.get_profile(os.environ.get("AIOINFORMER_FUZZ_PROFILE", "fuzz-ci"))
REPLAY = os.environ.get("AIOINFORMER_FUZZ_REPLAY", "")


def replaying(test: Any) -> Any:
    """``test`` replaying the failure whose blob is ``AIOINFORMER_FUZZ_REPLAY``, if set."""
    if not REPLAY:
        return test
    return reproduce_failure(hypothesis.__version__, REPLAY.encode())(test)


@replaying
@settings(PROFILE)
@given(case=cases)
def test_a_hostile_server_never_breaks_the_invariants(case: Case) -> None:
    asyncio.run(run_case(case))

"""What a scenario is: a recording, the state it needs first, the exchanges it leaves out
and why, the normalisation it needs beyond :func:`tests.kubesim.replay.masked`, and (when
KubeSim differs from the recording) what differs."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tests.kubesim.differential.cleanup import NAMESPACES, namespace_of
from tests.kubesim.differential.settings import Need
from tests.support import CONFORMANCE, transcript


@dataclass(frozen=True)
class Namespace:
    """Create namespace ``name`` (POST /api/v1/namespaces), as the recorder did."""

    name: str


@dataclass(frozen=True)
class SetupOf:
    """Send another recording's ``setup`` exchanges (the namespaces and objects it made),
    each expected to succeed; a CRD among them is waited for until it is served."""

    recording: str
    labels: tuple[str, ...] = ()  #: only the setup exchanges whose label starts so ("": all)

    def wants(self, exchange: dict[str, Any]) -> bool:
        """Whether setup exchange ``exchange`` is one to send."""
        return not self.labels or label_of(exchange).startswith(self.labels)


@dataclass(frozen=True)
class ItemsOf:
    """Create the items of a recorded list answer (``exchange``: a label prefix, ``main``
    for the recording's main exchange, as :func:`find` takes it; for a watch, the objects
    of its initial ADDED events) in ``collection``: each item's name, labels,
    annotations, finalizers and spec (or data) as recorded, then its status through /status
    when ``status`` is set and the recording shows one. A later request naming an item's
    recorded uid names the created one's."""

    recording: str
    collection: str
    exchange: str = "main"
    status: bool = False
    namespace: str | None = None  #: only the items in this namespace
    first: int | None = None  #: only the first N items (a watch's initial events)


@dataclass(frozen=True)
class Create:
    """POST ``body`` to ``collection``."""

    collection: str
    body: dict[str, Any]


Prep = Namespace | SetupOf | ItemsOf | Create


@dataclass(frozen=True)
class Mask:
    """A field both sides differ in for a stated reason (two servers, two runs), masked the
    same way on the recorded and the received body before they are compared (or, with
    ``rewrite``, a value the recording describes instead of keeping, rewritten into that
    description where it is the value described).

    ``path`` is dotted keys, ``*`` standing for every key of a mapping or item of a list
    (``items.*.spec.clusterIP``); a path that is absent is left alone. Without ``pattern``
    the value becomes ``"*"``; with it, only the parts of a string value that match it do
    (a generated name's suffix, an RV inside a message). ``exchange`` limits the mask to
    exchanges whose label starts so."""

    path: str
    why: str
    pattern: str | None = None
    exchange: str | None = None
    #: instead of masking: the value as the recording wrote it (a description of it)
    rewrite: Callable[[Any], Any] | None = None

    def applies(self, label: str) -> bool:
        return self.exchange is None or label.startswith(self.exchange)

    def apply(self, doc: Any) -> Any:
        keys = self.path.split(".")
        out = copy.deepcopy(doc)
        for parent, key in _walk(out, keys):
            value = parent[key]
            if self.rewrite is not None:
                parent[key] = self.rewrite(value)
            elif self.pattern is None:
                parent[key] = "*"
            elif isinstance(value, str):
                parent[key] = re.sub(self.pattern, "*", value)
        return out


def _walk(doc: Any, keys: list[str]) -> Iterator[tuple[Any, Any]]:
    """Every (container, key) the dotted ``keys`` reach in ``doc``."""
    head, rest = keys[0], keys[1:]
    if isinstance(doc, dict):
        picks: list[Any] = list(doc) if head == "*" else [head] if head in doc else []
    elif isinstance(doc, list):
        picks = list(range(len(doc))) if head == "*" else []
    else:
        return
    for k in picks:
        if rest:
            yield from _walk(doc[k], rest)
        else:
            yield doc, k


def rv_in_message(path: str = "message") -> Mask:
    """resourceVersions (decimal revisions) written inside a message: each server's own."""
    return Mask(path, "revisions are each server's own", pattern=r"(?<=: )\d+")


def allocated_ips(prefix: str = "") -> tuple[Mask, ...]:
    """A Service's allocated cluster IPs: each server allocates from its own range."""
    why = "allocated from each server's service range"
    return (Mask(f"{prefix}spec.clusterIP", why), Mask(f"{prefix}spec.clusterIPs", why))


@dataclass(frozen=True)
class Scenario:
    """One recording replayed: ``prepare`` first, then its exchanges (setup, the list
    before the watch, the main exchange or the watch with its writes, more_exchanges) in
    order, except those ``leave_out`` names (label prefix → reason); each answer compared
    with the recorded one after :func:`masked` and ``masks``.

    ``kubesim_differs`` names what KubeSim answers differently (the scenario is then an
    expected failure on KubeSim, strictly: fixing KubeSim must remove it); ``needs`` the
    settings of the recording's server its answers depend on (no controllers, an admission
    plugin off, a feature gate: a cluster that differs skips it). A recorded watch's events
    (types and masked objects, bookmarks left out: their timing is the server's) are
    compared with what the watch gets during the writes."""

    recording: str
    prepare: tuple[Prep, ...] = ()
    leave_out: dict[str, str] = field(default_factory=dict)
    masks: tuple[Mask, ...] = ()
    kubesim_differs: str | None = None
    needs: tuple[Need, ...] = ()
    #: the watch's first N events are initial ADDED events in no particular order (RV=0,
    #: sendInitialEvents): compared in name order
    unordered_initial: int = 0
    yaml_bodies: bool = False  #: a text body is YAML: compared as the document it holds
    #: label prefix -> the bytes of a request body the recording kept only parsed
    bodies: dict[str, Callable[[dict[str, Any]], bytes]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The recording's file name without ``.json`` (``22a-ssa-configmap``)."""
        return sorted(CONFORMANCE.glob(f"{self.recording}*.json"))[0].stem

    @cached_property
    def record(self) -> dict[str, Any]:
        return transcript(self.recording)

    @property
    def managed_fields_cut(self) -> bool:
        """Whether the recording cut managedFields of more than 2 entries to 1 (all but
        22a-22d, conformance README)."""
        return not self.recording.startswith("22")

    def watch_list_gate(self) -> bool:
        return bool(self.record["server"].get("feature_gate_WatchList"))

    def users(self) -> set[str]:
        """The identities other than the admin its exchanges use (alice, none, bad)."""
        return {ex["request"].get("auth") or "admin" for ex in self.exchanges()} - {"admin"}

    def exchanges(self) -> list[dict[str, Any]]:
        """The recorded exchanges in the order they were sent (the main watch included as
        one exchange; its writes follow it)."""
        return [ex for _, ex in self.steps()]

    def steps(self) -> list[tuple[str, dict[str, Any]]]:
        """:meth:`exchanges`, each with its part: ``setup`` (state the recording made,
        expected to succeed), ``watch`` (the main watch), ``write`` (sent while it is
        open) or ``exchange``."""
        rec = self.record
        out = [("setup", ex) for ex in rec.get("setup", [])]
        if isinstance(rec.get("list_before_watch"), dict):
            out.append(("exchange", {"label": LIST_BEFORE_WATCH, **rec["list_before_watch"]}))
        if is_watch(rec):
            out.append(("watch", rec))
            out.extend(("write", ex) for ex in rec.get("writes", []))
        else:
            out.append(("exchange", rec))
        out.extend(("exchange", ex) for ex in rec.get("more_exchanges", []))
        return out

    def left_out(self, exchange: dict[str, Any]) -> str | None:
        label = label_of(exchange)
        for prefix, why in self.leave_out.items():
            if label.startswith(prefix):
                return why
        return None

    def body(self, exchange: dict[str, Any]) -> bytes | None:
        """The bytes to send for ``exchange``, where the recording's body is not them."""
        label = label_of(exchange)
        for prefix, rebuild in self.bodies.items():
            if label.startswith(prefix):
                return rebuild(exchange)
        return None

    def namespaces_named(self) -> set[str]:
        """The namespaces its exchanges (those not left out) send requests into, except
        where the recorded answer is that the namespace does not exist."""
        out = set()
        for ex in self.exchanges():
            ns = namespace_of(ex["request"]["path"])
            if ns and not self.left_out(ex) and not _namespace_missing(ex, ns):
                out.add(ns)
        return out

    def sent(self) -> list[dict[str, Any]]:
        """Every exchange it sends: its preparation's (each as the request it makes,
        without a recorded response) and its own."""
        out: list[dict[str, Any]] = []
        for prep in self.prepare:
            if isinstance(prep, SetupOf):
                setup = transcript(prep.recording).get("setup", [])
                out.extend(ex for ex in setup if prep.wants(ex))
                continue
            if isinstance(prep, Namespace):
                path, body = NAMESPACES, {"metadata": {"name": prep.name}}
            elif isinstance(prep, ItemsOf):
                path, body = prep.collection, None
            else:
                path, body = prep.collection, prep.body
            out.append({"request": {"method": "POST", "path": path, "body": body}})
        return out + self.exchanges()

    def namespaces_made(self) -> set[str]:
        """The namespaces its preparation and its own exchanges create."""
        return {
            req["body"]["metadata"]["name"]
            for req in (ex["request"] for ex in self.sent())
            if req["method"] == "POST"
            and req["path"] == NAMESPACES
            and isinstance(req.get("body"), dict)
        }

    def creates_pods(self) -> bool:
        """Whether it creates pods, or tries to (dry runs, invalid pods: admission comes
        first), in a namespace that exists."""
        return any(
            ex["request"]["method"] == "POST"
            and ex["request"]["path"].endswith("/pods")
            and not _namespace_missing(ex, namespace_of(ex["request"]["path"]) or "")
            for ex in self.sent()
        )

    def normalise(self, label: str, doc: Any) -> Any:
        """``doc`` with this scenario's masks for exchange ``label`` applied."""
        for mask in self.masks:
            if mask.applies(label):
                doc = mask.apply(doc)
        return doc


#: The label of a recording's list before its watch, where the recording gives it none.
LIST_BEFORE_WATCH = "LIST before the watch"


def find(recording: str, label: str) -> dict[str, Any]:
    """The exchange of ``recording`` whose label starts with ``label`` (``main``: the main
    one; :data:`LIST_BEFORE_WATCH`: the list before its watch)."""
    for ex in Scenario(recording).exchanges():
        if label_of(ex).startswith(label):
            return ex
    raise AssertionError(f"no exchange {label!r} in {recording}")


def label_of(exchange: dict[str, Any]) -> str:
    """An exchange's label; the main exchange has none and is called ``main``."""
    return str(exchange.get("label") or "main")


def _namespace_missing(exchange: dict[str, Any], namespace: str) -> bool:
    """Whether the recorded answer is namespace ``namespace``'s NotFound."""
    if "response" not in exchange:
        return False
    body = exchange["response"].get("body")
    details = body.get("details") if isinstance(body, dict) else None
    return (
        exchange["response"]["status"] == 404
        and isinstance(details, dict)
        and (details.get("kind"), details.get("name")) == ("namespaces", namespace)
    )


def is_watch(exchange: dict[str, Any]) -> bool:
    return "events" in exchange["response"]

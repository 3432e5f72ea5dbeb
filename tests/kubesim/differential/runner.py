"""Running a :class:`~tests.kubesim.differential.scenario.Scenario` on a target: the state it
needs, then its exchanges in order, each answer compared with the recorded one; a
mismatch fails with the scenario, the exchange's label and a compact diff of the
normalised bodies."""

from __future__ import annotations

import asyncio
import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import yaml

from tests.kubesim.differential import protobuf
from tests.kubesim.differential.cleanup import NAMESPACES, namespace_of
from tests.kubesim.differential.scenario import (
    ItemsOf,
    Namespace,
    Prep,
    Scenario,
    SetupOf,
    find,
    label_of,
)
from tests.kubesim.differential.targets import Target
from tests.kubesim.replay import Answer, Replayer, expand, masked, request
from tests.support import transcript

#: A failure shows at most this many diff lines.
DIFF_LINES = 40
#: Bounded waits for a CRD to be served (a real server takes ~0.1-1 s).
CRD_TIMEOUT = 30.0


@dataclass
class Run:
    """One scenario on one target: what it sent and what it made."""

    scenario: Scenario
    target: Target
    http: aiohttp.ClientSession
    replayer: Replayer
    #: what it may have made that outlives it on a cluster (:func:`made`): the paths of
    #: namespaces and cluster-scoped objects
    made: list[str] = field(default_factory=list)
    compared: int = 0

    def fail(self, ex: dict[str, Any], what: str, want: Any, got: Any) -> None:
        """Fail naming the scenario, the target, the exchange (label, method and path) and
        what differs, with a diff of ``want`` (recorded) and ``got``; credentials redacted."""
        req = ex["request"]
        where = f"{self.scenario.name} [{self.target.name}] {label_of(ex)}"
        message = f"{where} ({req['method']} {req['path']}): {what}\n{body_diff(want, got)}"
        raise AssertionError(self.target.redact(message))


def pretty(doc: Any) -> list[str]:
    if isinstance(doc, str):
        return doc.splitlines()
    return json.dumps(doc, indent=1, sort_keys=True, default=str).splitlines()


def body_diff(want: Any, got: Any) -> str:
    """A unified diff of the recorded (-) and received (+) normalised bodies, cut to
    :data:`DIFF_LINES` lines of at most 200 characters."""
    lines = list(
        difflib.unified_diff(pretty(want), pretty(got), "recorded", "got", n=2, lineterm="")
    )
    cut = [line if len(line) <= 200 else line[:200] + "..." for line in lines[:DIFF_LINES]]
    if len(lines) > DIFF_LINES:
        cut.append(f"... {len(lines) - DIFF_LINES} more diff lines")
    return "\n".join(cut)


# -- the state a scenario needs ------------------------------------------------------------


async def prepare(run: Run, prep: Prep) -> None:
    if isinstance(prep, Namespace):
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": prep.name}}
        await create(run, NAMESPACES, body)
    elif isinstance(prep, SetupOf):
        for ex in transcript(prep.recording).get("setup", []):
            if prep.wants(ex):
                await setup_exchange(run, ex)
    elif isinstance(prep, ItemsOf):
        items = listed_items(find(prep.recording, prep.exchange)["response"])
        for item in items[: prep.first]:
            if prep.namespace and item["metadata"].get("namespace") != prep.namespace:
                continue
            got = await create(run, prep.collection, creatable(item))
            if uid := item["metadata"].get("uid"):  # a later request may name it
                run.replayer.uids.setdefault(uid, got.body["metadata"]["uid"])
            if prep.status and item.get("status"):
                name = item["metadata"]["name"]
                patch = orjson.dumps({"status": item["status"]})
                headers = {"Content-Type": "application/merge-patch+json"}
                path = f"{prep.collection}/{name}/status"
                got = await request(run.http, "PATCH", path, {}, patch, headers)
                why = f"prepare: PATCH {path}: {got.status} {got.body}"
                assert got.status == 200, run.target.redact(why)
    else:
        await create(run, prep.collection, prep.body)


def listed_items(response: dict[str, Any]) -> list[dict[str, Any]]:
    """A recorded list answer's items; for a watch, the objects of its initial ADDED
    events (up to the first event that is not one)."""
    if "events" not in response:
        return list(response["body"]["items"])
    out = []
    for event in (e["line"] for e in response["events"]):
        if event["type"] != "ADDED":
            break
        out.append(event["object"])
    return out


def creatable(item: dict[str, Any]) -> dict[str, Any]:
    """A recorded object as a create body: what a client set, not what the server did."""
    meta = {
        k: v
        for k, v in item["metadata"].items()
        if k in ("name", "namespace", "labels", "annotations", "finalizers", "generateName")
    }
    body = {k: v for k, v in item.items() if k not in ("metadata", "status")}
    return {**body, "metadata": meta}


async def create(run: Run, collection: str, body: dict[str, Any]) -> Answer:
    """POST ``body`` to ``collection``, expected to succeed; a CRD is waited for until it
    is served."""
    data = orjson.dumps(body)
    got = await request(
        run.http, "POST", collection, {}, data, {"Content-Type": "application/json"}
    )
    name = body.get("metadata", {}).get("name")
    why = f"prepare: POST {collection} {name}: {got.status} {got.body}"
    assert got.status == 201, run.target.redact(why)
    made(run, "POST", collection, got)
    if body.get("kind") == "CustomResourceDefinition":
        await crd_served(run, body)
    return got


async def setup_exchange(run: Run, ex: dict[str, Any], *, compared: bool = False) -> Answer:
    """A recorded setup exchange sent again, expected to succeed as it did (``compared``:
    its answer compared with the recorded one, as :func:`compare` does)."""
    req = ex["request"]
    if req["method"] == "GET":  # the recorder's polls: wait as they did, answer not compared
        body = ex["response"].get("body")
        if isinstance(body, dict) and body.get("kind") == "CustomResourceDefinition":
            await crd_served(run, body)
        return await run.replayer.answer(ex)
    if compared:
        got = await compare(run, ex)
    else:
        got = await run.replayer.answer(ex)
        label = label_of(ex)
        assert got.status < 300, run.target.redact(f"setup {label}: {got.status} {got.body}")
    made(run, req["method"], req["path"], got)
    if isinstance(req.get("body"), dict) and req["body"].get("kind") == "CustomResourceDefinition":
        await crd_served(run, req["body"])
    return got


def made(run: Run, method: str, path: str, got: Answer) -> None:
    """Note what a request may have made that outlives the scenario on a server that
    outlives it: the namespace its path names (all it holds goes with it), or a
    cluster-scoped object a write created (a namespace, a CRD, a Node)."""
    if ns := namespace_of(path):
        run.made.append(f"{NAMESPACES}/{ns}")
        return
    if got.status != 201 or not isinstance(got.body, dict):
        return
    meta = got.body.get("metadata") or {}
    if not meta.get("resourceVersion") or str(got.body.get("kind", "")).endswith("Review"):
        return  # a dry run or a review: nothing stored
    if method == "POST" and meta.get("name"):
        run.made.append(f"{path}/{meta['name']}")
    elif method != "POST":
        run.made.append(path)  # created by PUT or by an apply PATCH


async def crd_served(run: Run, crd: dict[str, Any]) -> None:
    """Wait (bounded) until every version of ``crd`` is listed and its discovery document
    names the kind (a real server publishes discovery a moment after it serves the kind)."""
    spec = crd["spec"]
    plural = spec["names"]["plural"]
    for version in spec["versions"]:
        group_version = f"/apis/{spec['group']}/{version['name']}"
        await _until_ok(run, f"{group_version}/{plural}", lambda body: True)
        await _until_ok(
            run,
            group_version,
            lambda body: plural in {r.get("name") for r in body.get("resources", [])},
        )


async def _until_ok(run: Run, path: str, good: Callable[[dict[str, Any]], bool]) -> None:
    """Poll ``path`` until it answers 200 with a body ``good`` accepts, for at most
    :data:`CRD_TIMEOUT` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CRD_TIMEOUT
    while True:
        got = await request(run.http, "GET", path, {}, None, {})
        if got.status == 200 and isinstance(got.body, dict) and good(got.body):
            return
        if loop.time() > deadline:
            raise AssertionError(f"prepare: {path} not served after {CRD_TIMEOUT}s")
        await asyncio.sleep(0.05)


# -- the exchanges --------------------------------------------------------------------------


async def replay(run: Run) -> None:
    """Prepare, then send every exchange not left out and compare its answer."""
    scenario = run.scenario
    for prep in scenario.prepare:
        await prepare(run, prep)
    steps = scenario.steps()
    for i, (part, ex) in enumerate(steps):
        if part == "setup" and (scenario.left_out(ex) or ex["request"]["method"] == "GET"):
            await setup_exchange(run, ex)  # a poll: waited for, not compared
        elif part == "setup":
            await setup_exchange(run, ex, compared=True)
        elif scenario.left_out(ex) or part == "write":
            continue  # a write is sent by its watch
        elif part == "watch":
            writes = [w for p, w in steps[i + 1 :] if p == "write"]
            await watch(run, ex, writes)
        else:
            await compare(run, ex)


async def send_as(run: Run, ex: dict[str, Any]) -> Answer:
    auth = ex["request"].get("auth") or "admin"
    data = run.scenario.body(ex)
    if auth == "admin":
        return await run.replayer.answer(ex, data=data)
    async with run.target.session(auth) as http:
        other = Replayer(http)
        other.uids, other.rvs = run.replayer.uids, run.replayer.rvs
        return await other.answer(ex, data=data)


async def compare(run: Run, ex: dict[str, Any]) -> Answer:
    """Send ``ex`` and compare status, Warning headers and normalised body."""
    got = await send_as(run, ex)
    made(run, ex["request"]["method"], ex["request"]["path"], got)
    want = ex["response"]
    label = label_of(ex)
    run.compared += 1
    if got.status != want["status"]:
        run.fail(ex, f"status {got.status}, recorded {want['status']}", want.get("body"), got.body)
    same_content_type(run, ex, got.headers)
    recorded = sorted(v for k, v in want.get("headers", []) if k == "Warning")
    if sorted(got.warnings) != recorded:
        run.fail(ex, "Warning headers differ", recorded, sorted(got.warnings))
    if "protobuf_envelope" in want:
        if diffs := protobuf.differences(want, got.raw, run.replayer):
            run.fail(ex, "protobuf body differs", "", "\n".join(diffs))
        return got
    if "frames" in want:  # a protobuf watch, read to its end
        protobuf_events(run, ex, got.raw)
        return got
    if want.get("body_not_recorded") or "body" not in want:
        return got
    a = normalised(run, label, run.replayer.ours(expand(want["body"])))
    b = normalised(run, label, got.body)
    if run.scenario.managed_fields_cut:
        b = uncut(a, b)
    if a != b:
        run.fail(ex, "body differs (normalised: - recorded, + got)", a, b)
    return got


def same_content_type(run: Run, ex: dict[str, Any], headers: Any) -> None:
    """The answer's Content-Type is the recorded one, parameters included."""
    recorded, got = ex["response"].get("content_type"), headers.get("Content-Type")
    if recorded and got != recorded:
        run.fail(ex, f"Content-Type {got!r}, recorded {recorded!r}", "", "")


def uncut(recorded: Any, got: Any) -> Any:
    """``got`` with each managedFields list of more than 2 entries cut to the 1 entry its
    recorded counterpart kept, where it has that entry (the recordings cut them so)."""
    if isinstance(recorded, dict) and isinstance(got, dict):
        out = {}
        for k, v in got.items():
            theirs = recorded.get(k)
            if k == "managedFields" and isinstance(theirs, list) and isinstance(v, list):
                cut = len(theirs) == 1 and len(v) > 2 and theirs[0] in v
                out[k] = theirs if cut else v
            else:
                out[k] = uncut(theirs, v)
        return out
    if isinstance(recorded, list) and isinstance(got, list) and len(recorded) == len(got):
        return [uncut(r, g) for r, g in zip(recorded, got, strict=True)]
    return got


def normalised(run: Run, label: str, doc: Any) -> Any:
    """``doc`` (YAML text parsed, where the scenario says so) with every object in it
    :func:`masked` (a Table's rows' objects too), then the scenario's masks applied."""
    if run.scenario.yaml_bodies and isinstance(doc, str):
        doc = yaml.safe_load(doc)
    return run.scenario.normalise(label, masked_deep(doc))


def masked_deep(doc: Any) -> Any:
    """:func:`masked` applied to ``doc`` and to every object (a mapping with a metadata
    mapping) nested in it."""
    if isinstance(doc, list):
        return [masked_deep(v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out = masked(doc) if isinstance(doc.get("metadata"), dict) else doc
    return {k: v if k == "metadata" else masked_deep(v) for k, v in out.items()}


async def watch(run: Run, ex: dict[str, Any], writes: list[dict[str, Any]]) -> None:
    """Open the recorded watch (from the server's RV for the recorded one, for
    the target's ``watch_seconds``), send the writes, read to the end and compare the events other
    than bookmarks: their types, and their objects normalised."""
    req = ex["request"]
    label = label_of(ex)
    query = {**run.replayer.query(req["query"]), "timeoutSeconds": str(run.target.watch_seconds)}
    headers = {k: v for k, v in req.get("headers", []) if k == "Accept"}
    async with run.http.get(req["path"], params=query, headers=headers) as resp:
        if resp.status != ex["response"]["status"]:
            run.fail(ex, f"status {resp.status}", ex["response"]["status"], await resp.text())
        same_content_type(run, ex, resp.headers)
        for write in writes:
            if not run.scenario.left_out(write):
                await compare(run, write)
        if "frames" in ex["response"]:
            return protobuf_events(run, ex, await resp.read())
        lines = [line async for line in resp.content if line.strip()]
    got = [orjson.loads(line) for line in lines]
    recorded = [e["line"] for e in ex["response"]["events"]]
    want_events = [event_view(run, label, e) for e in recorded if e["type"] != "BOOKMARK"]
    got_events = [event_view(run, label, e) for e in got if e["type"] != "BOOKMARK"]
    if n := run.scenario.unordered_initial:  # sorted by name, as neither side promises
        want_events[:n] = sorted(want_events[:n], key=_event_name)
        got_events[:n] = sorted(got_events[:n], key=_event_name)
    if run.scenario.managed_fields_cut:
        got_events = uncut(want_events, got_events)
    run.compared += 1
    if want_events != got_events:
        run.fail(ex, "watch events differ (bookmarks left out)", want_events, got_events)


def protobuf_events(run: Run, ex: dict[str, Any], raw: bytes) -> None:
    """A protobuf watch's frames compared with the recorded ones, in any order (the initial
    events of a watch from the cache are in none): event types, and objects as
    :func:`~tests.kubesim.differential.protobuf.differences` compares them."""
    ours = protobuf.watch_frames(raw)
    recorded = ex["response"]["frames"]
    run.compared += 1
    if len(ours) != len(recorded):
        run.fail(ex, f"{len(ours)} watch frames, recorded {len(recorded)}", "", "")
    for frame in recorded:
        tried = [
            (kind, protobuf.differences(frame, obj, run.replayer) if kind == frame["watchEvent_type"]
             else [f"event {kind}, recorded {frame['watchEvent_type']}"])
            for kind, obj in ours
        ]  # fmt: skip
        match = next((i for i, (_, diffs) in enumerate(tried) if not diffs), None)
        if match is None:
            run.fail(ex, "no watch frame as recorded", "", "\n".join(tried[0][1]))
        else:
            del ours[match]


def _event_name(event: dict[str, Any]) -> str:
    return str(event["object"].get("metadata", {}).get("name"))


def event_view(run: Run, label: str, event: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": event["type"],
        "object": normalised(run, label, run.replayer.ours(event["object"])),
    }

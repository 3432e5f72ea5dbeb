"""Decode cost, retained memory and GC cost of KubeObject against plain JSON decoding.

Builds N realistic pod watch events in the wire form KubeSim and kube-apiserver send
(``{"type":"MODIFIED","object":{apiVersion, kind, metadata with uid, resourceVersion,
creationTimestamp and managedFields, spec, status}}``, made by an in-process KubeSim, ~6 KB
a line) and measures:

* per-event decode time (best of ``--repeat`` passes): ``json.loads``, ``orjson.loads``,
  ``decode_event``, ``decode_event`` + ``drop_managed_fields``, and kubernetes_asyncio model
  deserialization (``json.loads`` + ``ApiClient.__deserialize`` to V1Pod) on 200 events;
* retained memory per object (tracemalloc, over ``--mem-n`` objects): the orjson dict of the
  object, KubeObject, and KubeObject after drop_managed_fields;
* compact mode (a Compactor trained on the first 1000 objects): its decode cost, retained
  memory, and what ``field()`` and ``to_dict()`` cost on a plain and a compact object;
* ``gc.collect()`` time with ``--gc-n`` of each alive (best of 3), against an empty baseline.

Times are CPU time of this process (``time.process_time``), so other work on a shared
machine inflates them less than it would wall-clock times.

    python bench/objects_bench.py --n 20000 --gc-n 100000 --json bench/results/objects.json
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson

from aioinformer._core.compact import TRAIN_SAMPLES, Compactor
from aioinformer._core.objects import KubeObject, decode_event, drop_managed_fields
from aioinformer._harness.workload import realistic_pod
from aioinformer.testing import KubeSim


def make_lines(n: int) -> list[bytes]:
    """MODIFIED events of ``n`` pods ``web{i // 1000}-{i % 1000}`` as KubeSim writes them
    (uid, resourceVersion, creationTimestamp and managedFields set by the server; every
    4th pod still Pending, the others bound and Running)."""
    sim = KubeSim(history_size=10)
    for ns in range(20):
        sim.create("namespaces", {"metadata": {"name": f"ns-{ns}"}})
    for i in range(n):
        running = i % 4 != 3
        pod = realistic_pod(
            f"ns-{i % 20}",
            f"web{i // 1000}",
            i % 1000,
            node=f"node-{i % 50}" if running else None,
            phase="Running",
        )
        sim.create("pods", pod, f"ns-{i % 20}")
    page = sim.api.list(sim.resource("pods"), None)
    prefix = b'{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1",'
    return [prefix + o.raw[1:] + b"}" for o in page.items]


def per_call_us(
    fns: dict[str, Callable[[Any], Any]], lines: list[Any], repeat: int
) -> dict[str, float]:
    """Best-of-``repeat`` mean time per call (one per item of ``lines``: event lines, or
    objects) in microseconds. The candidates take turns in each round, so a load change on
    a shared machine hits them all alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.process_time()
            for line in lines:
                fn(line)
            best[name] = min(best[name], (time.process_time() - t0) / len(lines))
    return {name: t * 1e6 for name, t in best.items()}


def retained_bytes(make: Callable[[bytes], Any], lines: list[bytes]) -> float:
    """Bytes still allocated per object after building one object per line (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [make(line) for line in lines]
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    size = (after - before - sys.getsizeof(kept)) / len(kept)
    del kept
    return size


def gc_seconds(make: Callable[[bytes], Any] | None, lines: list[bytes], n: int) -> float:
    """Best-of-3 ``gc.collect()`` time with ``n`` objects made by ``make`` alive."""
    kept = [make(lines[i % len(lines)]) for i in range(n)] if make is not None else []
    gc.collect()
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        gc.collect()
        best = min(best, time.process_time() - t0)
    del kept
    gc.collect()
    return best


def model_deserializer() -> Callable[[bytes], Any]:
    """What kubernetes_asyncio's watch does per event: json.loads + model deserialization."""
    from kubernetes_asyncio.client import ApiClient

    client: Any = ApiClient.__new__(ApiClient)  # no session needed to deserialize

    def to_model(line: bytes) -> Any:
        return client._ApiClient__deserialize(json.loads(line)["object"], "V1Pod")

    return to_model


def decoded(line: bytes) -> KubeObject:
    obj = decode_event(line)[1]
    assert obj is not None
    return obj


def decoded_dropped(line: bytes) -> KubeObject:
    return drop_managed_fields(decoded(line))


def orjson_object(line: bytes) -> Any:
    return orjson.loads(line)["object"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="events for the timings")
    parser.add_argument("--mem-n", type=int, default=10_000, help="objects for tracemalloc")
    parser.add_argument("--gc-n", type=int, default=100_000, help="live objects for gc timing")
    parser.add_argument("--model-n", type=int, default=200, help="events for the model decode")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()

    lines = make_lines(args.n)
    sizes = [len(line) for line in lines]
    mf_sizes = [len(decoded(line).managed_fields) for line in lines[:1000]]
    timings = per_call_us(
        {
            "json.loads": json.loads,
            "orjson.loads": orjson.loads,
            "decode_event": decode_event,
            "decode_event+drop_managed_fields": decoded_dropped,
        },
        lines,
        args.repeat,
    )
    timings |= per_call_us(
        {"kubernetes_asyncio V1Pod": model_deserializer()}, lines[: args.model_n], 2
    )
    compactor = Compactor()
    for line in lines[:TRAIN_SAMPLES]:
        compactor(decoded_dropped(line))

    def decoded_compact(line: bytes) -> KubeObject:
        return compactor(decoded_dropped(line))

    timings |= per_call_us({"decode_event+drop+compact": decoded_compact}, lines, args.repeat)
    plain = [decoded_dropped(line) for line in lines[: args.mem_n]]
    compact = [compactor(o) for o in plain]
    access = {}
    for label, objs in (("plain", plain), ("compact", compact)):
        access |= per_call_us(
            {
                f"{label} field('status.phase')": lambda o: o.field("status.phase"),
                f"{label} field('spec.containers.0.image')": lambda o: o.field(
                    "spec.containers.0.image"
                ),
                f"{label} to_dict()": lambda o: o.to_dict(),
            },
            objs,
            args.repeat,
        )
    del plain, compact
    mem_lines = lines[: args.mem_n]
    memory = {
        "orjson dict": retained_bytes(orjson_object, mem_lines),
        "orjson dict, managedFields popped": retained_bytes(
            lambda line: _popped(orjson_object(line)), mem_lines
        ),
        "KubeObject": retained_bytes(decoded, mem_lines),
        "KubeObject, drop_managed_fields": retained_bytes(decoded_dropped, mem_lines),
        "KubeObject, drop_managed_fields, compact": retained_bytes(decoded_compact, mem_lines),
    }
    gc_times = {
        "baseline (nothing)": gc_seconds(None, lines, args.gc_n),
        "orjson dict": gc_seconds(orjson_object, lines, args.gc_n),
        "KubeObject": gc_seconds(decoded, lines, args.gc_n),
        "KubeObject, drop_managed_fields": gc_seconds(decoded_dropped, lines, args.gc_n),
    }
    sample = decoded(lines[0])
    tracked = [
        x
        for x in (sample, sample.metadata, sample.labels, sample.annotations, sample.body)
        if gc.is_tracked(x)
    ]

    print(
        f"{args.n} pod events, {statistics.mean(sizes):.0f} B a line "
        f"({min(sizes)}-{max(sizes)}), managedFields {statistics.mean(mf_sizes):.0f} B"
    )
    print(
        f"python {platform.python_version()}, msgspec {msgspec.__version__}, "
        f"orjson {orjson.__version__}"
    )
    print("\ndecode per event                      us     x orjson")
    for name, us in timings.items():
        print(f"  {name:34s} {us:9.2f}   {us / timings['orjson.loads']:6.2f}")
    print("\naccess per object                                 us")
    for name, us in access.items():
        print(f"  {name:44s} {us:9.2f}")
    print(f"\nretained per object ({args.mem_n} objects)      bytes   / orjson dict")
    for name, b in memory.items():
        print(f"  {name:38s} {b:8.0f}   {b / memory['orjson dict']:6.3f}")
    print(f"\ngc.collect() with {args.gc_n} alive        seconds")
    for name, s in gc_times.items():
        print(f"  {name:34s} {s:9.4f}")
    print(f"\nGC-tracked parts of a decoded KubeObject: {len(tracked)}")

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "command": "python bench/objects_bench.py " + " ".join(sys.argv[1:]),
                    "n": args.n,
                    "line_bytes_mean": statistics.mean(sizes),
                    "managed_fields_bytes_mean": statistics.mean(mf_sizes),
                    "decode_us": timings,
                    "access_us": access,
                    "compact_dictionary_bytes": compactor.dictionary_size,
                    "retained_bytes_per_object": memory,
                    "mem_n": args.mem_n,
                    "gc_collect_seconds": gc_times,
                    "gc_n": args.gc_n,
                    "python": platform.python_version(),
                    "msgspec": msgspec.__version__,
                    "orjson": orjson.__version__,
                },
                indent=2,
            )
            + "\n"
        )


def _popped(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"].pop("managedFields", None)
    return obj


if __name__ == "__main__":
    main()

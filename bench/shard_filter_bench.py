"""What a sharded informer's client-side filter costs per object, against a full decode.

A sharded informer checks each object against its hash ranges from the metadata the
decoder reads in its one msgspec pass, before the object is built (body copied, names
interned, UTF-8 checked): ``decode_event(line, keep)`` and ``decode_list(body, keep=...)``.
This measures, per object, on realistic pod events and list pages (the lines of
``bench/objects_bench.py``, ~4.9 KB each):

* ``shard_hash`` of a uid (FNV-1a 64 in Python), and the filter's cached lookup;
* a watch event: fully decoded without a filter; dropped by the filter (hash cold: the
  object's first event; warm: a later one); kept by the filter (the check's overhead);
* a list page of 500: decoded whole without a filter; with the filter keeping 1/2 and 1/4
  (client mode: the server ignored the selector), cold and warm.

Times are the best of ``--repeat`` passes of CPU time (``time.process_time``), in
microseconds per object.

    python bench/shard_filter_bench.py --n 4000 --json bench/results/shard_filter.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import orjson
from objects_bench import make_lines

from aioinformer import ShardSelector, shard_hash
from aioinformer._client.shardfilter import ShardFilter
from aioinformer._core.objects import decode_event, decode_list


def per_object_us(
    fn: Callable[[Any], object], items: Sequence[Any], objects: int, repeat: int,
    before: Callable[[], object] = lambda: None,
) -> float:  # fmt: skip
    """Best-of-``repeat`` CPU time of ``fn`` over ``items``, per object (``objects`` in
    all), in microseconds; ``before`` runs untimed before each pass."""
    best = float("inf")
    for _ in range(repeat):
        before()
        t0 = time.process_time()
        for item in items:
            fn(item)
        best = min(best, time.process_time() - t0)
    return best / objects * 1e6


def pages_of(lines: list[bytes], size: int = 500) -> list[bytes]:
    """The events' objects as PodList pages of ``size`` (items without kind/apiVersion, as
    a typed list has them)."""
    objs = [orjson.loads(line)["object"] for line in lines]
    for obj in objs:
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
    return [
        orjson.dumps(
            {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": "5"},
                "items": objs[i : i + size],
            }
        )
        for i in range(0, len(objs), size)
    ]


def measure(n: int, repeat: int) -> dict[str, float]:
    lines = make_lines(n)
    uids = [orjson.loads(line)["object"]["metadata"]["uid"] for line in lines]
    out: dict[str, float] = {"line_bytes": sum(map(len, lines)) / len(lines)}
    out["shard_hash_us"] = per_object_us(shard_hash, uids, n, repeat)
    # watch events: every object outside (dropped) or inside (kept) one filter
    nothing = ShardFilter(ShardSelector(((0, 1),)), name="bench")  # keeps (almost) none
    everything = ShardFilter(ShardSelector(((0, 1 << 64),)), name="bench")
    out["event_full_decode_us"] = per_object_us(decode_event, lines, n, repeat)

    def forget() -> None:
        for f in (nothing, everything):
            f._verdicts.clear()
            f._older.clear()

    drop = nothing.keeps_meta
    out["event_dropped_cold_us"] = per_object_us(
        lambda line: decode_event(line, drop), lines, n, repeat, forget
    )
    out["event_dropped_warm_us"] = per_object_us(
        lambda line: decode_event(line, drop), lines, n, repeat
    )
    keep = everything.keeps_meta
    out["event_kept_cold_us"] = per_object_us(
        lambda line: decode_event(line, keep), lines, n, repeat, forget
    )
    out["event_kept_warm_us"] = per_object_us(
        lambda line: decode_event(line, keep), lines, n, repeat
    )
    # list pages (client mode: no shardInfo echo, every item checked)
    pages = pages_of(lines)
    out["list_full_decode_us"] = per_object_us(
        lambda body: decode_list(body, skip_bad=True), pages, n, repeat
    )
    for share in (2, 4):
        filt = ShardFilter(ShardSelector.of_buckets([0], share), name="bench")

        def cold(filt: ShardFilter = filt) -> None:
            filt._verdicts.clear()
            filt._older.clear()

        def run(body: bytes, filt: ShardFilter = filt) -> object:
            return decode_list(body, skip_bad=True, keep=filt.list_filter)

        out[f"list_keep_1_of_{share}_cold_us"] = per_object_us(run, pages, n, repeat, cold)
        out[f"list_keep_1_of_{share}_warm_us"] = per_object_us(run, pages, n, repeat)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=4000, help="pods (events, list items)")
    parser.add_argument("--repeat", type=int, default=5, help="passes; the best is kept")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    results = measure(args.n, args.repeat)
    for name, value in results.items():
        print(f"{name:32} {value:8.2f}")
    if args.json:
        doc = {
            "benchmark": "shard_filter",
            "command": "python bench/shard_filter_bench.py " + " ".join(sys.argv[1:]),
            "n": args.n,
            "repeat": args.repeat,
            "python": platform.python_version(),
            "msgspec": msgspec.__version__,
            "results": results,
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""One benchmark script, two checkouts, one run: the figures before and after a change.

    python bench/before_after.py --before /path/to/old-checkout --rounds 3 \
        --figures '_vs_orjson_decode$' --json bench/results/pipeline_before_after.json \
        -- bench/pipeline_bench.py --objects 10000 --events 50000 --rounds 1

Runs ``SCRIPT ARGS --json FILE`` from each checkout in turn (before, after, before, after,
...), each in a fresh process with that checkout (and its ``kubesim/src``, if it has one)
first on ``PYTHONPATH``, so both sides meet the same machine phases; then, for every
numeric figure whose dotted name matches ``--figures`` (nested dicts are flattened:
``sizes.10000.SnapshotStore.list_ms``), the median of each side over the rounds and the
ratio after/before. A ratio between the two sides of one run is what can be trusted on a
shared, noisy machine; absolute figures are reported for context only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from aioinformer._harness.procstats import machine_info

HERE = Path(__file__).resolve().parent


NAMED_BY: tuple[str | tuple[str, ...], ...] = (
    "mode",
    "name",
    ("pods", "pipeline", "read", "readers"),
)
"""A list of dicts is flattened item by item, each named by the first of these keys (or
key tuples, their values joined by ``-``) it has (``rows.compact.rss_per_pod_bytes``,
``rows.20000-thread-none-0.sync_seconds``); other lists are left out."""


def _row_name(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    for key in NAMED_BY:
        keys = (key,) if isinstance(key, str) else key
        if all(k in item for k in keys):
            return "-".join(str(item[k]) for k in keys)
    return None


def flatten(value: Any, prefix: str = "") -> dict[str, float]:
    """The numeric leaves of ``value`` by dotted name (strings, and lists of anything but
    named dicts, left out)."""
    if isinstance(value, dict):
        out: dict[str, float] = {}
        for key, inner in value.items():
            out.update(flatten(inner, f"{prefix}{key}."))
        return out
    if isinstance(value, list):
        out = {}
        for item in value:
            name = _row_name(item)
            if name is not None:
                out.update(flatten(item, f"{prefix}{name}."))
        return out
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {prefix.rstrip("."): float(value)}
    return {}


def commit_of(checkout: Path) -> str:
    """The checkout's commit (with ``+dirty`` when it has changes), or "unknown"."""
    try:
        head = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def run_once(checkout: Path, script: str, args: list[str]) -> dict[str, Any]:
    """One run of ``script`` from ``checkout``; its JSON result."""
    path = [str(checkout)]
    if (checkout / "kubesim" / "src").is_dir():
        path.append(str(checkout / "kubesim" / "src"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        subprocess.run(
            [sys.executable, str(checkout / script), *args, "--json", str(out)],
            cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        result: dict[str, Any] = json.loads(out.read_text())
    return result


def summarise(runs: list[dict[str, Any]], figures: str) -> list[dict[str, Any]]:
    """Per matching figure: the median of each side, the ratio after/before and each
    side's range, from the runs (``side`` "before" or "after", ``result``)."""
    pattern = re.compile(figures)
    sides: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    for run in runs:
        for name, value in flatten(run["result"]).items():
            if pattern.search(name):
                sides[run["side"]].setdefault(name, []).append(value)
    rows = []
    for name in sorted(set(sides["before"]) & set(sides["after"])):
        before, after = sides["before"][name], sides["after"][name]
        b, a = statistics.median(before), statistics.median(after)
        rows.append(
            {
                "figure": name,
                "before": b,
                "after": a,
                "ratio": round(a / b, 3) if b else None,
                "before_range": [min(before), max(before)],
                "after_range": [min(after), max(after)],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", required=True, type=Path, help="the old checkout")
    parser.add_argument("--after", type=Path, default=HERE.parent, help="the new checkout")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side")
    parser.add_argument("--figures", default=".", help="regex of the figures to compare")
    parser.add_argument("--note", default="", help="what the two sides are")
    parser.add_argument("--json", metavar="PATH", required=True)
    parser.add_argument("script", help="the benchmark script, relative to each checkout")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments (after --)")
    opts = parser.parse_args(argv)
    args = [a for a in opts.args if a != "--"]
    runs = []
    for round_ in range(opts.rounds):
        for side, checkout in (("before", opts.before), ("after", opts.after)):
            print(f"round {round_ + 1}/{opts.rounds}: {side} ({checkout})", flush=True)
            result = run_once(checkout.resolve(), opts.script, args)
            runs.append({"side": side, "round": round_, "result": result})
    report = {
        "command": " ".join(["python", "bench/before_after.py", *(argv or sys.argv[1:])]),
        "note": opts.note,
        "script": opts.script,
        "args": args,
        "figures": opts.figures,
        "before": {"path": str(opts.before), "commit": commit_of(opts.before)},
        "after": {"path": str(opts.after), "commit": commit_of(opts.after)},
        "machine": machine_info(),
        "summary": summarise(runs, opts.figures),
        "runs": runs,
    }
    Path(opts.json).write_text(json.dumps(report, indent=1) + "\n")
    for row in report["summary"]:
        print(f"{row['figure']:<60} {row['before']:>12.4g} {row['after']:>12.4g} {row['ratio']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

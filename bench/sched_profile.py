"""Where a process's threads wait, from the kernel's scheduler events (``perf sched``).

    python bench/staleness_bench.py --pods 20000 --readers 4 --modes scan --pipelines thread \
        --informer-cpu 0 --duration 25 &
    python bench/sched_profile.py --pid "$(pgrep -f bench._stalechild)" --seconds 6 \
        --json bench/results/sched_profile.json --note "4 scan readers" [--append]

``--append`` adds the profile to the file's ``profiles`` (one file, several loads).

Records ``perf sched record`` (every CPU) for ``--seconds`` and summarises, per thread of
``--pid`` (named by ``py-spy dump`` when it is installed: Python 3.11 gives its threads
no name the kernel knows), each time the thread was switched in:

* ``sched_delay``: from its wake-up to running on a CPU: waiting for a CPU, what no
  lock in the process explains (another thread of the process pinned to the same CPU,
  or another process, holds it until the scheduler preempts it);
* ``run``: how long it then ran;
* ``off_cpu``: how long it had been off a CPU before that wake-up: asleep, in a system
  call (``epoll_wait``) or waiting for a lock (a Python thread waits for the
  interpreter's lock asleep on a condition variable).

Percentiles p50/p99/max in milliseconds, and the run time's total. A pipeline thread
whose ``sched_delay`` p99 is as long as its events' latency p99 is waiting for a CPU,
not for the interpreter's lock. Needs ``perf`` (linux-perf) and the right to trace
scheduler events (root, or ``kernel.perf_event_paranoid`` <= 1).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aioinformer._harness.contention import percentile
from aioinformer._harness.procstats import machine_info

_THREAD = re.compile(r'^Thread (?:0x[0-9a-fA-F]+ )?\(?(\d+)\)?.*?"(.*)"', re.M)
_TIMEHIST = re.compile(
    r"^\s*\d+\.\d+\s+\[\d+\]\s+\S+?\[(\d+)(?:/\d+)?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", re.M
)


def parse_timehist(text: str) -> dict[int, dict[str, list[float]]]:
    """``perf sched timehist`` lines -> per thread id: its ``off_cpu``, ``sched_delay``
    and ``run`` times (ms) in order, one per switch-in."""
    out: dict[int, dict[str, list[float]]] = {}
    for tid, wait, delay, run in _TIMEHIST.findall(text):
        times = out.setdefault(int(tid), {"off_cpu": [], "sched_delay": [], "run": []})
        times["off_cpu"].append(float(wait))
        times["sched_delay"].append(float(delay))
        times["run"].append(float(run))
    return out


def thread_names(dump: str) -> dict[int, str]:
    """``py-spy dump`` output -> thread id: name."""
    return {int(tid): name for tid, name in _THREAD.findall(dump)}


def summary(times: dict[str, list[float]]) -> dict[str, Any]:
    """Percentiles (ms) of one thread's times."""
    out: dict[str, Any] = {"switches": len(times["run"]), "run_total_ms": sum(times["run"])}
    for kind, values in times.items():
        for q, name in ((0.5, "p50"), (0.99, "p99")):
            out[f"{kind}_{name}_ms"] = round(percentile(values, q), 3)
        out[f"{kind}_max_ms"] = round(max(values, default=0.0), 3)
    out["run_total_ms"] = round(out["run_total_ms"], 1)
    return out


def kernel_config() -> dict[str, str]:
    """The kernel's tick rate and preemption model (``/proc/config.gz``, when readable): a
    woken thread the scheduler does not run at once may wait for the next tick."""
    import gzip

    try:
        text = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
    except OSError:
        return {}
    wanted = ("CONFIG_HZ=", "CONFIG_PREEMPT_NONE=", "CONFIG_PREEMPT_VOLUNTARY=", "CONFIG_PREEMPT=")
    return dict(
        line.split("=", 1) for line in text.splitlines() if line.startswith(wanted)
    )  # fmt: skip


def profile(pid: int, seconds: float) -> dict[str, Any]:
    """Record, then summarise every thread of ``pid`` that ran."""
    names: dict[int, str] = {}
    if shutil.which("py-spy"):
        dump = subprocess.run(
            ["py-spy", "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60
        )
        names = thread_names(dump.stdout)
    tids = {int(t) for t in os.listdir(f"/proc/{pid}/task")}
    with tempfile.TemporaryDirectory() as tmp:
        data = str(Path(tmp) / "perf.data")
        subprocess.run(
            ["perf", "sched", "record", "-o", data, "--", "sleep", str(seconds)],
            check=True, capture_output=True, timeout=seconds + 120,
        )  # fmt: skip
        hist = subprocess.run(
            ["perf", "sched", "timehist", "-i", data, "-p", str(pid)],
            check=True, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    threads = parse_timehist(hist.stdout)
    return {
        "pid": pid,
        "seconds": seconds,
        "threads": [
            {"tid": tid, "name": names.get(tid, "?"), **summary(times)}
            for tid, times in sorted(threads.items(), key=lambda kv: -len(kv[1]["run"]))
            if tid in tids
        ],
    }


def main(argv: Iterable[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--pid", type=int, required=True, help="the process to profile")
    p.add_argument("--seconds", type=float, default=6.0, help="how long to record")
    p.add_argument("--note", default="", help="what the process was doing")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--append", action="store_true", help="add to the --json file's profiles")
    args = p.parse_args(list(argv) if argv is not None else None)
    if shutil.which("perf") is None:
        print("sched_profile: perf is not installed (linux-perf)", file=sys.stderr)
        return 2
    result = {
        "command": "python bench/sched_profile.py " + " ".join(sys.argv[1:]),
        "note": args.note,
        "machine": machine_info(),
        "load_1m": os.getloadavg()[0],
        "kernel": kernel_config(),
        "cpus_of_pid": sorted(os.sched_getaffinity(args.pid)),
        **profile(args.pid, args.seconds),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        path = Path(args.json)
        profiles = []
        if args.append and path.exists():
            profiles = json.loads(path.read_text())["profiles"]
        path.write_text(json.dumps({"profiles": [*profiles, result]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

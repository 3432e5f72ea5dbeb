"""The contention scenario (kubernetes/kubernetes#130767) at full scale: four caches, one workload.

KubeSim runs in its own process with OWNERS x PODS StatefulSet-like pods and the
scheduler/kubelet emulation; each configuration (locked+scan, locked+index, snapshot+scan,
snapshot+index) gets a fresh informer process with K readers fetching one owner's pods back
to back while the sim makes RATE kubelet status writes per second, and the example
operators (PodSet, NodeAgent) run with and without their freshness protection on the same
shared pods informer. See aioinformer/_harness/contention.py for what is measured and how.

    python bench/contention.py --json bench/results/contention.json --plot bench/results/contention.png

Defaults are the incident's scale (200 x 1000 pods, 4 readers, 2,000 writes/s for 60 s per
configuration); ``python -m aioinformer demo`` is the same program at a one-minute scale.
"""

from __future__ import annotations

import argparse
import sys

from aioinformer._cli.demo import add_contention_arguments, run_demo
from aioinformer._cli.helpformat import HelpFormatter

FULL_SCALE = {
    "owners": 200,
    "pods_per_owner": 1000,
    "readers": 4,
    "rate": 2000.0,
    "duration": 60.0,
    "nodes": 100,
    "podsets": 4,
    "replicas": 10,
    "locked_batch": 1,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/contention.py", description=__doc__, formatter_class=HelpFormatter
    )
    add_contention_arguments(parser, FULL_SCALE)
    return run_demo(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

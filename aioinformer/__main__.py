"""Command line: ``python -m aioinformer COMMAND``.

Commands: ``demo`` (the seed scenario on an embedded KubeSim), ``sim`` (serve KubeSim
until interrupted), ``dump`` (sync an informer and print its objects), ``top`` (live
informer statistics), ``soak`` (seeded fault mixes, a summary).
"""

from __future__ import annotations

import argparse
import sys

from aioinformer._cli import demo as _demo
from aioinformer._cli import inspect as _cli
from aioinformer._cli.sim import add_sim_parser, run_sim
from aioinformer._cli.soak import add_soak_parser, run_soak

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one command; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m aioinformer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _demo.add_demo_parser(sub)
    add_sim_parser(sub)
    _cli.add_parsers(sub)
    add_soak_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo.run_demo(args)
    if args.command == "sim":
        return run_sim(args)
    if args.command == "soak":
        return run_soak(args)
    return _cli.run(args)


if __name__ == "__main__":
    sys.exit(main())

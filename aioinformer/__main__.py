"""Command line: ``python -m aioinformer COMMAND``.

Commands: ``sim`` (serve KubeSim until interrupted). ``demo``, ``dump``, ``top`` and
``soak`` arrive with their issues.
"""

from __future__ import annotations

import argparse
import sys

from .testing._cli import add_sim_parser, run_sim

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one command; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m aioinformer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_sim_parser(sub)
    args = parser.parse_args(argv)
    assert args.command == "sim"
    return run_sim(args)


if __name__ == "__main__":
    sys.exit(main())

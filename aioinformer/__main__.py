"""Command line: ``python -m aioinformer COMMAND``.

Commands: ``sim`` (serve KubeSim until interrupted), ``dump`` (sync an informer and print
its objects), ``top`` (live informer statistics). ``demo`` and ``soak`` arrive with their
issues.
"""

from __future__ import annotations

import argparse
import sys

from . import _cli
from .testing._cli import add_sim_parser, run_sim

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one command; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m aioinformer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_sim_parser(sub)
    _cli.add_parsers(sub)
    args = parser.parse_args(argv)
    if args.command == "sim":
        return run_sim(args)
    return _cli.run(args)


if __name__ == "__main__":
    sys.exit(main())

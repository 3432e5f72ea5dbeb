"""Command line: ``python -m aioinformer COMMAND``.

Commands: ``run`` (run an operator), ``rbac`` (the RBAC rules an operator needs),
``demo`` (the seed scenario on an embedded KubeSim), ``sim`` (serve KubeSim until
interrupted), ``dump`` (sync an informer and print its objects), ``top`` (live informer
statistics), ``soak`` (seeded fault mixes, a summary).

A command whose optional dependencies are not installed says which extra to install, in
one line, and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["build_parser", "main"]

_EXTRA_OF = {"rich": "cli", "matplotlib": "demo", "cryptography": "kubesim", "yaml": "kubesim"}
"""The extra that brings each optional top-level module."""


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one command; returns the process exit code."""
    try:
        return _main(argv)
    except ModuleNotFoundError as exc:
        extra = _EXTRA_OF.get((exc.name or "").partition(".")[0])
        if extra is None:
            raise
        print(
            f"python -m aioinformer: this command needs {exc.name!r}, which comes with the "
            f"{extra!r} extra: pip install 'aioinformer[{extra}]'",
            file=sys.stderr,
        )
        return 2


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command, built without running any (the docs check their
    command lines against it)."""
    from aioinformer._cli import demo, inspect, rbac, run, sim, soak

    parser = argparse.ArgumentParser(prog="python -m aioinformer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_run_parser(sub)
    rbac.add_rbac_parser(sub)
    demo.add_demo_parser(sub)
    sim.add_sim_parser(sub)
    inspect.add_parsers(sub)
    soak.add_soak_parser(sub)
    return parser


def _main(argv: list[str] | None) -> int:
    from aioinformer._cli import demo, inspect, rbac, run, sim, soak

    args = build_parser().parse_args(argv)
    if args.command == "run":
        return run.run_operator(args)
    if args.command == "rbac":
        return rbac.run_rbac(args)
    if args.command == "demo":
        return demo.run_demo(args)
    if args.command == "sim":
        return sim.run_sim(args)
    if args.command == "soak":
        return soak.run_soak(args)
    return inspect.run(args)

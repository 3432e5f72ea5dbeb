"""Command line: ``python -m aioinformer COMMAND`` (or the ``aioinformer`` script).

:func:`build_parser` registers every command; :func:`main` runs one. Building the parser
imports no optional dependency, so ``--help`` works on a bare install; a command whose
optional dependencies are missing says which extra to install, in one line, and exits with
status 2 (:mod:`aioinformer._cli.extras`).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys

from aioinformer._cli import demo, inspect, rbac, run, sim, soak
from aioinformer._cli.extras import extra_for, missing_extra
from aioinformer._cli.helpformat import PROG, HelpFormatter

__all__ = ["build_parser", "main"]

_DESCRIPTION = """
Asyncio informers and controllers for Kubernetes, and KubeSim, an embedded Kubernetes API
server to run them against.

Run "python -m aioinformer COMMAND --help" for the options of one command.
"""

_EPILOG = """
examples:
  python -m aioinformer sim --port 0 --kubeconfig-out sim.kubeconfig
  python -m aioinformer top --kubeconfig sim.kubeconfig pods configmaps
  python -m aioinformer run examples/podset.py:build --kubeconfig sim.kubeconfig
  python -m aioinformer rbac examples/podset.py:build --name podset-operator
"""


def version() -> str:
    """``aioinformer X.Y.Z``: the installed distribution's version (the package's own
    ``__version__`` when it runs from a source tree that is not installed)."""
    try:
        return f"aioinformer {importlib.metadata.version('aioinformer')}"
    except importlib.metadata.PackageNotFoundError:
        from aioinformer import __version__

        return f"aioinformer {__version__}"


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (see :func:`main`)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=_DESCRIPTION.strip("\n"),
        epilog=_EPILOG.strip("\n"),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_run_parser(sub)
    rbac.add_rbac_parser(sub)
    demo.add_demo_parser(sub)
    sim.add_sim_parser(sub)
    inspect.add_parsers(sub)
    soak.add_soak_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one command; returns the process exit code."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # (a command may run itself again)
    try:
        return _run(args)
    except ModuleNotFoundError as exc:
        module = (exc.name or "").partition(".")[0]
        extra = extra_for(args.command, module)
        if extra is None:
            raise
        print(missing_extra(args.command, module, extra), file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
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

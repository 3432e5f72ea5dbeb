"""``python -m aioinformer COMMAND`` and the ``aioinformer`` command: see
:mod:`aioinformer._cli.main`. The process ends as soon as the command returned
(:func:`~aioinformer._cli.exiting.exit_promptly`); :func:`main` itself returns the status."""

from __future__ import annotations

from typing import NoReturn

from aioinformer._cli.exiting import exit_promptly
from aioinformer._cli.main import main

__all__ = ["console", "main"]


def console() -> NoReturn:
    """Run the command line's command, then end the process with its exit status."""
    exit_promptly(main())


if __name__ == "__main__":
    console()

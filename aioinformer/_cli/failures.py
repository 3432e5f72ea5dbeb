"""How a command that cannot do its work ends: one line on stderr and an exit status, no
traceback.

The exit statuses of every command:

* 0: done (for ``run``, ``sim`` and ``top``: stopped by SIGTERM or SIGINT);
* 1: it ran and what it checks failed (a seed that did not converge), or it failed on the
  way (``dump``'s sync timed out, the server answered 500);
* 2: a usage or configuration error, found before any work is done: a bad argument, a
  missing extra (:mod:`aioinformer._cli.extras`), a kubeconfig that is missing,
  malformed or lacks the context asked for, credentials the cluster rejects (401), a
  server that cannot be reached (a wrong address, a certificate that does not verify,
  nothing listening), a port that is taken;
* 130: a second signal (``run``), or Ctrl-C where the command has no graceful stop.

The line is ``python -m aioinformer COMMAND: WHAT IS WRONG``, on one line whatever the
server answered, and holds no secret: the client layer leaves credentials out of every
error it makes, and the line is cleaned again of every secret a live client knows and of
echoed Authorization values (:mod:`aioinformer._core.redact`).
"""

from __future__ import annotations

import sys

from aioinformer._cli.helpformat import PROG
from aioinformer._core.errors import (
    AioinformerError,
    ConfigError,
    TransportError,
    Unauthorized,
)
from aioinformer._core.redact import redact_known

__all__ = ["CONFIGURATION_ERRORS", "error_line", "exit_status", "fail", "single"]

CONFIGURATION_ERRORS: tuple[type[AioinformerError], ...] = (
    ConfigError,
    Unauthorized,
    TransportError,
)
"""What exit status 2 answers: the user's options or kubeconfig must change."""


def single(exc: BaseException) -> BaseException:
    """``exc``, or the one exception an exception group (a task group's) holds, at any
    depth; a group of several stays as it is."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def exit_status(exc: BaseException) -> int:
    """2 for a configuration error (:data:`CONFIGURATION_ERRORS`), else 1."""
    return 2 if isinstance(single(exc), CONFIGURATION_ERRORS) else 1


def error_line(command: str, exc: BaseException) -> str:
    """``python -m aioinformer COMMAND: MESSAGE``, on one line and without secrets."""
    text = " ".join(redact_known(str(single(exc))).split()) or type(exc).__name__
    return f"{PROG} {command}: {text}"


def fail(command: str, exc: BaseException) -> int:
    """Print :func:`error_line` on stderr; the exit status (:func:`exit_status`)."""
    print(error_line(command, exc), file=sys.stderr, flush=True)
    return exit_status(exc)

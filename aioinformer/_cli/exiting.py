"""Ending the process once a command has returned its exit status, without the
interpreter's teardown.

After ``python -m aioinformer run`` logged ``stopped``, everything the operator owned is
closed: what remains of a normal exit is tearing down every module (kubernetes_asyncio's
thousands of model classes: about 0.3 s), which delays a rolling update's next pod and
holds the terminal for nothing. :func:`exit_promptly` keeps what a normal exit promises
(non-daemon threads are waited for, ``atexit`` handlers run, logging handlers and the
standard streams are flushed) and skips the teardown.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
from typing import NoReturn

__all__ = ["exit_promptly"]


def exit_promptly(code: int) -> NoReturn:
    """Exit the process with status ``code``: after the non-daemon threads ended, the
    ``atexit`` handlers ran and the logs and standard streams were flushed, as at a normal
    exit, but without tearing the interpreter's modules down."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # (a closed pipe: nothing to say it on)
            stream.flush()
    os._exit(code)

"""Health endpoints: ``/healthz`` (alive) and ``/readyz`` (ready), as controller-runtime's.

:class:`Health` holds named checks and answers both endpoints on the manager's metrics
server, the way kube-apiserver does: ``200 ok`` when every check passes, ``503`` naming the
failing ones otherwise; ``?verbose`` lists every check (``[+]name ok`` / ``[-]name failed:
reason``); ``/healthz/<name>`` and ``/readyz/<name>`` ask one check; ``?exclude=name``
skips one. Built in:

* ``/healthz``: ``loop`` (the event loop answered within the watchdog's threshold) — a
  handler that runs at all shows the loop is responsive, the watchdog shows it stayed so;
* ``/readyz``: ``informers`` (every informer of the manager synced) and ``controllers``
  (running: leading, with leader election, or waiting as a warm standby, which is ready).

A check is ``check() -> bool | str | None``, sync or async: True or None pass, False or a
string (the reason) fail; one that raises fails with the exception's text.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from aiohttp import web

__all__ = ["Check", "Health"]

Check: TypeAlias = Callable[[], "bool | str | Awaitable[bool | str | None] | None"]
"""A health check: passes with True/None, fails with False or a reason string."""


class Health:
    """The liveness and readiness checks of one process (see the module docstring)."""

    def __init__(self) -> None:
        self.liveness: dict[str, Check] = {}
        """``/healthz`` checks by name."""
        self.readiness: dict[str, Check] = {}
        """``/readyz`` checks by name."""

    def add_liveness_check(self, name: str, check: Check) -> None:
        """Add a ``/healthz`` check."""
        self.liveness[name] = check

    def add_readiness_check(self, name: str, check: Check) -> None:
        """Add a ``/readyz`` check."""
        self.readiness[name] = check

    async def results(self, checks: dict[str, Check]) -> dict[str, str | None]:
        """Each check's failure reason (None: it passed)."""
        out: dict[str, str | None] = {}
        for name, check in checks.items():
            try:
                value = check()
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                out[name] = f"{type(exc).__name__}: {exc}"
                continue
            out[name] = None if value is True or value is None else (value or "failed")
        return out

    def routes(self, app: web.Application) -> None:
        """Add ``/healthz``, ``/readyz`` and their per-check paths to ``app``."""
        for path, checks in (("/healthz", self.liveness), ("/readyz", self.readiness)):
            handler = self._handler(path.strip("/"), checks)
            app.router.add_get(path, handler)
            app.router.add_get(path + "/{check}", handler)

    def _handler(
        self, what: str, checks: dict[str, Check]
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            one = request.match_info.get("check")
            if one is not None and one not in checks:
                return web.Response(status=404, text="404 page not found\n")
            chosen = {one: checks[one]} if one is not None else dict(checks)
            for name in request.query.getall("exclude", []):
                chosen.pop(name, None)
            results = await self.results(chosen)
            failed = {n: r for n, r in results.items() if r is not None}
            status = 503 if failed else 200
            if "verbose" not in request.query:
                text = (
                    "ok"
                    if not failed
                    else "".join(f"[-]{n} failed: {r}\n" for n, r in failed.items())
                )
                return web.Response(status=status, text=text)
            lines = [f"[-]{n} failed: {r}" if r else f"[+]{n} ok" for n, r in results.items()]
            verdict = f"{what} check failed" if failed else f"{what} check passed"
            return web.Response(status=status, text="\n".join([*lines, verdict]) + "\n")

        return handle

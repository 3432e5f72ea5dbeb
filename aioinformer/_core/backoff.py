"""Exponential backoff with jitter, reset after a healthy period (client-go's reflector policy).

Contract (the defaults are client-go's reflector: 800 ms doubling to 30 s, jitter 1.0,
reset after 2 minutes of health):

* The *base* delay starts at ``initial`` and is multiplied by ``factor`` after every
  :meth:`Backoff.next_delay`, capped at ``maximum``.
* Each returned delay is the base plus up to ``jitter`` times the base, drawn from the
  injectable ``rng`` (``base * (1 + jitter * rng())``, as ``wait.Jitter`` does). Delays
  therefore lie in ``[base, base * (1 + jitter))``: with the defaults a run of failures
  waits 0.8-1.6 s, 1.6-3.2 s, ... and at most ``maximum * (1 + jitter)`` = 60 s. The jitter
  is never clipped at ``maximum``, so a fleet of clients that failed together does not
  retry in lockstep once they all reach the cap.
* :meth:`Backoff.note_healthy` with a duration of at least ``reset_after`` seconds (a watch
  that stayed up that long) resets the base to ``initial``; :meth:`Backoff.reset` does so
  unconditionally.

A Backoff is stateful: give each watcher its own.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from aioinformer._core.errors import ConfigError

__all__ = ["Backoff"]


class Backoff:
    """Exponential backoff with multiplicative jitter and a reset after a healthy period.

    Example::

        backoff = Backoff(initial=0.8, maximum=30.0, jitter=0.0)
        [backoff.next_delay() for _ in range(3)]   # [0.8, 1.6, 3.2]
        backoff.note_healthy(150.0)                # stayed up longer than reset_after
        backoff.next_delay()                       # 0.8 again
    """

    __slots__ = ("_base", "factor", "initial", "jitter", "maximum", "reset_after", "rng")

    def __init__(
        self,
        *,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if initial <= 0 or maximum < initial:
            raise ConfigError(f"need 0 < initial <= maximum, got {initial} and {maximum}")
        if factor < 1 or jitter < 0 or reset_after < 0:
            raise ConfigError("need factor >= 1, jitter >= 0 and reset_after >= 0")
        self.initial = initial
        """The first base delay, in seconds."""
        self.maximum = maximum
        """The cap on the base delay, in seconds (jitter comes on top)."""
        self.factor = factor
        """Growth of the base delay per failure."""
        self.jitter = jitter
        """Up to this fraction of the base is added at random."""
        self.reset_after = reset_after
        """A healthy period at least this long resets the base delay."""
        self.rng = rng
        """Returns a float in [0, 1); injectable for tests."""
        self._base = initial

    @property
    def current(self) -> float:
        """The base of the next delay (without jitter), in seconds."""
        return self._base

    def next_delay(self) -> float:
        """The delay to wait before the next attempt; grows the base for the one after."""
        base = self._base
        self._base = min(base * self.factor, self.maximum)
        return base * (1.0 + self.jitter * self.rng())

    def reset(self) -> None:
        """Forget past failures: the next delay is based on ``initial`` again."""
        self._base = self.initial

    def note_healthy(self, duration: float) -> None:
        """Report that things worked for ``duration`` seconds; resets the backoff when that
        is at least ``reset_after``."""
        if duration >= self.reset_after:
            self.reset()

    def __repr__(self) -> str:
        return (
            f"Backoff(initial={self.initial}, maximum={self.maximum}, factor={self.factor}, "
            f"jitter={self.jitter}, reset_after={self.reset_after}, current={self._base})"
        )

"""Counting the instants at which two replicas hold one thing at once.

:class:`Overlaps` samples, every 50 (virtual) milliseconds, what each replica counts as
its own right now (``holdings()``: replica label -> the things it holds: "leader", shard
numbers, keys) and counts the samples at which one thing was held by two replicas. The
labels tell replicas apart, not identities: two replicas with the same identity are two
labels.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping

PERIOD = 0.05


class Overlaps:
    def __init__(self, holdings: Callable[[], Mapping[str, Iterable[object]]]) -> None:
        self.holdings = holdings
        self.samples = 0
        self.overlapping = 0
        """Samples at which something was held by more than one replica."""
        self.examples: list[str] = []
        """The first few of them, described."""

    @property
    def seconds(self) -> float:
        """How long (virtual seconds, to the sampling period) two replicas held one thing."""
        return round(self.overlapping * PERIOD, 2)

    def summary(self) -> str:
        return (
            f"{self.overlapping} of {self.samples} samples ({self.seconds} s) had two holders"
            + (f", e.g. {self.examples}" if self.examples else "")
        )

    def sample(self) -> None:
        holders: dict[object, list[str]] = {}
        for replica, held in self.holdings().items():
            for thing in held:
                holders.setdefault(thing, []).append(replica)
        shared = {thing: who for thing, who in holders.items() if len(who) > 1}
        self.samples += 1
        if shared:
            self.overlapping += 1
            if len(self.examples) < 3:
                loop_time = asyncio.get_running_loop().time()
                self.examples.append(f"t={loop_time:.2f}: {shared}")

    async def run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(PERIOD)


@contextlib.asynccontextmanager
async def sampled(
    holdings: Callable[[], Mapping[str, Iterable[object]]],
) -> AsyncIterator[Overlaps]:
    """Sample ``holdings`` while the block runs (at least 20 samples, or the test fails)."""
    overlaps = Overlaps(holdings)
    task = asyncio.create_task(overlaps.run())
    try:
        yield overlaps
    finally:
        task.cancel()
        await asyncio.wait([task])
    assert overlaps.samples > 20, overlaps.samples

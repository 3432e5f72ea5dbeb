"""aioinformer: asyncio informers for Kubernetes.

Async watch tasks feed an async DeltaFIFO; one writer applies deltas to a persistent store
and publishes immutable snapshots, so readers never take a lock and never slow the writer.
``aioinformer.testing.KubeSim`` is the embedded API server the tests, examples and
benchmarks run on.
"""

from __future__ import annotations

from ._errors import AioinformerError as AioinformerError
from ._errors import ConfigError as ConfigError

__version__ = "0.1.0"

__all__ = ["AioinformerError", "ConfigError", "__version__"]

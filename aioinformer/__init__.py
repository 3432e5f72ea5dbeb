"""aioinformer: asyncio informers for Kubernetes.

Async watch tasks feed an async DeltaFIFO; one writer applies deltas to a persistent store
and publishes immutable snapshots, so readers never take a lock and never slow the writer;
reads can wait for freshness (``wait_for_rv``, ``query(min_rv=...)``, ``wait_until``).
``aioinformer.testing.KubeSim`` is the embedded API server the tests, examples and
benchmarks run on.

    async with InformerFactory(api_client) as factory:
        pods = factory.informer("v1", "pods")
        await factory.wait_for_sync()
        mine = pods.snapshot().by_index("controller", owner_uid)
"""

from __future__ import annotations

from aioinformer._cache.factory import InformerFactory as InformerFactory
from aioinformer._cache.fifo import Bookmark as Bookmark
from aioinformer._cache.fifo import Delta as Delta
from aioinformer._cache.fifo import DeltaFIFO as DeltaFIFO
from aioinformer._cache.fifo import DeltaType as DeltaType
from aioinformer._cache.fifo import FifoStatistics as FifoStatistics
from aioinformer._cache.fifo import Replace as Replace
from aioinformer._cache.handlers import Subscription as Subscription
from aioinformer._cache.index import by_controller_uid as by_controller_uid
from aioinformer._cache.index import by_field as by_field
from aioinformer._cache.index import by_label as by_label
from aioinformer._cache.index import by_namespace as by_namespace
from aioinformer._cache.informer import Informer as Informer
from aioinformer._cache.informer import InformerStats as InformerStats
from aioinformer._cache.store import Change as Change
from aioinformer._cache.store import LockedStore as LockedStore
from aioinformer._cache.store import Snapshot as Snapshot
from aioinformer._cache.store import SnapshotStore as SnapshotStore
from aioinformer._coordination.leader import LeaderElector as LeaderElector
from aioinformer._coordination.sharding import ShardManager as ShardManager
from aioinformer._core.errors import AioinformerError as AioinformerError
from aioinformer._core.errors import ApiStatusError as ApiStatusError
from aioinformer._core.errors import ClosedError as ClosedError
from aioinformer._core.errors import ConfigError as ConfigError
from aioinformer._core.errors import DecodeError as DecodeError
from aioinformer._core.errors import FreshnessTimeout as FreshnessTimeout
from aioinformer._core.errors import HandlerError as HandlerError
from aioinformer._core.errors import StreamError as StreamError
from aioinformer._core.errors import WatchError as WatchError
from aioinformer._core.errors import WatchExpired as WatchExpired
from aioinformer._core.errors import WouldBlock as WouldBlock
from aioinformer._core.objects import KubeObject as KubeObject
from aioinformer._core.objects import ObjectMeta as ObjectMeta
from aioinformer._core.objects import OwnerReference as OwnerReference
from aioinformer._core.objects import decode_object as decode_object
from aioinformer._core.objects import drop_managed_fields as drop_managed_fields
from aioinformer._runtime.controller import Controller as Controller
from aioinformer._runtime.controller import Result as Result
from aioinformer._runtime.controller import generation_changed as generation_changed
from aioinformer._runtime.expectations import Expectations as Expectations
from aioinformer._runtime.manager import LeaderElection as LeaderElection
from aioinformer._runtime.manager import Manager as Manager
from aioinformer._runtime.manager import Sharding as Sharding
from aioinformer._runtime.manager import run as run
from aioinformer._runtime.metrics import Metrics as Metrics
from aioinformer._runtime.ratelimit import BucketRateLimiter as BucketRateLimiter
from aioinformer._runtime.ratelimit import (
    ItemExponentialFailureRateLimiter as ItemExponentialFailureRateLimiter,
)
from aioinformer._runtime.ratelimit import MaxOfRateLimiter as MaxOfRateLimiter
from aioinformer._runtime.ratelimit import RateLimiter as RateLimiter
from aioinformer._runtime.ratelimit import (
    default_controller_rate_limiter as default_controller_rate_limiter,
)
from aioinformer._runtime.workqueue import WorkQueue as WorkQueue

__version__ = "0.1.0"

__all__ = [
    "AioinformerError",
    "ApiStatusError",
    "Bookmark",
    "BucketRateLimiter",
    "Change",
    "ClosedError",
    "ConfigError",
    "Controller",
    "DecodeError",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Expectations",
    "FifoStatistics",
    "FreshnessTimeout",
    "HandlerError",
    "Informer",
    "InformerFactory",
    "InformerStats",
    "ItemExponentialFailureRateLimiter",
    "KubeObject",
    "LeaderElection",
    "LeaderElector",
    "LockedStore",
    "Manager",
    "MaxOfRateLimiter",
    "Metrics",
    "ObjectMeta",
    "OwnerReference",
    "RateLimiter",
    "Replace",
    "Result",
    "ShardManager",
    "Sharding",
    "Snapshot",
    "SnapshotStore",
    "StreamError",
    "Subscription",
    "WatchError",
    "WatchExpired",
    "WorkQueue",
    "WouldBlock",
    "__version__",
    "by_controller_uid",
    "by_field",
    "by_label",
    "by_namespace",
    "decode_object",
    "default_controller_rate_limiter",
    "drop_managed_fields",
    "generation_changed",
    "run",
]

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

from ._controller import Controller as Controller
from ._controller import Result as Result
from ._controller import generation_changed as generation_changed
from ._errors import AioinformerError as AioinformerError
from ._errors import ApiStatusError as ApiStatusError
from ._errors import ClosedError as ClosedError
from ._errors import ConfigError as ConfigError
from ._errors import DecodeError as DecodeError
from ._errors import FreshnessTimeout as FreshnessTimeout
from ._errors import HandlerError as HandlerError
from ._errors import StreamError as StreamError
from ._errors import WatchError as WatchError
from ._errors import WatchExpired as WatchExpired
from ._errors import WouldBlock as WouldBlock
from ._expectations import Expectations as Expectations
from ._factory import InformerFactory as InformerFactory
from ._fifo import Bookmark as Bookmark
from ._fifo import Delta as Delta
from ._fifo import DeltaFIFO as DeltaFIFO
from ._fifo import DeltaType as DeltaType
from ._fifo import FifoStatistics as FifoStatistics
from ._fifo import Replace as Replace
from ._handlers import Subscription as Subscription
from ._index import by_controller_uid as by_controller_uid
from ._index import by_field as by_field
from ._index import by_label as by_label
from ._index import by_namespace as by_namespace
from ._informer import Informer as Informer
from ._informer import InformerStats as InformerStats
from ._leader import LeaderElector as LeaderElector
from ._manager import LeaderElection as LeaderElection
from ._manager import Manager as Manager
from ._manager import Sharding as Sharding
from ._manager import run as run
from ._metrics import Metrics as Metrics
from ._objects import KubeObject as KubeObject
from ._objects import ObjectMeta as ObjectMeta
from ._objects import OwnerReference as OwnerReference
from ._objects import decode_object as decode_object
from ._objects import drop_managed_fields as drop_managed_fields
from ._ratelimit import BucketRateLimiter as BucketRateLimiter
from ._ratelimit import ItemExponentialFailureRateLimiter as ItemExponentialFailureRateLimiter
from ._ratelimit import MaxOfRateLimiter as MaxOfRateLimiter
from ._ratelimit import RateLimiter as RateLimiter
from ._ratelimit import default_controller_rate_limiter as default_controller_rate_limiter
from ._sharding import ShardManager as ShardManager
from ._store import Change as Change
from ._store import LockedStore as LockedStore
from ._store import Snapshot as Snapshot
from ._store import SnapshotStore as SnapshotStore
from ._workqueue import WorkQueue as WorkQueue

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

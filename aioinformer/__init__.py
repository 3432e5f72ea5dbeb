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
from ._objects import KubeObject as KubeObject
from ._objects import ObjectMeta as ObjectMeta
from ._objects import OwnerReference as OwnerReference
from ._objects import decode_object as decode_object
from ._objects import drop_managed_fields as drop_managed_fields
from ._store import Change as Change
from ._store import LockedStore as LockedStore
from ._store import Snapshot as Snapshot
from ._store import SnapshotStore as SnapshotStore

__version__ = "0.1.0"

__all__ = [
    "AioinformerError",
    "ApiStatusError",
    "Bookmark",
    "Change",
    "ClosedError",
    "ConfigError",
    "DecodeError",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "FifoStatistics",
    "FreshnessTimeout",
    "HandlerError",
    "Informer",
    "InformerFactory",
    "InformerStats",
    "KubeObject",
    "LockedStore",
    "ObjectMeta",
    "OwnerReference",
    "Replace",
    "Snapshot",
    "SnapshotStore",
    "StreamError",
    "Subscription",
    "WatchError",
    "WatchExpired",
    "WouldBlock",
    "__version__",
    "by_controller_uid",
    "by_field",
    "by_label",
    "by_namespace",
    "decode_object",
    "drop_managed_fields",
]

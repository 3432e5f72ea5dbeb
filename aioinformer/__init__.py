"""aioinformer: asyncio informers for Kubernetes.

Async watch tasks feed an in-order FIFO; one writer applies its deltas to a persistent store
and publishes immutable snapshots, so readers never take a lock and never slow the writer;
reads can wait for freshness (``wait_for_rv``, ``query(min_rv=...)``, ``wait_until``).
Controllers run on top (:class:`Manager`, :class:`Controller`), and
``aioinformer.testing.KubeSim`` is the embedded API server to test them on.

    async with InformerFactory(api_client) as factory:
        pods = factory.informer("v1", "pods")
        await factory.wait_for_sync()
        mine = pods.snapshot().by_index("controller", owner_uid)

The public API is what this module exports (``__all__``); everything in the underscored
subpackages is private.
"""

from __future__ import annotations

from aioinformer._cache.deltas import Change as Change
from aioinformer._cache.deltas import ChangeType as ChangeType
from aioinformer._cache.factory import InformerFactory as InformerFactory
from aioinformer._cache.factory import InformerOptions as InformerOptions
from aioinformer._cache.factory import InformerSpec as InformerSpec
from aioinformer._cache.handle import InformerHandle as InformerHandle
from aioinformer._cache.handlers import ChangeStream as ChangeStream
from aioinformer._cache.handlers import HandlerFailure as HandlerFailure
from aioinformer._cache.handlers import Subscription as Subscription
from aioinformer._cache.handlers import SubscriptionStatistics as SubscriptionStatistics
from aioinformer._cache.index import IndexFunc as IndexFunc
from aioinformer._cache.index import by_controller_uid as by_controller_uid
from aioinformer._cache.index import by_field as by_field
from aioinformer._cache.index import by_label as by_label
from aioinformer._cache.index import by_namespace as by_namespace
from aioinformer._cache.informer import Informer as Informer
from aioinformer._cache.informer import InformerStatistics as InformerStatistics
from aioinformer._cache.process import ProcessSettings as ProcessSettings
from aioinformer._cache.snapshot_store import Snapshot as Snapshot
from aioinformer._cache.watcher import WatchOptions as WatchOptions
from aioinformer._client.client import Client as Client
from aioinformer._client.client import ObjectLike as ObjectLike
from aioinformer._client.client import Operation as Operation
from aioinformer._client.client import PatchType as PatchType
from aioinformer._client.client import WriteHook as WriteHook
from aioinformer._client.client import WriteRequest as WriteRequest
from aioinformer._client.client import merge_diff as merge_diff
from aioinformer._client.discovery import ApiResource as ApiResource
from aioinformer._client.discovery import Discovery as Discovery
from aioinformer._client.shardfilter import ShardMode as ShardMode
from aioinformer._coordination.labeler import ShardLabeler as ShardLabeler
from aioinformer._coordination.labeler import ShardLabelerStatistics as ShardLabelerStatistics
from aioinformer._coordination.leader import LeaderElector as LeaderElector
from aioinformer._coordination.leader import LeadershipScope as LeadershipScope
from aioinformer._coordination.sharding import ShardManager as ShardManager
from aioinformer._coordination.sharding import shard_of as shard_of
from aioinformer._core.conditions import Condition as Condition
from aioinformer._core.conditions import ConditionStatus as ConditionStatus
from aioinformer._core.conditions import find_condition as find_condition
from aioinformer._core.conditions import is_condition_true as is_condition_true
from aioinformer._core.conditions import remove_condition as remove_condition
from aioinformer._core.conditions import set_condition as set_condition
from aioinformer._core.errors import AioinformerError as AioinformerError
from aioinformer._core.errors import AlreadyExists as AlreadyExists
from aioinformer._core.errors import ApiError as ApiError
from aioinformer._core.errors import BadRequest as BadRequest
from aioinformer._core.errors import Cause as Cause
from aioinformer._core.errors import ClosedError as ClosedError
from aioinformer._core.errors import ConfigError as ConfigError
from aioinformer._core.errors import Conflict as Conflict
from aioinformer._core.errors import DecodeError as DecodeError
from aioinformer._core.errors import Expired as Expired
from aioinformer._core.errors import Forbidden as Forbidden
from aioinformer._core.errors import FreshnessTimeout as FreshnessTimeout
from aioinformer._core.errors import Invalid as Invalid
from aioinformer._core.errors import NotFound as NotFound
from aioinformer._core.errors import NotOwner as NotOwner
from aioinformer._core.errors import ServerError as ServerError
from aioinformer._core.errors import ServerTimeout as ServerTimeout
from aioinformer._core.errors import StatusError as StatusError
from aioinformer._core.errors import TooManyRequests as TooManyRequests
from aioinformer._core.errors import TransportError as TransportError
from aioinformer._core.errors import Unauthorized as Unauthorized
from aioinformer._core.errors import WouldBlock as WouldBlock
from aioinformer._core.objects import KubeObject as KubeObject
from aioinformer._core.objects import ObjectMeta as ObjectMeta
from aioinformer._core.objects import OwnerReference as OwnerReference
from aioinformer._core.objects import Transform as Transform
from aioinformer._core.objects import decode_object as decode_object
from aioinformer._core.objects import drop_managed_fields as drop_managed_fields
from aioinformer._core.owners import owner_reference as owner_reference
from aioinformer._core.owners import set_owner as set_owner
from aioinformer._core.projection import Projection as Projection
from aioinformer._core.projection import project as project
from aioinformer._core.shardbuckets import bucket_label as bucket_label
from aioinformer._core.shardbuckets import bucket_label_selector as bucket_label_selector
from aioinformer._core.shardbuckets import bucket_of as bucket_of
from aioinformer._core.shardbuckets import buckets_of_selector as buckets_of_selector
from aioinformer._core.shardbuckets import buckets_selector as buckets_selector
from aioinformer._core.shardbuckets import owner_bucket as owner_bucket
from aioinformer._core.shardbuckets import shard_buckets as shard_buckets
from aioinformer._core.shardbuckets import uid_bucket as uid_bucket
from aioinformer._core.shardkeys import ShardField as ShardField
from aioinformer._core.shardkeys import ShardSelector as ShardSelector
from aioinformer._core.shardkeys import shard_hash as shard_hash
from aioinformer._runtime.context import Reconciling as Reconciling
from aioinformer._runtime.context import current_reconcile as current_reconcile
from aioinformer._runtime.context import install_log_context as install_log_context
from aioinformer._runtime.controller import Controller as Controller
from aioinformer._runtime.controller import ControllerOptions as ControllerOptions
from aioinformer._runtime.controller import ControllerStatistics as ControllerStatistics
from aioinformer._runtime.controller import Mapper as Mapper
from aioinformer._runtime.controller import Predicate as Predicate
from aioinformer._runtime.controller import Reconciler as Reconciler
from aioinformer._runtime.controller import Result as Result
from aioinformer._runtime.controller import generation_changed as generation_changed
from aioinformer._runtime.events import EventRecorder as EventRecorder
from aioinformer._runtime.events import EventType as EventType
from aioinformer._runtime.expectations import Expectations as Expectations
from aioinformer._runtime.finalizers import finalizer as finalizer
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
from aioinformer._runtime.shardcaches import ShardedCaches as ShardedCaches
from aioinformer._runtime.target import BuildFunction as BuildFunction
from aioinformer._runtime.workqueue import WorkQueue as WorkQueue
from aioinformer._runtime.workqueue import WorkQueueStatistics as WorkQueueStatistics

__version__ = "0.1.0"

__all__ = [
    "AioinformerError",
    "AlreadyExists",
    "ApiError",
    "ApiResource",
    "BadRequest",
    "BucketRateLimiter",
    "BuildFunction",
    "Cause",
    "Change",
    "ChangeStream",
    "ChangeType",
    "Client",
    "ClosedError",
    "Condition",
    "ConditionStatus",
    "ConfigError",
    "Conflict",
    "Controller",
    "ControllerOptions",
    "ControllerStatistics",
    "DecodeError",
    "Discovery",
    "EventRecorder",
    "EventType",
    "Expectations",
    "Expired",
    "Forbidden",
    "FreshnessTimeout",
    "HandlerFailure",
    "IndexFunc",
    "Informer",
    "InformerFactory",
    "InformerHandle",
    "InformerOptions",
    "InformerSpec",
    "InformerStatistics",
    "Invalid",
    "ItemExponentialFailureRateLimiter",
    "KubeObject",
    "LeaderElection",
    "LeaderElector",
    "LeadershipScope",
    "Manager",
    "Mapper",
    "MaxOfRateLimiter",
    "Metrics",
    "NotFound",
    "NotOwner",
    "ObjectLike",
    "ObjectMeta",
    "Operation",
    "OwnerReference",
    "PatchType",
    "Predicate",
    "ProcessSettings",
    "Projection",
    "RateLimiter",
    "Reconciler",
    "Reconciling",
    "Result",
    "ServerError",
    "ServerTimeout",
    "ShardField",
    "ShardLabeler",
    "ShardLabelerStatistics",
    "ShardManager",
    "ShardMode",
    "ShardSelector",
    "ShardedCaches",
    "Sharding",
    "Snapshot",
    "StatusError",
    "Subscription",
    "SubscriptionStatistics",
    "TooManyRequests",
    "Transform",
    "TransportError",
    "Unauthorized",
    "WatchOptions",
    "WorkQueue",
    "WorkQueueStatistics",
    "WouldBlock",
    "WriteHook",
    "WriteRequest",
    "__version__",
    "bucket_label",
    "bucket_label_selector",
    "bucket_of",
    "buckets_of_selector",
    "buckets_selector",
    "by_controller_uid",
    "by_field",
    "by_label",
    "by_namespace",
    "current_reconcile",
    "decode_object",
    "default_controller_rate_limiter",
    "drop_managed_fields",
    "finalizer",
    "find_condition",
    "generation_changed",
    "install_log_context",
    "is_condition_true",
    "merge_diff",
    "owner_bucket",
    "owner_reference",
    "project",
    "remove_condition",
    "run",
    "set_condition",
    "set_owner",
    "shard_buckets",
    "shard_hash",
    "shard_of",
    "uid_bucket",
]

# Tracebacks and reprs show the public names (httpx does the same).
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or (callable(_obj) and hasattr(_obj, "__code__")):
        try:
            _obj.__module__ = "aioinformer"
        except (AttributeError, TypeError):  # (a C type that does not allow it)
            pass
del _name, _obj

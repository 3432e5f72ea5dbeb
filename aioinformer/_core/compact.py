"""Compact objects for huge caches: each body compressed with a dictionary of its resource.

The opt-in compact mode (``InformerFactory(compact=True)``, ``factory.informer(...,
compact=True)``) keeps every cached object's body (spec, status, ...: most of its bytes)
as a zstd frame compressed with a dictionary trained on the first bodies of the resource:
objects of one resource share most of their JSON, so a pod's 3 KB body takes a few hundred
bytes. Metadata stays typed and decoded, so keys, indexes, selectors and ``obj.metadata``
cost what they cost for a plain object.

Contract:

* A :class:`Compactor` is the transform that makes them (one per informer, run by its
  watcher after the user's transform). It keeps the first :data:`TRAIN_SAMPLES` bodies it
  sees as they are (those objects stay plain until their next version) and trains the
  dictionary on them; every later object comes out as a :class:`CompactObject`. If the
  samples cannot make a dictionary (too few, too alike or too different), bodies are
  compressed without one. Bodies shorter than :data:`MIN_BODY` stay plain.
* A :class:`CompactObject` is a :class:`~aioinformer.KubeObject` in every respect but
  memory: ``body`` returns the exact bytes it was made from (decompressed on each access,
  nothing cached: it never changes), so ``field()``, ``body_dict()``, ``to_dict()`` and
  ``to_model()`` give what the plain object gives, for an extra decompression per call
  (bench/memory_bench.py reports it). Equality compares the compressed form: a compact
  object equals only compact objects of the same informer with the same content.
* Thread safety: an object may be read on any thread (each thread decompresses with a
  decompressor of its own); a Compactor may be called from any thread.
"""

from __future__ import annotations

import threading
from typing import Any

import zstandard

from aioinformer._core.objects import KubeObject

__all__ = ["LEVEL", "MIN_BODY", "TRAIN_SAMPLES", "CompactObject", "Compactor"]

TRAIN_SAMPLES = 1000
"""Bodies a :class:`Compactor` trains its dictionary on (kept plain)."""

DICT_SIZE = 32 * 1024
"""The most bytes the trained dictionary holds."""

LEVEL = 3
"""The zstd compression level (zstd's default)."""

MIN_BODY = 64
"""Bodies shorter than this many bytes are kept plain (a frame would not be smaller)."""

_STORED_BODY: Any = KubeObject.__dict__["body"]  # the slot of KubeObject's ``body`` field


class _Codec:
    """One dictionary's compressor and its per-thread decompressors."""

    def __init__(self, dictionary: zstandard.ZstdCompressionDict | None) -> None:
        self.dictionary = dictionary
        self._compressor = zstandard.ZstdCompressor(
            level=LEVEL, dict_data=dictionary, write_checksum=False, write_dict_id=False
        )
        self._lock = threading.Lock()
        self._local = threading.local()

    def deflate(self, data: bytes) -> bytes:
        with self._lock:  # (a compressor is not to be used by two threads at once)
            frame = self._compressor.compress(data)
        return memoryview(frame).tobytes()  # exact size: compress() keeps its bound

    def inflate(self, frame: bytes) -> bytes:
        try:
            decompressor = self._local.decompressor
        except AttributeError:
            decompressor = self._local.decompressor = zstandard.ZstdDecompressor(
                dict_data=self.dictionary
            )
        data: bytes = decompressor.decompress(frame)
        return data


class CompactObject(KubeObject, frozen=True, gc=False):
    """A :class:`~aioinformer.KubeObject` whose body is kept compressed (see the module
    docstring); made by a :class:`Compactor`."""

    codec: _Codec | None = None
    """How the body was compressed (shared by the informer's objects)."""

    @property  # type: ignore[misc]
    def body(self) -> bytes:
        """The body's JSON (decompressed anew)."""
        frame: bytes = _STORED_BODY.__get__(self, KubeObject)
        codec = self.codec
        return codec.inflate(frame) if codec is not None else frame

    @property
    def stored_size(self) -> int:
        """How many bytes the compressed body takes."""
        return len(_STORED_BODY.__get__(self, KubeObject))

    @property
    def plain_size(self) -> int:
        """How many bytes the body takes decompressed (read from the frame's header)."""
        frame: bytes = _STORED_BODY.__get__(self, KubeObject)
        if self.codec is None:
            return len(frame)
        size: int = zstandard.frame_content_size(frame)
        return size


class Compactor:
    """The transform that makes :class:`CompactObject` s (see the module docstring)."""

    def __init__(self, samples: int = TRAIN_SAMPLES) -> None:
        self._samples: list[bytes | bytearray | memoryview] = []
        self._wanted = samples
        self._codec: _Codec | None = None if samples > 0 else _Codec(None)
        self._lock = threading.Lock()

    @property
    def trained(self) -> bool:
        """Whether objects are compressed now (the dictionary is made)."""
        return self._codec is not None

    @property
    def dictionary_size(self) -> int:
        """The dictionary's size in bytes (0 before it is made, or without one)."""
        codec = self._codec
        return len(codec.dictionary.as_bytes()) if codec and codec.dictionary else 0

    def __call__(self, obj: KubeObject) -> KubeObject:
        if type(obj) is not KubeObject:  # compact already (or a subclass of the user's)
            return obj
        body = obj.body
        if len(body) < MIN_BODY:
            return obj
        codec = self._codec
        if codec is None:
            self._sample(body)
            return obj
        m = obj
        return CompactObject(
            m.api_version, m.kind, m.metadata, m.key, m.rv, codec.deflate(body),
            m.managed_fields, codec,
        )  # fmt: skip

    def _sample(self, body: bytes) -> None:
        with self._lock:
            if self._codec is not None:
                return
            self._samples.append(body)
            if len(self._samples) >= self._wanted:
                self._codec = _Codec(_train(self._samples))
                self._samples = []


def _train(samples: list[bytes | bytearray | memoryview]) -> zstandard.ZstdCompressionDict | None:
    """A dictionary for ``samples``, or None when zstd cannot make one from them."""
    try:
        return zstandard.train_dictionary(DICT_SIZE, samples, level=LEVEL)
    except zstandard.ZstdError:
        return None

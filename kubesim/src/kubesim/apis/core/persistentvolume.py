"""PersistentVolumes: a completed DELETE answers the object."""

from __future__ import annotations

from kubesim.registry.resource import Strategy

__all__ = ["PersistentVolumeStrategy"]


class PersistentVolumeStrategy(Strategy):
    """PersistentVolumes (see the module docstring)."""

    returns_deleted_object = True

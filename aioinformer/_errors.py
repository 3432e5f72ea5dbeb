"""The exception tree of aioinformer. Every error the library raises derives from
:class:`AioinformerError`, so ``except aioinformer.AioinformerError`` catches them all::

    AioinformerError
    └── ConfigError          a bad option or argument, found before anything runs
"""

from __future__ import annotations

__all__ = ["AioinformerError", "ConfigError"]


class AioinformerError(Exception):
    """Root of every error aioinformer raises."""


class ConfigError(AioinformerError, ValueError):
    """An invalid option or argument (also a ``ValueError``)."""

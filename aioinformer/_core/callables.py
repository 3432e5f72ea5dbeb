"""Checks that what is registered as a function is one: a :class:`ConfigError` when it is
registered (naming the parameter and what was given), not a ``TypeError`` logged once per
object, or per reconcile, later."""

from __future__ import annotations

from collections.abc import Iterable

from aioinformer._core.errors import ConfigError

__all__ = ["check_callable", "check_callables"]


def check_callable(value: object, what: str) -> None:
    """A :class:`ConfigError` unless ``value`` is callable (``what`` names the
    parameter, e.g. ``"transform"``)."""
    if not callable(value):
        raise ConfigError(f"{what} must be a function (callable), not {value!r}")


def check_callables(values: Iterable[object], what: str) -> list[object]:
    """``values`` as a list, each callable; a :class:`ConfigError` naming ``what`` (and the
    position) otherwise, or when ``values`` is one function instead of a sequence of them."""
    if callable(values):
        name = getattr(values, "__name__", repr(values))
        raise ConfigError(f"{what} is a sequence of functions, not one: {what}=[{name}]")
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ConfigError(f"{what} must be a sequence of functions, not {values!r}")
    found = list(values)
    for i, value in enumerate(found):
        check_callable(value, f"{what}[{i}]")
    return found

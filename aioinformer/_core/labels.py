"""Label selectors evaluated client-side, with the API server's semantics.

:func:`label_matcher` parses a label selector string as apimachinery's ``labels.Parse``
does and returns a predicate over an object's labels. The syntax is a comma-separated list
of requirements, all of which must hold (the empty selector matches everything):

* ``key`` (the label exists), ``!key`` (it does not);
* ``key=value``, ``key==value`` (exists with that value), ``key!=value`` (absent or
  another value);
* ``key in (a,b)`` (exists with one of them), ``key notin (a,b)`` (absent or none of them);
* ``key>n``, ``key<n`` (exists and its value is an integer above / below ``n``).

A string that is not a selector is a :class:`~aioinformer.ConfigError` naming the part that
is wrong. Used where the library must know whether an informer with a label selector will
see an object (the manager's read-your-writes and expectations).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from aioinformer._core.errors import ConfigError

__all__ = ["LabelMatcher", "label_matcher"]

LabelMatcher = Callable[[Mapping[str, str]], bool]
"""Whether an object with these labels matches the selector."""

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_EXISTS = re.compile(rf"(!?)\s*({_KEY})")
_SET = re.compile(rf"({_KEY})\s+(in|notin)\s*\(([^()]*)\)")
_COMPARE = re.compile(rf"({_KEY})\s*(==|=|!=|>|<)\s*({_VALUE})")
_PARTS = re.compile(r",(?![^(]*\))")  # commas outside parentheses


def label_matcher(selector: str) -> LabelMatcher:
    """The predicate of ``selector`` (see the module docstring)."""
    checks = [_requirement(part.strip(), selector) for part in _PARTS.split(selector)]
    if checks == [None]:  # the empty selector
        return lambda _labels: True
    if None in checks:
        raise ConfigError(f"label selector {selector!r}: an empty requirement")
    return lambda labels: all(check(labels) for check in checks if check is not None)


def _requirement(part: str, selector: str) -> LabelMatcher | None:
    if not part:
        return None
    if m := _EXISTS.fullmatch(part):
        negated, key = m.group(1) == "!", m.group(2)
        return lambda labels: (key in labels) != negated
    if m := _SET.fullmatch(part):
        key, op = m.group(1), m.group(2)
        values = frozenset(v.strip() for v in m.group(3).split(","))
        if not all(re.fullmatch(_VALUE, v) for v in values):
            raise ConfigError(f"label selector {selector!r}: bad values in {part!r}")
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _COMPARE.fullmatch(part):
        key, op, value = m.groups()
        if op in ("=", "=="):
            return lambda labels: labels.get(key) == value
        if op == "!=":
            return lambda labels: labels.get(key) != value
        if not value.lstrip("-").isdigit():
            raise ConfigError(f"label selector {selector!r}: {part!r} needs an integer")
        bound = int(value)
        above = op == ">"
        return lambda labels: _compare(labels.get(key), bound, above)
    raise ConfigError(f"label selector {selector!r}: cannot parse {part!r}")


def _compare(label: str | None, bound: int, above: bool) -> bool:
    if label is None or not label.lstrip("-").isdigit():
        return False
    return int(label) > bound if above else int(label) < bound

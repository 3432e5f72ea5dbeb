"""The error tree: the one drawn in ``_core.errors``' docstring is the one the classes
form, every error derives from AioinformerError, the stdlib bases hold, and a Status maps
to the most specific class."""

from __future__ import annotations

import re

import pytest

import aioinformer
from aioinformer._core import errors
from aioinformer._core.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Expired,
    Forbidden,
    Invalid,
    NotFound,
    ServerError,
    ServerTimeout,
    StatusError,
    TooManyRequests,
    Unauthorized,
    status_error_class,
)


def drawn_tree() -> dict[str, str]:
    """child -> parent, as the module docstring draws them."""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        m = re.match(r"^(\s*)(?:[│ ]*[├└]── )?([A-Z][A-Za-z]+)(?:\s|$)", line)
        if not m or not line.startswith("    "):
            continue
        depth = len(line) - len(line.lstrip(" │├└─"))
        name = m.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[name] = stack[-1][1]
        stack.append((depth, name))
    return parents


def test_the_drawn_tree_is_the_class_tree() -> None:
    drawn = drawn_tree()
    assert len(drawn) == 20 and drawn["AlreadyExists"] == "StatusError"
    for child, parent in drawn.items():
        cls = getattr(errors, child)
        assert cls.__mro__[1] is getattr(errors, parent), (child, parent)
    public = {
        name
        for name in aioinformer.__all__
        if isinstance(getattr(aioinformer, name), type)
        and issubclass(getattr(aioinformer, name), BaseException)
    }
    assert public == set(drawn) | {"AioinformerError"}


def test_stdlib_bases() -> None:
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.DecodeError, ValueError)
    assert issubclass(errors.FreshnessTimeout, TimeoutError)


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (400, "BadRequest", BadRequest),
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (409, "AlreadyExists", AlreadyExists),
        (410, "Expired", Expired),
        (410, "Gone", Expired),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", TooManyRequests),
        (504, "Timeout", ServerTimeout),
        (500, "Timeout", ServerTimeout),  # a resourceVersion too large, as the server says
        (500, "InternalError", ServerError),
        (503, "ServiceUnavailable", ServerError),
        (418, "Teapot", StatusError),
    ],
)
def test_a_status_maps_to_the_most_specific_class(code: int, reason: str, cls: type) -> None:
    assert status_error_class(code, reason) is cls


def test_a_status_error_names_the_request_and_hints_at_the_cause() -> None:
    err = Forbidden(
        403, "Forbidden", "no", verb="watch", resource="pods", namespace="team", name=None
    )
    assert str(err).startswith('watch pods in namespace "team": HTTP 403 Forbidden: no')
    assert 'missing RBAC permission: "watch" on "pods" in namespace "team"' in str(err)
    named = NotFound(404, "NotFound", "gone", verb="get", resource="pods", namespace=None, name="p")
    assert str(named).startswith("get pods 'p' in all namespaces: HTTP 404 NotFound: gone")

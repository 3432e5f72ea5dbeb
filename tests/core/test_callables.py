"""Every parameter that takes a function refuses anything else when it is registered, with
a ConfigError naming the parameter and what was given (not a TypeError logged once per
object or per reconcile later): index functions, a transform, handlers, the reconcile, its
predicates and the mappers of ``watches``."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer import ConfigError, Controller, InformerFactory, generation_changed


async def reconcile(key: str) -> None:
    return None


async def test_a_transform_that_is_not_a_function_is_refused(api: Any) -> None:
    f = InformerFactory(api)
    with pytest.raises(ConfigError, match=r"transform must be a function \(callable\), not 'x'"):
        f.informer("v1", "pods", transform="x")  # type: ignore[arg-type]
    assert f.informers == []


async def test_handlers_that_are_not_functions_are_refused(api: Any) -> None:
    f = InformerFactory(api)
    pods = f.informer("v1", "pods")
    with pytest.raises(ConfigError, match=r"on_update must be a function .*not 'log'"):
        pods.add_handler(lambda obj: None, "log")  # type: ignore[arg-type]
    assert pods.statistics().handlers == ()


async def test_a_reconcile_its_predicates_and_mappers_must_be_functions(api: Any) -> None:
    f = InformerFactory(api)
    pods, cms = f.informer("v1", "pods"), f.informer("v1", "configmaps")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"reconcile": "reconcile"}, r"reconcile must be a function \(callable\), not 'reconcile'"),
        ({"predicates": generation_changed},
         r"predicates is a sequence of functions, not one: predicates=\[generation_changed\]"),
        ({"predicates": [generation_changed, "spec"]}, r"predicates\[1\] must be a function"),
        ({"predicates": "spec"}, "predicates must be a sequence of functions, not 'spec'"),
        ({"watches": [(cms, "metadata.name")]}, r"the mapper of watches\[0\] must be a function"),
    ]  # fmt: skip
    for given, message in cases:
        kwargs: dict[str, Any] = {"reconcile": reconcile, **given}
        with pytest.raises(ConfigError, match=message):
            Controller("c", kwargs.pop("reconcile"), primary=pods, **kwargs)
    assert pods.statistics().handlers == ()  # nothing subscribed by a refused controller

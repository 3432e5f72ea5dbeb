"""Test helpers: bounded polling with a clear failure message, installing a CRD.

:func:`eventually` waits for a condition without sleeping blindly: it checks it, then again
every ``interval`` seconds, and fails with ``AssertionError("timed out after Ns waiting for
<what>")`` once ``timeout`` has passed; an exception the condition raises ends it at once,
unless ``retry_on`` names it. :func:`install_crd` creates a
CustomResourceDefinition (a dict, a YAML string or a path) and returns once the API server
serves its resource (discovery lists it), as a CRD takes a moment to be established.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from aioinformer._client.client import Client
from aioinformer._client.discovery import ApiResource, Discovery
from aioinformer._core.errors import AlreadyExists

__all__ = ["crd_resource", "eventually", "install_crd", "load_crd"]


async def eventually(
    condition: Callable[[], object | Awaitable[object]],
    what: str = "the condition",
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    retry_on: type[BaseException] | tuple[type[BaseException], ...] = (),
) -> None:
    """Return once ``condition()`` (sync or async) is true (truthy).

    A falsy result means "not yet": checked again. An exception the condition raises
    ends the wait at once, as a bug in the test would, unless it is one of ``retry_on``:
    then it too means "not yet" (``retry_on=AssertionError`` polls a check written with
    ``assert``; ``retry_on=NotFound`` a read through a client). For a KubeSim read, prefer
    ``sim.find(...)``: None while the object is absent.

    Args:
        condition: checked at once, then every ``interval`` seconds; a plain function or
            one returning an awaitable.
        what: names what is awaited in the failure message.
        timeout: seconds until it fails.
        interval: seconds between two checks.
        retry_on: exception classes that mean "not yet" (default: none).

    Raises:
        AssertionError: ``timed out after Ns waiting for <what>`` (the last exception
            retried, if the last check raised one, as its cause).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        failure: BaseException | None = None
        try:
            result = condition()
            if inspect.isawaitable(result):
                result = await result
        except retry_on as exc:
            failure, result = exc, False
        if result:
            return
        if loop.time() >= deadline:
            last = f" (last check raised {failure!r})" if failure is not None else ""
            message = f"timed out after {timeout:g}s waiting for {what}{last}"
            raise AssertionError(message) from failure
        await asyncio.sleep(interval)


async def install_crd(
    client: Client, crd: Mapping[str, Any] | str | Path, *, timeout: float = 30.0
) -> ApiResource:
    """Create ``crd`` (unless it exists) and return its resource once it is served.

    Args:
        client: an :class:`~aioinformer.Client` (e.g. the ``kube_client`` fixture).
        crd: a CustomResourceDefinition as a dict, as YAML text, or the path of a YAML
            file (YAML needs the ``kubesim`` extra's PyYAML).
        timeout: seconds to wait for discovery to serve the resource.

    Returns:
        The served resource (:class:`~aioinformer.ApiResource`) of the CRD's storage
        version.

    Raises:
        ValueError: ``crd`` is not a CustomResourceDefinition.
    """
    body = load_crd(crd)
    try:
        await client.create(body)
    except AlreadyExists:
        pass
    group_version, plural = crd_resource(body)
    discovery = Discovery(client.rest, wait=timeout)
    return await discovery.resolve(group_version, plural)


def crd_resource(crd: Mapping[str, Any]) -> tuple[str, str]:
    """``(GROUP/VERSION, plural)`` of the resource a CRD defines (its storage version)."""
    spec = crd["spec"]
    versions = spec["versions"]
    version = next((v["name"] for v in versions if v.get("storage")), versions[0]["name"])
    return f"{spec['group']}/{version}", spec["names"]["plural"]


def load_crd(crd: Mapping[str, Any] | str | Path) -> dict[str, Any]:
    """The CRD as a dict (from a dict, YAML text or a YAML file); a ValueError if it is not
    a CustomResourceDefinition."""
    if isinstance(crd, Mapping):
        return dict(crd)
    import yaml

    if isinstance(crd, Path) or ("\n" not in crd and Path(crd).is_file()):
        crd = Path(crd).read_text()
    doc = yaml.safe_load(crd)
    if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
        raise ValueError("install_crd needs a CustomResourceDefinition")
    return doc

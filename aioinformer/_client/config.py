"""Cluster configuration: a kubernetes_asyncio ``ApiClient`` from a kubeconfig or from the
pod's service account, with one clear error when there is none.

:func:`load_api_client` resolves, in order: an explicit ``kubeconfig`` (and ``context``);
the in-cluster service account when running in a pod (``KUBERNETES_SERVICE_HOST`` set)
and no kubeconfig was asked for; the default kubeconfig (``$KUBECONFIG`` or
``~/.kube/config``). Every failure (a missing file, a file that is not YAML or not a
kubeconfig, an unknown context) is a :class:`~aioinformer.ConfigError` whose message is
one line naming what was tried (never a credential), not kubernetes_asyncio's chained
tracebacks.
"""

from __future__ import annotations

import os
from typing import Any

from aioinformer._core.errors import ConfigError

__all__ = ["load_api_client"]


async def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A kubernetes_asyncio ``ApiClient`` for the cluster (see the module docstring); use it
    as ``async with``."""
    from kubernetes_asyncio import client, config
    from kubernetes_asyncio.config.config_exception import ConfigException

    cfg = client.Configuration()
    explicit = kubeconfig is not None or context is not None
    if not explicit and os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            raise ConfigError(f"in-cluster configuration: {_line(exc)}") from None
        return client.ApiClient(configuration=cfg)
    first, exists = _kubeconfig(kubeconfig)
    if not exists:
        if explicit:
            raise ConfigError(f"kubeconfig {first}: no such file")
        raise ConfigError(
            f"no cluster configured: no kubeconfig at {first} and not in a pod (give "
            "--kubeconfig, set KUBECONFIG, or run with a service account)"
        )
    try:
        await config.load_kube_config(config_file=first, context=context, client_configuration=cfg)
    except ConfigException as exc:
        where = f"kubeconfig {first}" + (f", context {context!r}" if context else "")
        raise ConfigError(f"{where}: {_line(exc)}") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"kubeconfig {first}: {type(exc).__name__}: {_line(exc)}") from None
    except Exception as exc:  # not YAML, or YAML of another shape than a kubeconfig's
        raise ConfigError(f"kubeconfig {first}: {_not_a_kubeconfig(exc)}") from None
    return client.ApiClient(configuration=cfg)


def _kubeconfig(kubeconfig: str | None) -> tuple[str, bool]:
    """The kubeconfig file to read (the first of ``$KUBECONFIG``'s), and whether it exists
    (read once at start: a blocking check is fine there)."""
    path = kubeconfig or os.environ.get("KUBECONFIG") or os.path.join("~", ".kube", "config")
    first = os.path.expanduser(path.split(os.pathsep)[0])
    return first, os.path.isfile(first)


def _not_a_kubeconfig(exc: Exception) -> str:
    """Why a file is no kubeconfig, without quoting it (a kubeconfig holds credentials: a
    YAML error says where it stopped, nothing of what it read)."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        problem = getattr(exc, "problem", None) or "invalid"
        return f"not valid YAML: {problem} at line {mark.line + 1}, column {mark.column + 1}"
    return f"not a kubeconfig ({type(exc).__name__} while reading it)"


def _line(exc: BaseException) -> str:
    """The first line of ``exc``'s message."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__

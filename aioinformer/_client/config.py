"""Cluster configuration: a kubernetes_asyncio ``ApiClient`` from a kubeconfig or from the
pod's service account, with one clear error when there is none.

:func:`load_api_client` resolves, in order: an explicit ``kubeconfig`` (and ``context``);
the in-cluster service account when running in a pod (``KUBERNETES_SERVICE_HOST`` set)
and no kubeconfig was asked for; the default kubeconfig (``$KUBECONFIG`` or
``~/.kube/config``). Every failure (a missing file, a file that is not YAML or not a
kubeconfig, an unknown context) is a :class:`~aioinformer.ConfigError` whose message is
one line naming what was tried (never a credential), not kubernetes_asyncio's chained
tracebacks, and holds no exception of theirs (``__context__``): an exec plugin's output
and a client key stay out of it (:func:`clean_plugin_text` says what is cut from a failed
plugin's error output). A client certificate or key that cannot be loaded is a
ConfigError naming their paths. The environment's proxy (``HTTP(S)_PROXY``, ``NO_PROXY``)
is read once, when the client is made (:mod:`~aioinformer._client.envproxy`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import ssl
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from aioinformer._client.envproxy import pin_env_proxy
from aioinformer._core.errors import ConfigError
from aioinformer._core.redact import REDACTED, redact_known

__all__ = ["load_api_client"]


async def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A kubernetes_asyncio ``ApiClient`` for the cluster (see the module docstring); use it
    as ``async with``."""
    from kubernetes_asyncio import client, config

    cfg = client.Configuration()
    explicit = kubeconfig is not None or context is not None
    if not explicit and os.environ.get("KUBERNETES_SERVICE_HOST"):

        def in_cluster() -> None:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]

        failed = _failure(in_cluster)
        if failed is not None:
            raise ConfigError(f"in-cluster configuration: {failed}")
        return _api_client(cfg, "in-cluster configuration")
    first, exists = _kubeconfig(kubeconfig)
    if not exists:
        if explicit:
            raise ConfigError(f"kubeconfig {first}: no such file")
        raise ConfigError(
            f"no cluster configured: no kubeconfig at {first} and not in a pod (give "
            "--kubeconfig, set KUBECONFIG, or run with a service account)"
        )
    where = f"kubeconfig {first}" + (f", context {context!r}" if context else "")
    with _plugin_output_cleaned():
        failed = await _async_failure(
            config.load_kube_config(config_file=first, context=context, client_configuration=cfg)
        )
    if failed is not None:  # (raised here, outside the handler: no __context__, see _failure)
        raise ConfigError(f"{where}: {failed}")
    return _api_client(cfg, where)


def _api_client(cfg: Any, where: str) -> Any:
    """The ApiClient of ``cfg``: a client certificate or key that cannot be loaded is a
    ConfigError naming their paths (never their contents)."""
    from kubernetes_asyncio import client

    try:
        api = client.ApiClient(configuration=cfg)
    except (ssl.SSLError, OSError) as exc:
        reason = f"{type(exc).__name__}: {_line(exc)}"
    else:
        pin_env_proxy(api)  # (the environment's proxy read once, not at every request)
        return api
    files = f"client-certificate {cfg.cert_file}, client-key {cfg.key_file}"
    raise ConfigError(
        f"{where}: the client certificate or key cannot be loaded ({files}): {reason}"
    )


def _failure(load: Callable[[], object]) -> str | None:
    """``load()``; what made it fail, in one line, or None. The exception is not kept: it
    would be the ``__context__`` of the ConfigError raised for it even ``from None``, and
    kubernetes_asyncio's (an exec plugin's JSON error keeps the plugin's whole output,
    its token included) must not be reachable from it."""
    try:
        load()
    except Exception as exc:
        return _described(exc)
    return None


async def _async_failure(loading: Awaitable[object]) -> str | None:
    """As :func:`_failure`, for a coroutine."""
    try:
        await loading
    except Exception as exc:
        return _described(exc)
    return None


def _described(exc: Exception) -> str:
    from kubernetes_asyncio.config.config_exception import ConfigException

    if isinstance(exc, ConfigException):
        return clean_plugin_text(_line(exc))
    if isinstance(exc, (OSError, ValueError)):
        return f"{type(exc).__name__}: {_line(exc)}"
    return _not_a_kubeconfig(exc)  # not YAML, or YAML of another shape than a kubeconfig's


_JWT = re.compile(r"\beyJ[\w-]*\.[\w-]*\.[\w-]*")
_OPAQUE = re.compile(r"(?<![\w/.+=-])[\w+=-][\w+/=.-]{31,}")


def clean_plugin_text(text: str) -> str:
    """``text`` from an exec plugin (its error output, quoted in kubernetes_asyncio's
    message) without what looks like a credential: the secrets the library knows, echoed
    Authorization values, JWTs, and every run of 32 or more token characters holding a
    digit (a base64 or hex token; not a path: a run starting with ``/`` or ``.`` is kept).
    The plugin's token is not known yet when it fails: its shape is all there is."""
    text = _JWT.sub(REDACTED, redact_known(text))
    return _OPAQUE.sub(lambda m: REDACTED if any(c.isdigit() for c in m[0]) else m[0], text)


class _PluginOutputFilter(logging.Filter):
    """Cleans kubernetes_asyncio's own ERROR line about a failed exec plugin (its
    message quotes the plugin's error output) as :func:`clean_plugin_text` does."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = clean_plugin_text(message)
        if clean != message:
            record.msg, record.args = clean, ()
        return True


@contextlib.contextmanager
def _plugin_output_cleaned() -> Iterator[None]:
    log = logging.getLogger("kubernetes_asyncio.config.kube_config")
    cleaner = _PluginOutputFilter()
    log.addFilter(cleaner)
    try:
        yield
    finally:
        log.removeFilter(cleaner)


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

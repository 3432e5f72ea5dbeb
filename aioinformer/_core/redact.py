"""Redaction: the credentials the library knows never reach a message, a log line or stats.

A server, a proxy or a webhook may echo what it was sent (a 401 Status quoting the bearer
token, an HTML error page showing the Authorization header, a watch ERROR event). Every
text the client layer puts into an exception passes through a :class:`Redactor`, which
replaces each known secret with ``<redacted>``:

* the bearer token(s) of the kubernetes_asyncio ``Configuration`` (``api_key`` values, with
  or without their ``Bearer`` prefix; read at each call, so a token refreshed by an exec
  plugin or a token file is covered from its first use);
* the basic-auth password, and the base64 ``user:password`` an Authorization header carries;
* the client key (the PEM file's contents, their base64 as a kubeconfig's
  ``client-key-data`` holds them, and each line, so a partial echo is caught too);
* the proxy's credentials (the password in the ``proxy`` URL, the ``proxy_headers`` values);
* anything passed as ``extra``;
* and, whatever the secret, the value after ``Bearer`` / ``Basic`` in an echoed
  ``Authorization`` header.

Secrets shorter than :data:`MIN_SECRET` characters are not searched for (they would match
ordinary words); an echoed header is still cut by the pattern.

Beyond the messages of the errors it makes, the library cleans every log line it writes and
every statistics field it fills: each :class:`Redactor` a client makes is :func:`register` ed
(held weakly: it goes when its client goes), and :func:`redact_known` applies all of them
(the logging filter of :mod:`~aioinformer._core.logs` and the watcher's ``last_error`` use
it). Text is cleaned whole, before it is cut for display, so that a cut cannot keep a
piece of a secret that no longer matches.
"""

from __future__ import annotations

import base64
import re
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["MIN_SECRET", "REDACTED", "Redactor", "redact_known", "register"]

REDACTED = "<redacted>"
MIN_SECRET = 6
_AUTH_HEADER = re.compile(r"(?i)\b(bearer|basic)(\s+|%20)[A-Za-z0-9._~+/=\-]{4,}")


class Redactor:
    """Removes known secrets from text (see the module docstring).

    ``configuration`` is a kubernetes_asyncio ``Configuration`` (or None); ``extra`` more
    secrets. Calling the redactor is cheap when no secret is configured.
    """

    __slots__ = ("__weakref__", "_configuration", "_extra", "_key_cache")

    def __init__(self, configuration: Any = None, extra: Iterable[str] = ()) -> None:
        self._configuration = configuration
        self._extra = tuple(s for s in extra if s)
        self._key_cache: tuple[str, tuple[str, ...]] | None = None

    def secrets(self) -> list[str]:
        """Every secret known now, longest first."""
        found: set[str] = set(self._extra)
        cfg = self._configuration
        if cfg is not None:
            for value in (getattr(cfg, "api_key", None) or {}).values():
                if isinstance(value, str) and value:
                    found.add(value)
                    found.add(value.split(" ", 1)[1] if value.startswith("Bearer ") else value)
            user = getattr(cfg, "username", None) or ""
            password = getattr(cfg, "password", None) or ""
            if password:
                found.add(password)
                found.add(base64.b64encode(f"{user}:{password}".encode()).decode())
            found.update(self._key_secrets(getattr(cfg, "key_file", None)))
            found.update(_proxy_secrets(cfg))
        return sorted((s for s in found if len(s) >= MIN_SECRET), key=len, reverse=True)

    def _key_secrets(self, key_file: object) -> tuple[str, ...]:
        if not isinstance(key_file, str) or not key_file:
            return ()
        if self._key_cache is not None and self._key_cache[0] == key_file:
            return self._key_cache[1]
        try:
            pem = Path(key_file).read_text()
        except (OSError, UnicodeDecodeError):
            secrets: tuple[str, ...] = ()
        else:
            lines = [line.strip() for line in pem.splitlines()]
            body = [line for line in lines if line and not line.startswith("-----")]
            pem_bytes = pem.encode()
            encoded = base64.b64encode(pem_bytes).decode()
            stripped = base64.b64encode(pem.strip().encode()).decode()
            secrets = (pem.strip(), encoded, stripped, *body)
        self._key_cache = (key_file, secrets)
        return secrets

    def __call__(self, text: str) -> str:
        """``text`` with every known secret and every echoed Authorization value replaced."""
        for secret in self.secrets():
            if secret in text:
                text = text.replace(secret, REDACTED)
        return _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def _proxy_secrets(cfg: Any) -> list[str]:
    found: list[str] = []
    proxy = getattr(cfg, "proxy", None)
    if isinstance(proxy, str) and "@" in proxy:
        try:
            password = urlsplit(proxy).password
        except ValueError:
            password = None
        if password:
            found += [password, unquote(password)]
    headers = getattr(cfg, "proxy_headers", None)
    if isinstance(headers, dict):
        for value in headers.values():
            if isinstance(value, str):
                found.append(value)
                found.append(value.split(" ", 1)[-1])
    return found


_REGISTRY: weakref.WeakSet[Redactor] = weakref.WeakSet()
_REGISTRY_LOCK = threading.Lock()


def register(redactor: Redactor) -> Redactor:
    """Add ``redactor`` to those :func:`redact_known` applies, for as long as it lives."""
    with _REGISTRY_LOCK:
        _REGISTRY.add(redactor)
    return redactor


def redact_known(text: str) -> str:
    """``text`` cleaned by every live registered :class:`Redactor` (and of echoed
    Authorization values in any case)."""
    with _REGISTRY_LOCK:
        redactors = list(_REGISTRY)
    for redactor in redactors:
        text = redactor(text)
    return _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)

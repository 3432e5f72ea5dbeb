"""Redaction: the credentials the library knows never reach a message, a log line or stats.

A server, a proxy or a webhook may echo what it was sent (a 401 Status quoting the bearer
token, an HTML error page showing the Authorization header, a watch ERROR event). Every
text the client layer puts into an exception passes through a :class:`Redactor`, which
replaces each known secret with ``<redacted>``:

* the bearer token(s) of the kubernetes_asyncio ``Configuration`` (``api_key`` values, with
  or without their ``Bearer`` prefix; read at each call, so a token refreshed by an exec
  plugin or a token file is covered from its first use);
* the basic-auth password, and the base64 ``user:password`` an Authorization header carries;
* the client key (the PEM file's contents and each of its lines, so a partial echo is caught
  too);
* anything passed as ``extra``;
* and, whatever the secret, the value after ``Bearer`` / ``Basic`` in an echoed
  ``Authorization`` header.

Secrets shorter than :data:`MIN_SECRET` characters are not searched for (they would match
ordinary words); an echoed header is still cut by the pattern.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["MIN_SECRET", "REDACTED", "Redactor"]

REDACTED = "<redacted>"
MIN_SECRET = 6
_AUTH_HEADER = re.compile(r"(?i)\b(bearer|basic)(\s+|%20)[A-Za-z0-9._~+/=\-]{4,}")


class Redactor:
    """Removes known secrets from text (see the module docstring).

    ``configuration`` is a kubernetes_asyncio ``Configuration`` (or None); ``extra`` more
    secrets. Calling the redactor is cheap when no secret is configured.
    """

    __slots__ = ("_configuration", "_extra", "_key_cache")

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
            secrets = (pem.strip(), *body)
        self._key_cache = (key_file, secrets)
        return secrets

    def __call__(self, text: str) -> str:
        """``text`` with every known secret and every echoed Authorization value replaced."""
        for secret in self.secrets():
            if secret in text:
                text = text.replace(secret, REDACTED)
        return _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)

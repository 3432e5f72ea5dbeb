"""Who sends a request: bearer tokens, the users they stand for, and their RBAC rules."""

from __future__ import annotations

import base64
import secrets
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aiohttp import web

from kubesim.apis.authorization import rbac
from kubesim.errors import KubeSimApiError, status_body

__all__ = ["User", "authenticate", "deny_anonymous", "make_tokens", "random_token"]


@dataclass
class User:
    """An identity KubeSim authenticates by bearer token, with simple RBAC rules.

    Made by :meth:`KubeSim.add_user <kubesim.KubeSim.add_user>`, which returns
    the user's token. The admin user (``sim.token``) has ``("*", "*", "*")``.
    """

    name: str
    """The user name requests are authorized (and 403s worded) as."""
    rules: tuple[tuple[str, str, str], ...] = (("*", "*", "*"),)
    """(verb, group, resource) triples where any part may be ``"*"``; a resource names a
    subresource as ``pods/status`` (a rule for ``pods`` does not grant ``pods/status``)."""

    def allows(self, verb: str, group: str, resource: str) -> bool:
        """Whether a rule grants ``verb`` on ``resource`` (``plural[/subresource]``)."""
        return rbac.allows(self.rules, verb, group, resource)


def random_token() -> str:
    """A fresh bearer token (URL-safe, 43 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes + uuid.uuid4().bytes).decode().rstrip("=")


def make_tokens(admin_token: str, users: Iterable[tuple[str, User]] = ()) -> dict[str, User]:
    """The token table: the admin token plus any extra users."""
    tokens = {admin_token: User("admin")}
    tokens.update(dict(users))
    return tokens


def authenticate(request: web.Request, auth: bool, tokens: Mapping[str, User]) -> User:
    """The user a request is served as: the admin when ``auth`` is off, the anonymous user
    without an ``Authorization`` header, the owner of its bearer token; else 401."""
    if not auth:
        return User("admin")
    header = request.headers.get("Authorization", "")
    if not header:
        return User("system:anonymous", rules=())
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer":
        for known, user in tokens.items():
            if secrets.compare_digest(known.encode(), token.strip().encode()):
                return user
    raise KubeSimApiError.unauthorized()


def deny_anonymous(user: User, path: str) -> None:
    """The 403 of a non-resource path (discovery, OpenAPI) for the anonymous user."""
    if user.name == "system:anonymous":
        msg = f'forbidden: User "system:anonymous" cannot get path "{path}"'
        raise KubeSimApiError(403, status_body(403, msg, "Forbidden", {}))

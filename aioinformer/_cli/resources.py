"""RESOURCE arguments of the command line, resolved against what the server serves.

RESOURCE is written as kubectl takes it, or with its group/version spelled out:

* ``NAME`` or ``NAME.GROUP``: NAME is a plural, a singular, a kind or a short name
  (``pods``, ``pod``, ``po``, ``statefulsets``, ``sts``, ``podsets``,
  ``podsets.example.aioinformer.dev``); the core group is searched first, then every
  served group at its preferred version, in the server's order;
* ``VERSION/NAME`` (``v1/pods``) or ``GROUP/VERSION/NAME`` (``apps/v1/statefulsets``).

A name the server does not serve is a :class:`~aioinformer.ConfigError` in one line,
with the closest names it does serve.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from aioinformer._client.discovery import ApiResource, Discovery
from aioinformer._client.rest import Request, RestClient
from aioinformer._core.errors import ConfigError, NotFound

__all__ = ["ResourceName", "parse_resource", "resolve_resource"]


@dataclass(frozen=True, slots=True)
class ResourceName:
    """A RESOURCE argument, parsed: ``name``, and ``group_version`` when it was given
    (``group`` when only the group was, as in ``NAME.GROUP``)."""

    name: str
    group_version: str | None = None
    group: str | None = None


def parse_resource(text: str) -> ResourceName:
    """``pods`` -> name "pods"; ``deployments.apps`` -> name "deployments", group "apps";
    ``apps/v1/statefulsets`` -> name "statefulsets", group_version "apps/v1"."""
    parts = text.strip().split("/")
    if not all(parts) or len(parts) > 3:
        raise ConfigError(
            f"bad resource {text!r}: use NAME, NAME.GROUP, VERSION/NAME or GROUP/VERSION/NAME"
        )
    if len(parts) == 1:
        name, _, group = parts[0].partition(".")
        return ResourceName(name.lower(), group=group or None)
    return ResourceName(parts[-1].lower(), group_version="/".join(parts[:-1]))


async def resolve_resource(rest: RestClient, text: str) -> ApiResource:
    """The served resource ``text`` names (see the module docstring)."""
    wanted = parse_resource(text)
    discovery = Discovery(rest, wait=0.0)
    if wanted.group_version is not None:
        places = [wanted.group_version]
    else:
        places = await _preferred_versions(rest, wanted.group)
        if wanted.group is not None and not places:
            raise ConfigError(f"the server does not serve the API group {wanted.group!r}")
    aliases: dict[str, ApiResource] = {}
    for group_version in places:
        try:
            listed = await discovery.resources(group_version)
        except NotFound:
            if wanted.group_version is not None:
                await discovery.resolve(group_version, wanted.name)  # says what is served
            continue
        for res in listed:
            for alias in (res.plural, res.singular, res.kind.lower(), *res.short_names):
                if alias:
                    aliases.setdefault(alias.lower(), res)
        if wanted.name in aliases:
            return aliases[wanted.name]
    close = difflib.get_close_matches(wanted.name, list(aliases), n=3, cutoff=0.6)
    guess = sorted({aliases[c].qualified for c in close})
    hint = f": did you mean {' or '.join(guess)}?" if guess else ""
    raise ConfigError(f"the server has no resource {text!r}{hint}")


async def _preferred_versions(rest: RestClient, group: str | None) -> list[str]:
    """Where a ``NAME[.GROUP]`` may live: core v1 first (unless a group is named), then
    the preferred version of every served group (or of the one named)."""
    doc = await rest.request_json("GET", "/apis", Request("get", "discovery /apis"))
    found = [] if group else ["v1"]
    for entry in doc.get("groups") or ():
        if group is not None and entry.get("name") != group:
            continue
        versions = entry.get("versions") or [{}]
        preferred: dict[str, object] = entry.get("preferredVersion") or versions[0]
        if preferred.get("groupVersion"):
            found.append(str(preferred["groupVersion"]))
    return found

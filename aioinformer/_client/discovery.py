"""Discovery: which resources the API server serves, and what each one is.

:class:`Discovery` reads the server's discovery documents (``/api/v1``, ``/apis``,
``/apis/<group>/<version>``) through the client layer and answers:

* :meth:`Discovery.resolve` ``(group_version, plural)`` -> :class:`ApiResource` (kind,
  namespaced or not, verbs, subresources), or a :class:`~aioinformer.ConfigError` saying
  what the server does serve: ``example.com serves v1, not v2``; ``no resource 'pod' in v1:
  did you mean 'pods'?``; ``no resource 'statefulsets' in v1: did you mean apps/v1?``;
* :meth:`Discovery.for_kind` ``(api_version, kind)`` -> the resource of a kind (what a write
  of an object needs: ``Pod`` in ``v1`` is ``pods``, namespaced).

Documents are cached per group/version; a miss (a resource or a version not found) reads
them again, so a CRD installed after the first lookup is found. A group/version that is not
served at all may be a CRD still being established: :meth:`resolve` waits up to
``wait`` seconds for it (quietly, re-reading every ``poll`` seconds) before it gives up.
"""

from __future__ import annotations

import asyncio
import difflib
from dataclasses import dataclass

from aioinformer._client.rest import Request, RestClient
from aioinformer._core import logs
from aioinformer._core.errors import AioinformerError, ConfigError, NotFound

__all__ = ["ApiResource", "Discovery", "split_group_version"]

log = logs.logger("aioinformer.discovery")


def split_group_version(group_version: str) -> tuple[str, str]:
    """``"apps/v1"`` -> ``("apps", "v1")``; ``"v1"`` -> ``("", "v1")``."""
    group, _, version = group_version.rpartition("/")
    return group, version


@dataclass(frozen=True, slots=True)
class ApiResource:
    """One served resource, as discovery describes it."""

    group: str
    """The API group ("" for core)."""
    version: str
    """The version, e.g. "v1"."""
    plural: str
    """The resource name in URLs and RBAC rules, e.g. "pods"."""
    kind: str
    """The kind of its objects, e.g. "Pod"."""
    namespaced: bool
    """Whether its objects live in namespaces."""
    verbs: tuple[str, ...] = ()
    """What the server allows on it (list, watch, create, ...)."""
    subresources: tuple[str, ...] = ()
    """Its subresources, e.g. ("status", "scale")."""
    singular: str = ""
    """The singular name, e.g. "pod" ("" when the server does not say)."""
    short_names: tuple[str, ...] = ()
    """Short names kubectl accepts, e.g. ("po",)."""

    @property
    def group_version(self) -> str:
        """``"GROUP/VERSION"``, or ``"v1"`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` its objects carry (the same as :attr:`group_version`)."""
        return self.group_version

    @property
    def qualified(self) -> str:
        """``plural`` or ``plural.group``, as RBAC rules and error messages name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The URL path of the collection (in ``namespace``) or of one object."""
        from urllib.parse import quote

        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        return f"{base}/{quote(name, safe='')}" if name else base


class Discovery:
    """The served resources of one API server (see the module docstring).

    Args:
        rest: the client layer to send discovery requests through (``factory.rest``,
            ``client.rest``).
        wait: seconds :meth:`resolve` waits for a group/version or resource that is not
            served yet (a CRD just created) before it gives up.
        poll: seconds between two discovery requests while waiting.
    """

    def __init__(self, rest: RestClient, *, wait: float = 10.0, poll: float = 0.2) -> None:
        self.rest = rest
        self.wait = wait
        """Seconds :meth:`resolve` waits for an unknown group/version to be served."""
        self.poll = poll
        self._lists: dict[str, tuple[ApiResource, ...]] = {}

    async def resources(
        self, group_version: str, *, fresh: bool = False
    ) -> tuple[ApiResource, ...]:
        """The resources served in ``group_version`` (subresources folded into their
        parents); :class:`~aioinformer.NotFound` if the group/version is not served."""
        if not fresh and group_version in self._lists:
            return self._lists[group_version]
        group, version = split_group_version(group_version)
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        doc = await self.rest.request_json("GET", path, Request("get", f"discovery {path}"))
        parents: dict[str, dict[str, object]] = {}
        subs: dict[str, list[str]] = {}
        for entry in doc.get("resources") or ():
            name = str(entry.get("name") or "")
            if "/" in name:
                parent, _, sub = name.partition("/")
                subs.setdefault(parent, []).append(sub)
            elif name:
                parents[name] = entry
        found = tuple(
            ApiResource(
                group=group,
                version=version,
                plural=name,
                kind=str(entry.get("kind") or ""),
                namespaced=bool(entry.get("namespaced")),
                verbs=tuple(str(v) for v in entry.get("verbs") or ()),  # type: ignore[attr-defined]
                subresources=tuple(subs.get(name, ())),
                singular=str(entry.get("singularName") or ""),
                short_names=tuple(str(v) for v in entry.get("shortNames") or ()),  # type: ignore[attr-defined]
            )
            for name, entry in parents.items()
        )
        self._lists[group_version] = found
        return found

    async def served_versions(self, group: str) -> list[str]:
        """The versions the server serves for ``group`` ("" for core)."""
        if not group:
            doc = await self.rest.request_json("GET", "/api", Request("get", "discovery /api"))
            return [str(v) for v in doc.get("versions") or ()]
        doc = await self.rest.request_json("GET", "/apis", Request("get", "discovery /apis"))
        for entry in doc.get("groups") or ():
            if entry.get("name") == group:
                return [str(v.get("version")) for v in entry.get("versions") or ()]
        return []

    async def group_versions(self) -> list[str]:
        """Every served group/version: ``v1`` first, then each group's, its preferred
        version first."""
        core = await self.rest.request_json("GET", "/api", Request("get", "discovery /api"))
        found = [str(v) for v in core.get("versions") or ()]
        doc = await self.rest.request_json("GET", "/apis", Request("get", "discovery /apis"))
        for entry in doc.get("groups") or ():
            preferred = (entry.get("preferredVersion") or {}).get("groupVersion")
            versions = [str(v.get("groupVersion")) for v in entry.get("versions") or ()]
            found += sorted(versions, key=lambda gv: gv != preferred)
        return found

    async def served_elsewhere(self, name: str, *, skip: str = "") -> list[ApiResource]:
        """The resources of every served group/version but ``skip`` that ``name`` names
        exactly: as plural, singular, kind or short name, in any case (a resource asked for
        in the wrong group, or by its kind). Group/versions whose discovery fails are left
        out."""

        async def listed(gv: str) -> tuple[ApiResource, ...]:
            try:
                return await self.resources(gv)
            except AioinformerError:
                return ()

        wanted = name.lower()
        gvs = [gv for gv in await self.group_versions() if gv != skip]
        found = []
        for resources in await asyncio.gather(*(listed(gv) for gv in gvs)):
            found += [res for res in resources if wanted in _aliases(res)]
        return found

    async def resolve(self, group_version: str, plural: str) -> ApiResource:
        """The served resource ``plural`` of ``group_version``, or a :class:`ConfigError`
        saying what is served instead: another name in the same group/version (``'pod'``:
        did you mean ``'pods'``?), else the group/versions that serve it under that name
        (``statefulsets`` in ``v1``: did you mean ``apps/v1``?, at once), else the versions
        the group serves; a group/version not served yet (a CRD just created) is waited for
        up to :attr:`wait` seconds first."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.wait
        fresh = False
        while True:
            try:
                listed = await self.resources(group_version, fresh=fresh)
            except NotFound:
                listed = None
            if listed is not None:
                for res in listed:
                    if res.plural == plural:
                        return res
                if not fresh and await self.served_elsewhere(plural, skip=group_version):
                    raise await self._unserved(group_version, plural, listed)  # (no wait)
            if loop.time() >= give_up:
                raise await self._unserved(group_version, plural, listed)
            log.debug("%s %s is not served yet; asking again", group_version, plural)
            fresh = True
            await asyncio.sleep(self.poll)

    async def for_kind(self, api_version: str, kind: str) -> ApiResource:
        """The resource whose objects are ``kind`` in ``api_version``."""
        for fresh in (False, True):
            try:
                listed = await self.resources(api_version, fresh=fresh)
            except NotFound:
                break
            for res in listed:
                if res.kind == kind:
                    return res
        raise ConfigError(f"the server serves no kind {kind!r} in {api_version}")

    async def _unserved(
        self, group_version: str, plural: str, listed: tuple[ApiResource, ...] | None
    ) -> ConfigError:
        group, version = split_group_version(group_version)
        if listed is None:
            versions = await self.served_versions(group)
            where = group or "the core group"
            if versions:
                return ConfigError(
                    f"{where} serves {', '.join(versions)}, not {version} "
                    f"(asked for {plural} in {group_version})"
                )
            return ConfigError(
                f"the server does not serve the API group {group!r} (asked for {plural} in "
                f"{group_version}): is its CustomResourceDefinition installed?"
            )
        names: dict[str, str] = {}
        for res in listed:
            for alias in _aliases(res):
                names.setdefault(alias, res.plural)
        wanted = plural.lower()
        elsewhere = (
            [] if wanted in names else await self.served_elsewhere(plural, skip=group_version)
        )
        if elsewhere:
            serving = [
                res.group_version
                if res.plural == plural
                else f"{res.plural!r} in {res.group_version}"
                for res in elsewhere
            ]
            hint = f": did you mean {' or '.join(serving)}?"
        else:
            close = difflib.get_close_matches(wanted, list(names), n=3, cutoff=0.6)
            guess = {names[c] for c in close} | ({names[wanted]} if wanted in names else set())
            hint = f": did you mean {' or '.join(repr(g) for g in sorted(guess))}?" if guess else ""
        return ConfigError(f"no resource {plural!r} in {group_version}{hint}")


def _aliases(res: ApiResource) -> set[str]:
    """The names ``res`` goes by: plural, singular, lower-case kind, short names."""
    return {a for a in (res.plural, res.singular, res.kind.lower(), *res.short_names) if a}

"""The environment's proxy, read once per client instead of at every request.

kubernetes_asyncio makes its aiohttp session with ``trust_env=True``: aiohttp then reads
``HTTP(S)_PROXY``/``NO_PROXY`` and ``~/.netrc`` in a worker thread for *every* request
(two thread hops each; on a loaded 2-core machine that was 0.8 ms of a 1.3 ms GET to
KubeSim). client-go reads the proxy environment once per process
(``http.ProxyFromEnvironment``) and never reads ``~/.netrc``. :func:`pin_env_proxy` does
the same for one ``ApiClient``: it resolves the proxy for the client's host once (with
``NO_PROXY`` and the proxy URL's credentials, or ``~/.netrc``'s for the proxy host, as
aiohttp would), writes it where every request passes it explicitly (the configuration's
and the REST client's ``proxy``, unless one is set already, e.g. a kubeconfig's
``proxy-url``), and turns the session's per-request lookups off.

Applied to the clients the library makes (:func:`~aioinformer.load_api_client`, the
pipeline thread's clones); a client you make and pass in is left as it is.
"""

from __future__ import annotations

from typing import Any

from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

__all__ = ["pin_env_proxy", "stop_env_lookups", "trusts_env"]


def pin_env_proxy(api_client: Any) -> None:
    """Resolve ``api_client``'s proxy from the environment once and stop its session's
    per-request lookups (see the module docstring). Idempotent; a client whose session
    does not trust the environment, or has no ``rest_client``, is left alone."""
    if not trusts_env(api_client):
        return
    rest = api_client.rest_client
    if not getattr(rest, "proxy", None):
        try:
            proxy, auth = get_env_proxy_for_url(URL(api_client.configuration.host))
        except LookupError:  # no proxy for this host (none set, or NO_PROXY names it)
            pass
        else:
            if auth is not None:
                proxy = proxy.with_user(auth.login).with_password(auth.password)
            rest.proxy = api_client.configuration.proxy = str(proxy)
    stop_env_lookups(api_client)


def trusts_env(api_client: Any) -> bool:
    """Whether ``api_client``'s session looks the environment up at every request."""
    return bool(getattr(_session(api_client), "trust_env", False))


def stop_env_lookups(api_client: Any) -> None:
    """Turn ``api_client``'s per-request environment lookups off (its proxy, if any, is
    its configuration's)."""
    session = _session(api_client)
    if session is not None:
        # (aiohttp has no public setter; the attribute is what its request path reads)
        session._trust_env = False


def _session(api_client: Any) -> Any:
    """The aiohttp session of ``api_client`` (kubernetes_asyncio's), None without one."""
    return getattr(getattr(api_client, "rest_client", None), "pool_manager", None)

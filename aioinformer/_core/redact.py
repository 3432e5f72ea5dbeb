"""Redaction: the credentials the library knows never reach a message, a log line or stats.

A server, a proxy or a webhook may echo what it was sent (a 401 Status quoting the bearer
token, an HTML error page showing the Authorization header, a watch ERROR event). Every
text the client layer puts into an exception passes through a :class:`Redactor`, which
replaces each known secret with ``<redacted>``:

* the bearer token(s) of the kubernetes_asyncio ``Configuration`` (``api_key`` values, with
  or without their ``Bearer`` prefix; read at each call, so a token refreshed by an exec
  plugin or a token file is covered from its first use);
* every credential the client has sent (:meth:`Redactor.remember`, called with each
  request's Authorization value before it goes out), for the last :data:`HISTORY` of them:
  a token rotated while a request was in flight is still known when its answer echoes it;
* the basic-auth password, and the base64 ``user:password`` an Authorization header carries;
* the client key (the PEM file's contents, their base64 as a kubeconfig's
  ``client-key-data`` holds them, and each line, so a partial echo is caught too);
* the proxies' credentials (of the ``proxy`` URL and of the environment's ``HTTP_PROXY``
  and the like, which the session follows: the password, ``user:password`` and its base64;
  the ``proxy_headers`` values);
* anything passed as ``extra``;
* and, whatever the secret and whatever its characters, the value of an echoed
  ``Authorization`` / ``Proxy-Authorization`` header (in any notation: ``Name: value``, a
  Python or JSON mapping, a list of values) and the value after ``Bearer`` / ``Basic``
  (skipping filler words: ``bearer token <value>``).

Secrets shorter than :data:`MIN_SECRET` characters are not searched for (they would match
ordinary words); an echoed header is still cut by the patterns.

Beyond the messages of the errors it makes, the library cleans every log line it writes and
every statistics field it fills: each :class:`Redactor` a client makes is :func:`register` ed
(held weakly: it goes when its client goes), and :func:`redact_known` applies all of them
(the logging filter of :mod:`~aioinformer._core.logs` and the watcher's ``last_error`` use
it). Text is cleaned whole, before it is cut for display, so that a cut cannot keep a
piece of a secret that no longer matches.

Objects reachable from an exception (its ``__cause__`` / ``__context__`` chain, ``args``,
notes and attributes: an aiohttp error's request headers, a JSON error's document) are
walked by :func:`reachable_texts`; :func:`carries_secret` says whether any of them holds a
known secret (the logging filter drops such an ``exc_info``, keeping its cleaned text).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import re
import threading
import types
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from urllib.request import getproxies

__all__ = [
    "HISTORY",
    "MIN_SECRET",
    "REDACTED",
    "Redactor",
    "carries_secret",
    "reachable_texts",
    "redact_known",
    "redact_patterns",
    "register",
]

REDACTED = "<redacted>"
MIN_SECRET = 6
HISTORY = 32
"""Credentials a :class:`Redactor` keeps after they left the configuration (the last 32
sent): a watch may stay open for 10 minutes on the token it started with, and exec plugins
and token files rotate tokens every few minutes at the fastest, so 32 covers every request
that can still be answered, while a process that runs for months keeps a bounded list."""

# An echoed header, in any notation: ``Authorization: v``, ``'Authorization': 'v'``,
# ``"authorization":["v"]``, ``authorization=v``. Its whole value goes: to the closing quote
# when quoted, else to the end of the line. A leading scheme word is kept.
_HEADER = re.compile(
    r"""(?ix)
    (?P<name>\b(?:proxy-)?authorization)
    (?P<sep>\\?["']?[ \t]*[:=][ \t]*\[?[ \t]*)
    (?:
        (?P<q>\\?["'])(?P<quoted>.*?)(?P=q)
      | (?P<bare>[^\r\n]+)
    )
    """
)
_SCHEME_WORD = re.compile(r"(?i)^((?:bearer|basic|negotiate|digest|token)(?:\s+|%20))")
# ``Bearer <value>`` / ``Basic <value>`` anywhere; filler words between the scheme and the
# value are skipped (``invalid bearer token <value>``): the value is what follows them.
_FILLER = (
    r"(?:tokens?|credentials?|auth|authentication|authorization|value|header|string|key"
    r"|is|was|of|the|an?)"
)
_SCHEME = re.compile(
    rf"""(?ix)
    (?P<scheme>\b(?:bearer|basic))
    (?P<sep>(?:\s|%20|[:=])+)
    (?P<filler>(?:{_FILLER}(?:\s|%20|[:=])+)*)
    (?P<value><redacted>|[^\s"'<>,;&(){{}}\[\]\\]+)
    """
)


def redact_patterns(text: str) -> str:
    """``text`` with every echoed Authorization value replaced, whatever the secret (see the
    module docstring): what :class:`Redactor` does after the known secrets."""
    if not text:
        return text
    lowered = text.lower()
    if "authorization" in lowered:
        text = _HEADER.sub(_header_value, text)
    if "bearer" in lowered or "basic" in lowered:
        text = _SCHEME.sub(_scheme_value, text)
    return text


def _header_value(m: re.Match[str]) -> str:
    quoted, rest = m.group("quoted"), ""
    value = quoted if quoted is not None else m.group("bare")
    if quoted is None and "=" in m.group("sep"):  # a query parameter: up to the next one
        value, amp, after = value.partition("&")
        value, space, tail = value.partition(" ")
        rest = f"{space}{tail}{amp}{after}"
    scheme = _SCHEME_WORD.match(value)
    shown = (scheme.group(1) if scheme else "") + REDACTED
    if quoted is not None:
        return f"{m.group('name')}{m.group('sep')}{m.group('q')}{shown}{m.group('q')}"
    return f"{m.group('name')}{m.group('sep')}{shown}{rest}"


def _scheme_value(m: re.Match[str]) -> str:
    if m.group("value") == REDACTED:  # (cleaned already)
        return m.group(0)
    return f"{m.group('scheme')}{m.group('sep')}{REDACTED}"


class Redactor:
    """Removes known secrets from text (see the module docstring).

    ``configuration`` is a kubernetes_asyncio ``Configuration`` (or None); ``extra`` more
    secrets. Calling the redactor is cheap when no secret is configured. Thread-safe: the
    clients of a factory's pipeline thread share their redactor with the loop's.
    """

    __slots__ = (
        "__weakref__",
        "_cache",
        "_configuration",
        "_extra",
        "_history",
        "_key_cache",
        "_lock",
    )

    def __init__(self, configuration: Any = None, extra: Iterable[str] = ()) -> None:
        self._configuration = configuration
        self._extra = tuple(s for s in extra if s)
        self._key_cache: tuple[str, tuple[str, ...]] | None = None
        self._history: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._cache: tuple[frozenset[str], list[str]] | None = None
        self._lock = threading.Lock()

    def remember(self, *values: object) -> None:
        """Keep the credentials in ``values`` (an Authorization header value, a token) as
        secrets, for the last :data:`HISTORY` of them, whatever the configuration holds
        later: the client calls it with what each request sends, before it is sent."""
        with self._lock:
            for value in values:
                if isinstance(value, str) and value:
                    self._note(value)

    def _note(self, value: str) -> None:
        """(with the lock) ``value`` and the forms it may be echoed in, as the newest."""
        if value in self._history:
            self._history.move_to_end(value)
            return
        self._history[value] = _forms(value)
        while len(self._history) > HISTORY:
            self._history.popitem(last=False)

    def secrets(self) -> list[str]:
        """Every secret known now (the configuration's, those remembered, ``extra``),
        longest first."""
        tokens, static = self._current()
        with self._lock:
            for token in tokens:  # (the configuration's tokens join the history)
                self._note(token)
            known = frozenset(f for forms in self._history.values() for f in forms)
            known |= frozenset(static) | frozenset(self._extra)
            cache = self._cache
            if cache is not None and cache[0] == known:
                return cache[1]
            ordered = sorted((s for s in known if len(s) >= MIN_SECRET), key=len, reverse=True)
            self._cache = (known, ordered)
            return ordered

    def _current(self) -> tuple[list[str], list[str]]:
        """What the configuration holds now: its tokens (``api_key`` values, which rotate)
        and its other secrets."""
        cfg = self._configuration
        if cfg is None:
            return [], []
        tokens = [
            value
            for value in (getattr(cfg, "api_key", None) or {}).values()
            if isinstance(value, str) and value
        ]
        static: list[str] = []
        user = getattr(cfg, "username", None) or ""
        password = getattr(cfg, "password", None) or ""
        if password:
            static.append(password)
            static.append(base64.b64encode(f"{user}:{password}".encode()).decode())
        static += self._key_secrets(getattr(cfg, "key_file", None))
        static += _proxy_secrets(cfg)
        return tokens, static

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
        return redact_patterns(text)


def _forms(value: str) -> tuple[str, ...]:
    """A credential and the forms it is echoed in: of an Authorization value ``Scheme X``,
    ``X`` (the scheme word stays readable), and of a ``Basic`` one its decoded
    ``user:password`` and password too."""
    scheme, _, rest = value.partition(" ")
    rest = rest.strip()
    if not rest or scheme.lower() not in ("bearer", "basic", "token"):
        return (value,)
    forms = [rest]
    if scheme.lower() == "basic":
        try:
            plain = base64.b64decode(rest, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            plain = ""
        if plain:
            forms += [plain, plain.partition(":")[2]]
    return tuple(f for f in forms if f)


def _proxy_secrets(cfg: Any) -> list[str]:
    """The credentials of the proxies the client may use: the configuration's ``proxy``
    URL and ``proxy_headers``, and the proxies of the environment (``HTTP_PROXY``,
    ``HTTPS_PROXY``...: kubernetes_asyncio's session trusts the environment), each in the
    forms a proxy may echo them (the password, ``user:password`` and its base64, which
    Proxy-Authorization carries)."""
    urls = [getattr(cfg, "proxy", None), *getproxies().values()]
    found: list[str] = []
    for url in urls:
        if isinstance(url, str) and "@" in url:
            found += _url_credentials(url)
    headers = getattr(cfg, "proxy_headers", None)
    if isinstance(headers, dict):
        for value in headers.values():
            if isinstance(value, str):
                found.append(value)
                found.append(value.split(" ", 1)[-1])
    return found


def _url_credentials(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if not password:
        return []
    plain = f"{unquote(user or '')}:{unquote(password)}"
    return [password, unquote(password), plain, base64.b64encode(plain.encode()).decode()]


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
    return redact_patterns(text)


# -- what an exception carries -------------------------------------------------------------------

_OPAQUE = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.FrameType,
    types.TracebackType,
    types.CodeType,
    types.CoroutineType,
    types.GeneratorType,
    types.AsyncGeneratorType,
    asyncio.AbstractEventLoop,
    asyncio.Future,
    threading.Thread,
    logging.Logger,
    weakref.ref,
)
_SCALARS = (int, float, complex, bool, type(None))
_C_FIELDS: tuple[tuple[type[BaseException], tuple[str, ...]], ...] = (
    # the attributes built-in exceptions keep outside args and __dict__
    (OSError, ("filename", "filename2")),
    (UnicodeError, ("object",)),
    (SyntaxError, ("filename", "text")),
    (ImportError, ("name", "path")),
    (StopIteration, ("value",)),
)


def reachable_texts(
    root: object, *, max_depth: int = 10, max_nodes: int = 20_000
) -> Iterator[tuple[str, str]]:
    """``(path, text)`` for every string (and bytes, decoded) reachable from ``root``: an
    exception's ``__cause__`` / ``__context__`` chain, ``args``, ``__notes__`` and
    attributes, and, through them, containers (mappings, sequences, sets) and the
    attributes (``__dict__``, ``__slots__``) of any object, ``max_depth`` steps deep.

    Not walked: tracebacks and frames (their locals hold the client, hence its
    configuration: that is the program's state, not what an error carries), code, classes,
    modules, functions, event loops, futures, threads, loggers. A walk that reaches
    ``max_nodes`` objects stops there and yields ``("...", "<walk cut>")`` last.
    """
    seen: set[int] = set()
    stack: list[tuple[str, object, int]] = [("", root, 0)]
    while stack:
        path, obj, depth = stack.pop()
        if isinstance(obj, str):
            yield path, obj
            continue
        if isinstance(obj, bytes | bytearray | memoryview):
            yield path, bytes(obj).decode("utf-8", "replace")
            continue
        if isinstance(obj, _SCALARS) or isinstance(obj, _OPAQUE) or depth > max_depth:
            continue
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if len(seen) > max_nodes:
            yield "...", "<walk cut>"
            return
        stack.extend(
            (f"{path}{step}", child, depth + 1) for step, child in reversed(_children(obj))
        )


def _children(obj: object) -> list[tuple[str, object]]:
    """The objects one step from ``obj`` (see :func:`reachable_texts`); an object with no
    visible parts (a C type: a URL, a multidict view) stands for its text."""
    out: list[tuple[str, object]] = []
    if isinstance(obj, BaseException):
        out += [(".__cause__", obj.__cause__), (".__context__", obj.__context__)]
        out += [(f".args[{i}]", a) for i, a in enumerate(obj.args)]
        out += [(".__notes__", getattr(obj, "__notes__", None))]
        for cls, names in _C_FIELDS:
            if isinstance(obj, cls):
                out += [(f".{name}", getattr(obj, name, None)) for name in names]
    if isinstance(obj, Mapping):
        try:
            pairs = list(obj.items())
        except Exception:
            return [(".__str__()", _text(obj))]
        for key, value in pairs:
            out += [(f"[{key!r}]", key), (f"[{key!r}]", value)]
    elif isinstance(obj, list | tuple | set | frozenset | deque):
        members: Iterable[object] = obj
        out += [(f"[{i}]", item) for i, item in enumerate(members)]
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        out += [(f".{name}", value) for name, value in attrs.items()]
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                out.append((f".{name}", getattr(obj, name)))
    if not out and not isinstance(obj, BaseException | list | tuple | set | frozenset | deque):
        out.append((".__str__()", _text(obj)))
    return out


def _text(obj: object) -> str:
    try:
        return str(obj)
    except Exception:
        return ""


def carries_secret(obj: object, *, max_nodes: int = 5_000) -> bool:
    """Whether a text reachable from ``obj`` (:func:`reachable_texts`) holds a secret a
    live client knows or an echoed Authorization value; True too when the walk had to be
    cut (what was not looked at may)."""
    for _path, text in reachable_texts(obj, max_nodes=max_nodes):
        if text == "<walk cut>" or redact_known(text) != text:
            return True
    return False

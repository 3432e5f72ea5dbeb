"""Log records without secrets (aioinformer/_core/logs.py): every logger of the library is
made with the redacting filter on; ``install`` puts it on the loggers of the client it
rides on once per process (a RestClient made later changes nothing); the filter cleans the
message, the traceback and the stack and leaves a clean record as it was."""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

import aioinformer
from aioinformer._client.rest import RestClient
from aioinformer._core import logs
from aioinformer._core.redact import REDACTED, Redactor, register
from tests.support import api_client_for

SECRET = "s3cr3t-token-for-logs"


@pytest.fixture
def secret() -> Iterator[Redactor]:
    """A live registered redactor that knows :data:`SECRET`."""
    config = SimpleNamespace(
        api_key={"authorization": f"Bearer {SECRET}"},
        username=None,
        password=None,
        key_file=None,
    )
    yield register(Redactor(config))


@pytest.fixture
def first_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the process had not installed the filter yet (put back after the test)."""
    monkeypatch.setattr(logs, "_installed", False)


def filtered(name: str) -> bool:
    return any(isinstance(f, logs.RedactingFilter) for f in logging.getLogger(name).filters)


def record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("aioinformer.test", logging.ERROR, __file__, 1, msg, args, None)
    made.__dict__.update(extra)
    return made


def test_every_logger_of_the_library_has_the_filter() -> None:
    """Every library module makes its logger with ``logs.logger``: a logger made with
    ``logging.getLogger`` would not be cleaned (a filter on ``aioinformer`` does not apply
    to its children's records)."""
    for module in pkgutil.walk_packages(aioinformer.__path__, "aioinformer."):
        importlib.import_module(module.name)
    names = [
        name
        for name, made in logging.root.manager.loggerDict.items()
        if name.startswith("aioinformer.") and isinstance(made, logging.Logger)
    ]
    assert "aioinformer.informer" in names and "aioinformer.factory" in names
    assert [name for name in names if not filtered(name)] == []


def test_logger_puts_the_filter_on_once() -> None:
    log = logs.logger("aioinformer.test.once")
    assert logs.logger("aioinformer.test.once") is log
    assert sum(isinstance(f, logs.RedactingFilter) for f in log.filters) == 1


@pytest.mark.usefixtures("first_install")
async def test_install_covers_the_existing_loggers_the_first_time_only() -> None:
    before = logging.getLogger("kubernetes_asyncio.test_before")
    logs.install()
    assert filtered("kubernetes_asyncio") and filtered(before.name)
    assert filtered("aioinformer")
    after = logging.getLogger("kubernetes_asyncio.test_after")
    logs.install()  # once per process: later calls return at once
    async with api_client_for("http://127.0.0.1:9") as api:
        RestClient(api)  # (every client calls install)
    assert not filtered(after.name)
    assert not filtered("unrelated.test")


def test_the_filter_cleans_message_arguments(secret: Redactor) -> None:
    made = record("token %s in %s", SECRET, "a reply")
    assert logs.RedactingFilter().filter(made) is True  # cleaned, never dropped
    assert made.getMessage() == f"token {REDACTED} in a reply" and made.args == ()
    echoed = record("the server said: Authorization: Bearer abcdefgh")  # an unknown token
    logs.RedactingFilter().filter(echoed)
    assert echoed.getMessage() == f"the server said: Authorization: Bearer {REDACTED}"


def test_the_filter_cleans_the_traceback_and_the_stack(secret: Redactor) -> None:
    try:
        raise ValueError(f"bad token {SECRET}")
    except ValueError as exc:
        made = record("failed", exc_info=(type(exc), exc, exc.__traceback__))
    made.stack_info = f"Stack:\n  token {SECRET}"
    logs.RedactingFilter().filter(made)
    assert made.exc_info is None and made.exc_text is not None
    assert SECRET not in made.exc_text and REDACTED in made.exc_text
    assert "ValueError" in made.exc_text
    assert made.stack_info == f"Stack:\n  token {REDACTED}"
    text = logging.Formatter().format(made)
    assert SECRET not in text and "ValueError: bad token" in text


def test_a_clean_record_is_left_as_it_was(secret: Redactor) -> None:
    try:
        raise ValueError("nothing secret")
    except ValueError as exc:
        info = (type(exc), exc, exc.__traceback__)
    made = record("%d objects", 3, exc_info=info)
    logs.RedactingFilter().filter(made)
    assert (made.msg, made.args, made.exc_info) == ("%d objects", (3,), info)
    broken = record("%d objects", "not a number")  # a bad format: the handler reports it
    assert logs.RedactingFilter().filter(broken) and broken.args == ("not a number",)

"""Redactor: every secret the configuration holds, every credential the client sent (for the
last HISTORY of them: a token rotated while a request was in flight), and any echoed
Authorization value whatever it holds, becomes ``<redacted>``; short strings are not
searched for; a refreshed token is covered from its first use. The walk over what an
exception carries reaches its chain, args, notes, attributes and containers."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace

import pytest

from aioinformer._core.redact import (
    HISTORY,
    MIN_SECRET,
    REDACTED,
    Redactor,
    carries_secret,
    reachable_texts,
    register,
)


def configuration(**fields: object) -> SimpleNamespace:
    base: dict[str, object] = {"api_key": {}, "username": None, "password": None, "key_file": None}
    return SimpleNamespace(**{**base, **fields})


def test_tokens_with_or_without_their_bearer_prefix() -> None:
    cfg = configuration(api_key={"authorization": "Bearer s3cr3t-token"})
    redact = Redactor(cfg)
    assert redact("token s3cr3t-token leaked") == f"token {REDACTED} leaked"
    assert redact("header: Bearer s3cr3t-token") == f"header: Bearer {REDACTED}"
    cfg.api_key = {"authorization": "Bearer refreshed-token"}  # an exec plugin refreshed it
    assert redact("refreshed-token") == REDACTED


def test_basic_auth_password_and_its_header_form() -> None:
    cfg = configuration(username="alice", password="hunter22")
    header = base64.b64encode(b"alice:hunter22").decode()
    redact = Redactor(cfg)
    assert redact("pw hunter22") == f"pw {REDACTED}"
    assert header not in redact(f"raw {header}")


def test_the_client_key_and_each_of_its_lines(tmp_path: Path) -> None:
    key = tmp_path / "client.key"
    lines = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "BKcwggSjAgEAAoIBAQC7"]
    key.write_text(
        "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"
    )
    redact = Redactor(configuration(key_file=str(key)))
    assert redact(f"echo {lines[1]} end") == f"echo {REDACTED} end"
    assert all(line not in redact(key.read_text()) for line in lines)
    assert Redactor(configuration(key_file=str(tmp_path / "missing")))("text") == "text"


def test_echoed_authorization_values_whatever_the_secret() -> None:
    redact = Redactor(None)
    assert redact("Authorization: Bearer abcdefgh") == f"Authorization: Bearer {REDACTED}"
    assert redact("basic%20dXNlcjpwdw==") == f"basic%20{REDACTED}"


def test_extra_secrets_and_the_minimum_length() -> None:
    redact = Redactor(None, extra=["webhook-secret", "abc"])
    assert redact("a webhook-secret here") == f"a {REDACTED} here"
    assert len("abc") < MIN_SECRET and redact("abc abc") == "abc abc"
    assert Redactor(None).secrets() == []


def test_a_token_rotated_away_is_still_known() -> None:
    """A request went out with the old token; the configuration holds a new one when its
    answer echoes the old one."""
    cfg = configuration(api_key={"BearerToken": "Bearer first-token-abcdef"})
    redact = Redactor(cfg)
    redact("anything")  # (read while the first token was current)
    cfg.api_key = {"BearerToken": "Bearer second-token-abcdef"}
    assert redact("first-token-abcdef second-token-abcdef") == f"{REDACTED} {REDACTED}"


def test_what_was_sent_is_remembered_for_the_last_history_credentials() -> None:
    redact = Redactor(configuration())
    redact.remember("Bearer sent-but-never-configured")
    basic = "Basic " + base64.b64encode(b"alice:pa55word-x").decode()
    redact.remember(basic)
    assert redact("sent-but-never-configured") == REDACTED
    assert redact("pa55word-x alice:pa55word-x") == f"{REDACTED} {REDACTED}"
    for n in range(HISTORY):  # the oldest go once HISTORY newer ones were sent
        redact.remember(f"Bearer later-token-{n:04d}")
    assert redact("sent-but-never-configured") == "sent-but-never-configured"
    assert redact(f"later-token-{HISTORY - 1:04d}") == REDACTED


@pytest.mark.parametrize(
    ("echoed", "shown"),
    [
        ("invalid bearer token s3cr3t-unknown here", "invalid bearer <redacted> here"),
        ("Bearer tok!en$with@odd#chars;", "Bearer <redacted>;"),
        ("Authorization: Bearer a b c\nnext", "Authorization: Bearer <redacted>\nnext"),
        ("Authorization: t0k3n with spaces", "Authorization: <redacted>"),
        ("{'Authorization': 'Bearer x,y'}", "{'Authorization': 'Bearer <redacted>'}"),
        ('{"authorization":["Basic abc"]}', '{"authorization":["Basic <redacted>"]}'),
        ('{\\"Authorization\\":\\"tok\\"}', '{\\"Authorization\\":\\"<redacted>\\"}'),
        ("Proxy-Authorization: Basic zzz", "Proxy-Authorization: Basic <redacted>"),
        ("?authorization=Bearer%20abc&x=1", "?authorization=Bearer%20<redacted>&x=1"),
        ("bearer: x", "bearer: <redacted>"),
    ],
)
def test_an_echoed_authorization_value_whatever_it_holds(echoed: str, shown: str) -> None:
    """The secret goes, not the word after the scheme; whatever its characters."""
    assert Redactor(None)(echoed) == shown
    assert Redactor(None)(shown) == shown  # (cleaning twice changes nothing)


def test_reachable_texts_walks_chains_args_notes_attributes_and_containers() -> None:
    class Carrier:
        __slots__ = ("held",)

        def __init__(self, held: object) -> None:
            self.held = held

    inner = ValueError("plain")
    inner.extra = {"headers": [("Authorization", Carrier(b"deep-secret-1"))]}  # type: ignore[attr-defined]
    cause = KeyError("x")
    cause.add_note("note-secret-2")
    outer = RuntimeError("outer", ("arg-secret-3",))
    outer.__cause__, outer.__context__ = cause, inner
    texts = dict((text, path) for path, text in reachable_texts(outer))
    assert texts["deep-secret-1"] == ".__context__.extra['headers'][0][1].held"
    assert texts["note-secret-2"] == ".__cause__.__notes__[0]"
    assert texts["arg-secret-3"] == ".args[1][0]"
    cut = list(reachable_texts([[i] for i in range(50)], max_nodes=10))
    assert cut[-1] == ("...", "<walk cut>")


def test_carries_secret_knows_what_live_clients_know() -> None:
    secret = register(Redactor(configuration(api_key={"BearerToken": "Bearer walked-token-x"})))
    error = RuntimeError("clean text")
    error.__context__ = OSError(0, "fine", {"authorization": "Bearer walked-token-x"})
    assert carries_secret(error) and not carries_secret(RuntimeError("clean text"))
    assert secret  # (kept alive while the check runs: registered weakly)

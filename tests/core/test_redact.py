"""Redactor: every secret the configuration holds, and any echoed Authorization value,
becomes ``<redacted>``; short strings are not searched for; a refreshed token is covered
from its first use."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace

from aioinformer._core.redact import MIN_SECRET, REDACTED, Redactor


def configuration(**fields: object) -> SimpleNamespace:
    base: dict[str, object] = {"api_key": {}, "username": None, "password": None, "key_file": None}
    return SimpleNamespace(**{**base, **fields})


def test_tokens_with_or_without_their_bearer_prefix() -> None:
    cfg = configuration(api_key={"authorization": "Bearer s3cr3t-token"})
    redact = Redactor(cfg)
    assert redact("token s3cr3t-token leaked") == f"token {REDACTED} leaked"
    assert redact("header: Bearer s3cr3t-token") == f"header: {REDACTED}"
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

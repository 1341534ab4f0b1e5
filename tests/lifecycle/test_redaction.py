"""Every secret kind is removed before storage; ordinary code and prose survive."""

from __future__ import annotations

import pytest

from engram.lifecycle import redact_secrets

SECRETS = [
    ("openai_api_key", "sk-" + "a1B2c3D4e5" * 5),
    ("openai_api_key", "sk-proj-" + "Zy9_x8-Wv7" * 6),
    ("anthropic_api_key", "sk-ant-api03-" + "q1W2e3R4t5" * 9),
    ("github_token", "ghp_" + "A1b2C3d4E5f6" * 3),
    ("github_token", "gho_" + "Z9y8X7w6V5u4" * 3),
    ("github_token", "github_pat_11ABCDEFG0" + "x" * 60),
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
    ("slack_token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKl"),
    ("google_api_key", "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    (
        "private_key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
    ),
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
    ),
    (
        "private_key",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ),  # truncated paste
    ("bearer_token", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh"),
    ("connection_string_password", "postgresql://admin:Sup3rS3cret@db.example.com:5432/app"),
    ("connection_string_password", "mongodb+srv://u:p4ssw0rd!@cluster0.mongodb.net"),
    ("password_or_secret", "password = hunter22"),
    ("password_or_secret", 'DB_PASSWORD="correct horse battery"'),
    ("password_or_secret", "api_key: 9f8e7d6c5b4a39281706"),
    ("password_or_secret", "client_secret=Qw3rTy-uiop"),
    ("password_or_secret", "export GITHUB_TOKEN=abc123def456"),
]


@pytest.mark.parametrize(("kind", "secret"), SECRETS)
def test_each_secret_kind_is_redacted(kind: str, secret: str) -> None:
    result = redact_secrets(f"before {secret} after")
    assert kind in result.kinds
    assert result.redacted
    assert "[REDACTED:" in result.text
    assert result.text.startswith("before ")
    # nothing of the secret's distinctive tail survives
    tail = secret.strip().splitlines()[-1][-8:]
    if kind == "connection_string_password":
        password = secret.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
        assert password not in result.text and "@" in result.text
    elif kind != "private_key":
        assert tail not in result.text


@pytest.mark.parametrize(
    "text",
    [
        "The token expires after 24 hours, refresh it in login()",
        'token = os.environ["API_TOKEN"]',
        "password = settings.db_password",
        "secret: None",
        "api_key = get_api_key()",
        "password_reset_flow sends an email",
        "Use the ask- prefix for tasks",
        "Connect with postgresql://localhost/app (no password)",
        "sk-short is not a key",
        "the password field is validated in forms.py:42",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    result = redact_secrets(text)
    assert result.text == text and result.kinds == []


def test_kinds_are_reported_once_in_order() -> None:
    text = "AKIAIOSFODNN7EXAMPLE and AKIAIOSFODNN7EXAMPL2 then password=abc12345"
    result = redact_secrets(text)
    assert result.kinds == ["aws_access_key", "password_or_secret"]
    assert result.text.count("[REDACTED:aws_access_key]") == 2


@pytest.mark.parametrize("unit", ["a-", "key-", "pw.", "x"])
def test_redaction_time_grows_with_the_text_not_its_square(unit: str) -> None:
    """A memory's text (at most 8,000 characters) is redacted before it is stored, an
    agent's over MCP included. Until stop 33 ``a-`` repeated to 8,000 characters took 66 s
    at load 12 (a word boundary at every character, each scanned to the end of the run for
    a secret's name); under a second idle now (docs/security.md)."""
    import time

    text = unit * (8_000 // len(unit))
    start = time.perf_counter()
    redact_secrets(text)
    assert time.perf_counter() - start < 20  # 66 s before, at load 12

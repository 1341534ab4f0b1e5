"""Secret redaction before anything is stored (V5 §16, TMWS §4.2).

Memories are written by people and agents who paste logs, configs and shell sessions, so
secrets end up in them by accident. Every text is scanned *before* it reaches the store,
the embedding cache or an export, and the caller is told which kinds were removed so the
user knows (and can rotate the key). The patterns prefer recall for well-known key
formats and stay conservative for the generic ``password = value`` form, where code
expressions (``os.environ["X"]``, ``self.token``) must survive untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs


@attrs.frozen
class RedactionResult:
    """The cleaned text and the kinds of secret found, in order of first appearance."""

    text: str
    kinds: list[str] = attrs.field(factory=list)

    @property
    def redacted(self) -> bool:
        return bool(self.kinds)


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


#: (kind, pattern) for secrets whose whole match is replaced. Order matters: the more
#: specific formats (sk-ant-) run before the general ones (sk-).
_TOKEN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
    ),
    ("anthropic_api_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai_api_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}")),
    ("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
]

_BEARER = re.compile(r"(?i)\b(bearer|token)(\s+)([A-Za-z0-9._~+/\-]{16,}=*)")
_CONNECTION_STRING = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/\s@\"']+:)([^@\s/\"']+)(@)")
_SECRET_NAME = (
    r"[A-Za-z0-9_\-.]*(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey"
    r"|access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?key|credentials?)"
    r"[A-Za-z0-9_\-]*"
)
_ASSIGNMENT = re.compile(
    r"(?i)(?P<name>\b" + _SECRET_NAME + r")(?P<sep>\s*[:=]\s*|\s*=>\s*)"
    r"(?:(?P<q>[\"'])(?P<qval>[^\"'\n]{4,})(?P=q)|(?P<val>[^\s\"',;)}\]]{4,}))"
)
_PLACEHOLDERS = {
    "none",
    "null",
    "nil",
    "true",
    "false",
    "undefined",
    "required",
    "optional",
    "string",
    "changeme",
    "example",
    "xxxx",
    "****",
}


def _looks_like_code_or_placeholder(value: str) -> bool:
    """True for values that are references, not secrets (``os.environ[...]``, ``${X}``)."""
    low = value.lower()
    if low in _PLACEHOLDERS or value.startswith(("[REDACTED", "<", "${", "$", "{", "%(", "*")):
        return True
    if "(" in value or "[" in value:
        return True
    # attribute access or a plain identifier such as settings.db_password or get_token
    return bool(re.fullmatch(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+", value)) or bool(
        re.fullmatch(r"[a-z]+(?:_[a-z]+)+", value)
    )


def redact_secrets(text: str) -> RedactionResult:
    """Replace every secret in ``text`` by ``[REDACTED:<kind>]`` and say which kinds."""
    kinds: list[str] = []

    def note(kind: str) -> None:
        if kind not in kinds:
            kinds.append(kind)

    for kind, pattern in _TOKEN_PATTERNS:
        if pattern.search(text):
            note(kind)
            text = pattern.sub(_marker(kind), text)

    def bearer(match: re.Match[str]) -> str:
        value = match.group(3)
        if match.group(1).lower() == "token" and not re.search(r"\d", value):
            return match.group(0)  # "token refresh_handler_function": prose, not a secret
        note("bearer_token")
        return f"{match.group(1)}{match.group(2)}{_marker('bearer_token')}"

    text = _BEARER.sub(bearer, text)

    def connection(match: re.Match[str]) -> str:
        if match.group(2).startswith("[REDACTED"):
            return match.group(0)
        note("connection_string_password")
        return f"{match.group(1)}{_marker('password')}{match.group(3)}"

    text = _CONNECTION_STRING.sub(connection, text)

    def assignment(match: re.Match[str]) -> str:
        value = match.group("qval") if match.group("q") else match.group("val")
        if value is None or _looks_like_code_or_placeholder(value.strip()):
            return match.group(0)
        note("password_or_secret")
        quote = match.group("q") or ""
        return f"{match.group('name')}{match.group('sep')}{quote}{_marker('secret')}{quote}"

    text = _ASSIGNMENT.sub(assignment, text)
    return RedactionResult(text=text, kinds=kinds)


#: For callers that want to plug another scanner in (tests, stricter policies).
Redactor = Callable[[str], RedactionResult]

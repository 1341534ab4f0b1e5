"""Secret redaction: before anything is written under ``.engram/`` or sent anywhere
(docs/security.md "Secrets never on disk").

Memories, hook payloads, observer scratchpads and logs carry what people and agents paste:
logs, configs, shell sessions, tool output. Every such text passes through
:func:`redact_secrets` *before* it reaches the disk (the store, the embedding cache, the
hooks' inbox and digest, scratchpads, logs, team files, exports) or an LLM endpoint, and the
caller is told which kinds were removed so the user knows (and can rotate the key).
docs/security.md lists where it runs; ``scripts/eval/redaction.py`` measures it.

Three layers, most specific first:

1. **Known formats**: a vendor's prefix and shape (``sk-proj-``, ``ghp_``, ``xoxb-``,
   ``AKIA``, ``glpat-``, JWTs, private key blocks …): the whole token goes.
2. **Named secrets**: a value given to a name that says "secret" (``password``, ``token``,
   ``api_key``, ``client_secret`` …) in any of the ways code, configs and shells write it:
   ``NAME = value``, ``"name": "value"``, ``NAME: value``, ``--password value``,
   ``Authorization: Basic …``, ``scheme://user:password@host``.
3. **Random-looking values**: a value given to *any* name (``adafruit_key => "k3…"``)
   or standing after a secret's keyword that looks random (length, character classes and
   Shannon entropy), which is what vendor-specific scanners (gitleaks' keyword rules) catch
   one vendor at a time.

Code must survive: references (``os.environ["TOKEN"]``, ``settings.db_password``,
``get_token()``, ``${TOKEN}``), identifiers, paths, URLs, versions, hashes in lock files and
placeholders are left alone; the false-positive rate on real repositories is measured too.
Standard library only, and imported by the agent hooks, so it stays cheap to import.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

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


# ----------------------------------------------------------------------- 1. known formats

_T = r"[A-Za-z0-9_\-]"  # token characters of most vendor formats

#: (kind, pattern) whose whole match is replaced. Order matters: the more specific formats
#: (sk-ant-) run before the general ones (sk-).
_TOKEN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private_key",
        re.compile(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
            r"[\s\S]*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
    ),
    ("private_key", re.compile(r"PuTTY-User-Key-File-\d: [\s\S]*?Private-MAC: [0-9a-f]+")),
    ("private_key", re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b")),
    ("anthropic_api_key", re.compile(r"\bsk-ant-(?:api|admin)\d\d-" + _T + r"{20,}")),
    ("anthropic_api_key", re.compile(r"\bsk-ant-" + _T + r"{20,}")),
    ("openai_api_key", re.compile(r"\bsk-(?:proj|svcacct|admin|None)-" + _T + r"{16,}")),
    ("openai_api_key", re.compile(r"\bsk-" + _T + r"{20,}")),
    ("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}")),
    ("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9_]{30,}")),
    (
        "gitlab_token",
        re.compile(
            r"\b(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas|glffct|glsa|glcbt)"
            r"-(?:[0-9a-fA-F]{2}_)?" + _T + r"{20,}"
        ),
    ),
    ("gitlab_token", re.compile(r"\bGR1348941" + _T + r"{20,}")),
    ("aws_access_key", re.compile(
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|APKA)[0-9A-Z]{16}\b"
    )),
    ("slack_token", re.compile(r"xox[abposre]-[A-Za-z0-9\-]{10,}")),
    ("slack_token", re.compile(r"\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+", re.I)),
    ("slack_webhook", re.compile(
        r"hooks.slack.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]+"
    )),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("google_oauth", re.compile(r"\bya29\.[0-9A-Za-z_\-]{20,}")),
    ("google_oauth", re.compile(r"\bGOCSPX-[0-9A-Za-z_\-]{28}")),
    ("stripe_key", re.compile(r"\b(?:[rsp]k|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}")),
    ("stripe_key", re.compile(r"\bwhsec_[A-Za-z0-9]{24,}")),
    ("sendgrid_key", re.compile(r"\bSG\.[A-Za-z0-9=_\-.]{40,}")),
    ("twilio_key", re.compile(r"\b(?:AC|SK)[a-z0-9]{32}\b")),
    ("mailchimp_key", re.compile(r"\b[0-9a-z]{32}-us\d{1,2}\b")),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("npm_token", re.compile(r":_authToken=\s*\S+")),
    ("pypi_token", re.compile(r"\bpypi-AgE[A-Za-z0-9_\-]{50,}")),
    ("discord_token", re.compile(
        r"\b[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,}"
    )),
    ("discord_webhook", re.compile(r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+")),
    ("telegram_token", re.compile(r"\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b")),
    ("telegram_token", re.compile(r"\b\d{8,10}:[0-9A-Za-z_-]{35}\b")),
    ("azure_storage_key", re.compile(r"AccountKey=[A-Za-z0-9+/=]{40,}")),
    ("azure_key", re.compile(r"\b[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}")),
    ("square_token", re.compile(r"\b(?:sq0atp|sq0csp|EAAA)[0-9A-Za-z\\_\-]{22,}")),
    ("shopify_token", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),
    ("digitalocean_token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),
    ("huggingface_token", re.compile(r"\b(?:hf_|api_org_)[A-Za-z]{34}\b")),
    ("databricks_token", re.compile(r"\bdapi[a-f0-9]{32}(?:-\d)?\b")),
    ("doppler_token", re.compile(r"\bdp\.(?:pt|st|ct|scim|audit|sa)\.[A-Za-z0-9]{40,}")),
    ("atlassian_token", re.compile(r"\bATATT3[A-Za-z0-9_\-=]{150,}")),
    ("vault_token", re.compile(r"\bhv[sb]\.[A-Za-z0-9_\-]{24,}")),
    ("terraform_token", re.compile(r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,}")),
    ("prefixed_api_key", re.compile(
        r"\b(?:NRAK-[A-Z0-9]{27}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}|pul-[a-f0-9]{40}"
        r"|glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
        r"|sntr[ysu]s?_[A-Za-z0-9+/=_]{30,}|lin_api_[A-Za-z0-9]{40}|dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"
        r"|EZAK[A-Za-z0-9]{54}|FLWSEC[KT]_TEST-[a-h0-9]{12,}-X|LTAI[A-Za-z0-9]{20}"
        r"|ops_eyJ[A-Za-z0-9+/]{250,}={0,3}|A3-[A-Z0-9]{6}-[A-Z0-9-]{11,}|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"
        r"|rubygems_[a-f0-9]{48}|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9=\-_.]{32,64}"
        r"|CLOJARS_[a-z0-9]{60}|dckr_pat_[A-Za-z0-9_-]{27}|oy2[a-z0-9]{43}|glpat-[A-Za-z0-9_-]{20})"
    )),
    ("prefixed_api_key", re.compile(
        r"\b(?:p8e-[A-Za-z0-9]{32}|pat[A-Za-z0-9]{14}\.[a-f0-9]{64}|cmVmd[A-Za-z0-9]{59}"
        r"|ABSK[A-Za-z0-9+/]{100,}={0,2}|bedrock-api-key-[A-Za-z0-9+/=]{20,}"
        r"|v1\.0-[a-f0-9]{24}-[a-f0-9]{64,}|EZ[AT]K[A-Za-z0-9]{54}|EAA[MC][A-Za-z0-9]{60,}"
        r"|FLW(?:PUB|SEC)K_TEST-[a-hA-H0-9]{12,}(?:-X)?|fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{60,}={0,3}"
        r"|(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}|HRKU-[\w-]{40,}"
        r"|ico-[A-Za-z0-9]{32}|s-s4t2(?:ud|af)-[a-f0-9]{64}|ntn_\d{11}[A-Za-z0-9]{35}"
        r"|API-[A-Z0-9]{26}|sha256~[\w-]{43}|pplx-[A-Za-z0-9]{48}|pnu_[A-Za-z0-9]{36}"
        r"|rdme_[a-z0-9]{70}|tk-us-[\w-]{48}|sntr[ysu]{1,2}_[A-Za-z0-9+/=_]{30,}"
        r"|sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}|shippo_(?:live|test)_[a-fA-F0-9]{40}"
        r"|sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40}"
        r"|SK[0-9a-fA-F]{32}|duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}|fio-u-[\w\-=]{64}"
        r"|NRJS-[a-f0-9]{19}|NRII-[\w-]{32}|NRAK-[A-Za-z0-9]{27}|4b1d[A-Za-z0-9]{38}"
        r"|[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk|eyJrIjoi[A-Za-z0-9]{70,400}={0,3}"
        r"|ZXlK[A-Za-z0-9+/_-]{40,}={0,2}|A{22}[A-Za-z0-9%]{60,}|gsk_[A-Za-z0-9]{52}"
        r"|xai-[A-Za-z0-9]{80}|r8_[A-Za-z0-9]{37}|AKCp[A-Za-z0-9]{69}|glsa_\w{32}_[a-fA-F0-9]{8})"
    )),
    ("prefixed_api_key", re.compile(
        r"(?i)\b(?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}"
        r"\.[a-z0-9+/_=-]{30,120}|\btfp_[a-z0-9\-_.=]{59}"
    )),
    ("sidekiq_secret", re.compile(r"\b[0-9a-f]{8}:[0-9a-f]{8}\b(?=[^:]|$)")),
    ("prefixed_api_key", re.compile(r"(?i)\bdt0c01\.[a-z0-9]{24}\.[a-z0-9]{64}")),
    ("jwt", re.compile(
        r"\bey[A-Za-z0-9]{17,}\.ey[A-Za-z0-9/\\_-]{17,}\.(?:[A-Za-z0-9/\\_-]{10,}={0,2})?"
    )),
    ("vault_token", re.compile(r"\bs\.(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]{24}\b")),
    ("facebook_token", re.compile(r"\b\d{15,16}(?:\||%)[0-9a-z\-_]{27,40}\b")),
    ("basic_auth", re.compile(r"(?<=[\s'\"])(?:-u|--user)[= ]['\"]?[^\s'\":]+:[^\s'\"]+['\"]?")),
    ("password_or_secret", re.compile(
        r"(?i)(?<=key=\")[^\"]*(?:password|secret|token|apikey)[^\"]*\"\s*value=\"[^\"]+(?=\")"
    )),
    ("artifactory_key", re.compile(
        r"(?:(?<=[\s=:\"'])|^)(?:AKC[A-Za-z0-9]{10,}|AP[\dA-F][A-Za-z0-9]{8,})(?=[\s\"']|$)"
    )),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-=]+\.[A-Za-z0-9_\-=]+(?:\.[A-Za-z0-9_\-+/=]*)?")),
    ("softlayer_key", re.compile(r"/soap/v3[^/\s]{0,2}/[a-z0-9]{64}\b")),
    ("aws_secret_key", re.compile(
        r"(?i)(?<=aws)(?:[^\n]{0,40}?)(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
    )),
]  # fmt: skip

# ------------------------------------------------------------------------ 2. named secrets

_BEARER = re.compile(
    r"(?i)\b(bearer|token|basic|digest|apikey|api-key)(\s+)([A-Za-z0-9._~+/\-]{12,}=*)"
)
_CONNECTION_STRING = re.compile(
    r"((?:\b[a-zA-Z][a-zA-Z0-9+.\-]{0,31})?://[^:/\s@\"'<>]+:)([^@\s/\"'<>]+)(@)"
)

#: words that make a name a secret's name
_SECRET_WORD = (
    r"(?:password|passwd|passphrase|pass|pwd|pw|secret|token|api[_\-. ]?key|apikey|access[_\-]?key"
    r"|private[_\-]?key|client[_\-]?secret|auth[_\-]?(?:key|token)?|credentials?|creds?|sig|signature"
    r"|salt|session[_\-]?key|encryption[_\-]?key|master[_\-]?key|key)"
)
#: A secret's name: the words around it bounded, the tail possessive (what follows a name is
#: never a name character). Unbounded, each word boundary of a run of name characters was
#: scanned to the run's end: ``a-a-a-…`` cost the square of its length, 8,000 characters 66 s
#: at load 12, and a hook redacts whole files an agent read (stop 33; the bounds changed
#: nothing on 889,135 lines of four public repositories, scripts/bench/redaction_worst_case.py)
_SECRET_NAME = r"[A-Za-z0-9_\-.]{0,64}" + _SECRET_WORD + r"[A-Za-z0-9_\-]{0,64}+"
#: NAME = value, NAME: value, "name": "value", NAME => value, NAME := value, in any quoting
_ASSIGNMENT = re.compile(
    r"(?i)(?P<name>\b" + _SECRET_NAME + r")(?P<nq>[\\\"'`\]]{0,3})"
    r"(?P<sep>\s*(?::{1,3}=|=>|\?=|>?=|:{1,3}|\|\|)\s*|\s+)"
    r"(?:(?P<q>[\"'`])(?P<qval>[^\"'`\n]{3,})(?P=q)|(?P<oq>\\?[\"'`]{0,2})(?P<val>[^\s\"'`,;)}\]]{3,}))"
)
#: --password VALUE, --token=VALUE, -p VALUE (mysql), /p:VALUE; and ``aws_secret_access_key VALUE``
_FLAG = re.compile(
    r"(?i)(?P<name>(?:--?|/)(?:[a-z0-9]{1,32}[\-_]){0,8}"
    + _SECRET_WORD
    + r"(?:[\-_][a-z0-9]{1,32}){0,8}+)"
    r"(?P<sep>=|:|\s+)(?P<q>[\"']?)(?P<val>[^\s\"']{3,})(?P=q)"
)
_SPACED = re.compile(
    r"(?i)(?P<name>\b[A-Za-z0-9_]{0,64}(?:secret|password|passwd|token|api_?key|access_?key)"
    r"[A-Za-z0-9_]{0,64}+)(?P<sep>\s+(?:is\s+|was\s+|of\s+)?)(?P<val>[A-Za-z0-9+/=_\-.~!@#$%^&*]{8,})"
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
    "password",
    "secret",
    "token",
    "redacted",
    "hidden",
    "dummy",
    "test",
    "placeholder",
}
_CODE_VALUE = re.compile(
    r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+|[a-z]+(?:_[a-z]+)+|[a-z][a-zA-Z]*[A-Z][a-zA-Z]*"
    r"|[A-Z][A-Z_]+|[a-z]{1,15}|[A-Z][a-z]+(?:[A-Z][a-z]+)*|\d+(?:\.\d+)*|[\w.\-]*/[\w./\-]*"
)


def _looks_like_code_or_placeholder(value: str) -> bool:
    """True for values that are references, not secrets (``os.environ[...]``, ``${X}``)."""
    low = value.lower().strip("*._-")
    if low in _PLACEHOLDERS or value.startswith(
        ("[REDACTED", "<", "${", "$", "{", "%(", "%s", "*", "#", "&", "@", "!", "?", "(")
    ):
        return True
    if any(c in value for c in "([{}") or value.endswith((":", ".")):
        return True
    if set(value) <= set("x*.-_#") or len(set(value)) <= 2:
        return True
    # identifiers, attribute paths, constants, numbers and paths are code, not credentials
    return _CODE_VALUE.fullmatch(value) is not None and not looks_random(value, near_keyword=True)


# ------------------------------------------------------------------ 3. random-looking values


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` (random base62 ≈ 5.7; English words ≈ 3.5)."""
    if not text:
        return 0.0
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def looks_random(value: str, *, near_keyword: bool = False, hex_ok: bool = False) -> bool:
    """Whether ``value`` has the shape of a generated credential rather than a word or code.

    Random tokens mix letters and digits and spread over their alphabet; identifiers,
    words, paths and version strings do not. Next to a secret's keyword a lower bar applies;
    hex strings and UUIDs count only there or when ``hex_ok`` (a name that is not a hash's).
    """
    core = value.strip("\"'`=")
    n = len(core)
    if n < (12 if near_keyword else 14) or n > 512:
        return False
    if not re.search(r"\d", core) or not re.search(r"[A-Za-z]", core):
        return False
    if core.count("/") > 3 or core.count(".") > 3 or core.startswith(("/", "./", "../")):
        return False  # a path or a dotted name
    if (_UUID.fullmatch(core) or _HEX.fullmatch(core)) and not (near_keyword or hex_ok):
        return False  # a hash or an id, unless a secret's name says otherwise
    if re.fullmatch(r"v?\d+(?:[._-]\d+)*(?:[._-]?[a-z]+\d*)?", core):
        return False  # a version
    if n <= 40 and re.fullmatch(
        r"[A-Za-z_][A-Za-z_]*\d{0,2}(?:\.[A-Za-z_][A-Za-z_]*\d{0,2})+", core
    ):
        return False  # an attribute path (windll.kernel32)
    if re.fullmatch(r"[A-Za-z_]+=.*", core):
        return False  # code or a query string: terminal_width=60
    if "/" in core and re.search(r"\.[A-Za-z]{1,5}$", core):
        return False  # a file path
    if _reads_as_identifier(core):
        return False  # TCP4ServerEndpoint, getHTTP2Client: words, not noise
    entropy = shannon_entropy(core)
    # the most a string of n distinct characters can reach is log2(n): demand most of it
    bar = min(3.0, 0.8 * math.log2(n))
    if entropy < bar:
        return False
    digits = sum(c.isdigit() for c in core)
    return (digits >= 2 or (digits == 1 and n >= 16)) and digits < n - 2


def _reads_as_identifier(core: str) -> bool:
    """CamelCase or snake_case made of real-length words, with at most two digits."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", core) or sum(c.isdigit() for c in core) > 2:
        return False
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", core)
    if not words or len(words) > 8 or sum(len(w) for w in words) / len(words) < 4:
        return False

    def wordlike(word: str) -> bool:  # an acronym, or letters a person could pronounce
        if word.isupper():
            return len(word) <= 5
        return sum(c in "aeiouy" for c in word.lower()) / len(word) >= 0.25

    return all(wordlike(w) for w in words)


#: names whose long hex or UUID values are hashes and ids, not credentials
_HASH_NAME = re.compile(
    r"(?i)(?:sha\d*|hash|digest|checksum|md5|etag|integrity|commit|rev|revision|uuid|guid"
    r"|(?:^|[_\-.])id|version|fingerprint|nonce|color|colour)$"
)
#: a value after an assignment-like separator, to any name (gitleaks' keyword-rule shape)
_ANY_ASSIGNMENT = re.compile(
    r"(?P<pre>[ \t\\\"'`\]]{0,16}(?::{1,3}=|=>|\?=|\|\||[:=>,])[`'\" \t=:>|,?\\]{0,16})"
    r"(?P<val>[A-Za-z0-9+/_\-.~%]{14,}(?:={1,3}(?!\w))?)"
)
_LAST_NAME = re.compile(r"([A-Za-z_][\w.\-]*)[^\w]*$")
#: a long token right after a secret's keyword, whatever stands between (up to 20 chars)
_AFTER_KEYWORD = re.compile(
    r"(?i)(?P<pre>\b[\w.\-]{0,64}" + _SECRET_WORD + r"[\w.\- \t]{0,20}?[\"'`]?[ \t:=>,|(\[]{1,5}"
    r"[\"'`]?)(?P<val>[A-Za-z0-9+/_\-.~=]{12,})"
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
        word = match.group(1).lower()
        if word in ("token", "basic", "digest") and not (
            re.search(r"\d", value) and looks_random(value, near_keyword=True)
        ):
            return match.group(0)  # "token refresh_handler_function": prose, not a secret
        note("bearer_token")
        return f"{match.group(1)}{match.group(2)}{_marker('bearer_token')}"

    text = _BEARER.sub(bearer, text)

    def connection(match: re.Match[str]) -> str:
        if match.group(2).startswith(("[REDACTED", "$", "{", "<", "%")):
            return match.group(0)
        note("connection_string_password")
        return f"{match.group(1)}{_marker('password')}{match.group(3)}"

    text = _CONNECTION_STRING.sub(connection, text)

    def assignment(match: re.Match[str]) -> str:
        value = match.group("qval") if match.group("q") else match.group("val")
        if value is None or _looks_like_code_or_placeholder(value.strip()):
            return match.group(0)
        if match.group("sep").strip() == "" and not (
            looks_random(value, near_keyword=True)
            or (
                (match.group("q") or match.group("oq"))
                and len(value) >= 16
                and " " not in value
                and shannon_entropy(value) >= 3.5
            )
        ):
            return match.group(0)  # "you mean to pass '--{name}'": prose, not a secret
        note("password_or_secret")
        quote = match.group("q") or ""
        opening = match.group("oq") or ""
        return (
            f"{match.group('name')}{match.group('nq')}{match.group('sep')}"
            f"{quote}{opening}{_marker('secret')}{quote}"
        )

    text = _ASSIGNMENT.sub(assignment, text)

    def flag(match: re.Match[str]) -> str:
        value = match.group("val")
        if _looks_like_code_or_placeholder(value) and not looks_random(value, near_keyword=True):
            return match.group(0)
        note("password_or_secret")
        q = match.group("q")
        return f"{match.group('name')}{match.group('sep')}{q}{_marker('secret')}{q}"

    text = _FLAG.sub(flag, text)

    def spaced(match: re.Match[str]) -> str:
        value = match.group("val").rstrip(".,;:!?")
        said = match.group("sep").strip() != ""  # "password is hunter3xyzzy"
        if not (
            looks_random(value, near_keyword=True)
            or (
                said
                and len(value) >= 6
                and re.search(r"[\d\W_]", value)
                and not _looks_like_code_or_placeholder(value)
            )
        ):
            return match.group(0)
        note("password_or_secret")
        return f"{match.group('name')}{match.group('sep')}{_marker('secret')}"

    text = _SPACED.sub(spaced, text)

    def random_value(kind: str, near_keyword: bool) -> Callable[[re.Match[str]], str]:
        def replace(match: re.Match[str]) -> str:
            value = match.group("val")
            name = match.groupdict().get("name") or ""
            hex_ok = bool(name) and not _HASH_NAME.search(name)
            if "REDACTED" in value or not looks_random(
                value, near_keyword=near_keyword, hex_ok=hex_ok
            ):
                return match.group(0)
            note(kind)
            return f"{match.group('pre')}{_marker(kind)}"

        return replace

    text = _AFTER_KEYWORD.sub(random_value("secret", True), text)
    text = _redact_assigned_values(text, note)
    return RedactionResult(text=text, kinds=kinds)


_NUMERIC_NAME = re.compile(
    r"(?i)(?:time|ts|stamp|date|size|count|max|min|limit|port|seed|num|number|int|float|len"
    r"|length|offset|epoch|total|sum|line|width|height|big|value|val|expected|want)\w{0,3}$"
)


def _long_number_id(value: str, name: str) -> bool:
    """A 16-20 digit number given to a name that is not a number's: a client id or key."""
    return (
        value.isdigit()
        and 16 <= len(value) <= 20
        and bool(name)
        and not _NUMERIC_NAME.search(name)
        and not _HASH_NAME.search(name)
        and shannon_entropy(value) >= 2.5
    )


def _redact_assigned_values(text: str, note: Callable[[str], None]) -> str:
    """Random-looking values after ``=``, ``:``, ``=>``, ``,`` … whatever the name.

    The name is the nearest identifier before the separator: a hash's name (``sha256``,
    ``etag``, ``id``) keeps its hex or UUID value; any other name's does not.
    """
    out: list[str] = []
    last = 0
    for match in _ANY_ASSIGNMENT.finditer(text):
        value = match.group("val")
        if "REDACTED" in value:
            continue
        name_match = _LAST_NAME.search(text, max(0, match.start() - 64), match.start())
        name = name_match.group(1) if name_match else ""
        hex_ok = bool(name) and not _HASH_NAME.search(name)
        if not (looks_random(value, hex_ok=hex_ok) or _long_number_id(value, name)):
            continue
        note("high_entropy_value")
        out.append(text[last : match.start("val")])
        out.append(_marker("high_entropy_value"))
        last = match.end("val")
    out.append(text[last:])
    return "".join(out)


def redact_value(value: object, kinds: list[str] | None = None) -> object:
    """``value`` (a decoded JSON document: dicts, lists, strings) with every string redacted.

    For payloads written to disk as they came (an agent hook's tool input and output);
    ``kinds`` collects what was found.
    """
    if isinstance(value, str):
        result = redact_secrets(value)
        if kinds is not None:
            kinds.extend(k for k in result.kinds if k not in kinds)
        return result.text
    if isinstance(value, dict):
        return {k: redact_value(v, kinds) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, kinds) for v in value]
    return value


def describe_redactions(kinds: Mapping[str, int] | Sequence[str]) -> str:
    """``1 secret (aws-secret-key)``, ``3 secrets (github-token, private-key)``: how many
    secrets were redacted and of which kinds, for the one line a person reads (a count
    alone does not tell them which credential to rotate)."""
    counts = dict(kinds) if isinstance(kinds, Mapping) else dict.fromkeys(kinds, 1)
    total = sum(counts.values())
    names = ", ".join(kind.replace("_", "-") for kind in sorted(counts))
    return f"{total} secret{'' if total == 1 else 's'} ({names})"


#: For callers that want to plug another scanner in (tests, stricter policies).
Redactor = Callable[[str], RedactionResult]

__all__ = [
    "RedactionResult",
    "Redactor",
    "describe_redactions",
    "looks_random",
    "redact_secrets",
    "redact_value",
    "shannon_entropy",
]


class RedactingFormatter(logging.Formatter):
    """Log lines with secrets redacted: a background child's stderr and the engine's log are
    files under ``.engram/logs/`` (docs/security.md), and a log line may quote tool output."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_secrets(super().format(record)).text

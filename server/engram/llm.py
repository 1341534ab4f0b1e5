"""The one client for the optional OpenAI-compatible endpoint (``[llm]``; docs/security.md).

Two capabilities may ask an LLM: the observer rewords promoted memories
(``observer.llm``) and the contradiction judge reads pairs the rules left open
(``lifecycle.contradictions``). Both send memory text off the machine, so everything that
decides *where* it goes, *with which key* and *what* leaves is written once, here:

* **Endpoint.** ``base_url`` and ``model`` come from the merged settings
  (:func:`engram.config.load_settings`), where a workspace's ``[llm]`` section applies only
  after the user approved that exact content (``engram trust``). Only ``http``/``https``
  URLs are used and redirects are never followed, so an approved endpoint cannot hand the
  request on to another host.
* **Key.** Read from the user's environment only: ``$ENGRAM_LLM_API_KEY``, or the variable
  the user's *own* settings name in ``llm.api_key_env`` (a workspace can never set that key,
  :data:`engram.workspace_trust._NEVER_FROM_WORKSPACE`). :func:`api_key` is the only reader.
* **Redaction.** Every text that goes out (the instruction and each item) passes through
  :func:`engram.redaction.redact_secrets` just before the request, even text stored before
  a rule existed.
* **Answers.** One JSON list, one entry per item, in order; anything else (HTTP error,
  timeout, refused connection, prose, a list of the wrong length) is an :class:`LlmError`
  with one line to log. Callers treat an error as "no answer" and fall back to what they do
  without an LLM: the endpoint is never required.

httpx (a dependency already, through the MCP SDK) is imported on the first call only.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import urlsplit

import attrs

from engram import __version__
from engram.config import LlmConfig
from engram.jsontypes import JsonObject, JsonValue
from engram.redaction import redact_secrets
from engram.workspace_trust import LLM_KEY_ENV

log = logging.getLogger(__name__)

#: (url, payload, headers, timeout) -> the endpoint's parsed JSON answer. Tests of callers may
#: pass one instead of a server; the default posts with httpx.
PostJson = Callable[[str, JsonObject, dict[str, str], float], object]

#: One item sent to the model: a note, or labelled texts (``(("OLD", a), ("NEW", b))``).
Item = str | tuple[tuple[str, str], ...]

#: an answer larger than this is no answer to a few short questions
MAX_ANSWER_BYTES = 1_000_000
DEFAULT_TIMEOUT = 20.0


class LlmError(Exception):
    """The endpoint gave no usable answer; ``str(exc)`` is one line naming why."""


def api_key(config: LlmConfig, environ: Mapping[str, str] | None = None) -> str | None:
    """The key to send, from the user's environment only (docs/security.md, "The LLM key").

    ``config.api_key_env`` can only have come from the user's own settings: the settings
    loader drops it from a workspace's files whether or not they are approved.
    """
    env = os.environ if environ is None else environ
    value = env.get(config.api_key_env or LLM_KEY_ENV)
    return value or None


def _host(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc or url[:60]


def _post_httpx(url: str, payload: JsonObject, headers: dict[str, str], timeout: float) -> object:
    import httpx  # only a configured endpoint pays for the import

    host = _host(url)
    try:
        response = httpx.post(
            url, json=payload, headers=headers, timeout=timeout, follow_redirects=False
        )
    except httpx.TimeoutException as exc:
        raise LlmError(f"the LLM endpoint {host} did not answer within {timeout:g} s") from exc
    except httpx.HTTPError as exc:
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise LlmError(f"cannot reach the LLM endpoint {_host(url)}: {reason}") from exc
    if response.status_code != 200:
        raise LlmError(f"the LLM endpoint {_host(url)} answered HTTP {response.status_code}")
    if len(response.content) > MAX_ANSWER_BYTES:
        raise LlmError(f"the LLM endpoint {_host(url)} answered more than 1 MB")
    try:
        return response.json()
    except ValueError as exc:
        raise LlmError(f"the LLM endpoint {host} answered something that is not JSON") from exc


def _render(index: int, item: Item) -> str:
    """``1. note`` or ``1. OLD: "a"\\n   NEW: "b"``: each text redacted before it is quoted."""
    if isinstance(item, str):
        return f"{index}. {redact_secrets(item).text}"
    lines = [
        f"{label}: {json.dumps(redact_secrets(text).text, ensure_ascii=False)}"
        for label, text in item
    ]
    return f"{index}. " + "\n   ".join(lines)


def _answer_text(answer: object) -> str:
    try:
        text = answer["choices"][0]["message"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError) as exc:
        raise LlmError("the LLM endpoint's answer has no choices[0].message.content") from exc
    if not isinstance(text, str):
        raise LlmError("the LLM endpoint's answer content is not text")
    return text


@attrs.frozen
class LlmClient:
    """A configured endpoint. Build it with :meth:`from_config`, never from a workspace file."""

    base_url: str
    model: str
    key: str | None = attrs.field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    post: PostJson | None = attrs.field(default=None, repr=False, eq=False)

    @classmethod
    def from_config(
        cls,
        config: LlmConfig | None,
        *,
        environ: Mapping[str, str] | None = None,
        post: PostJson | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> LlmClient | None:
        """The client for the merged ``[llm]`` settings, or ``None`` when none is configured
        (or the URL is not http/https: logged once, never raised)."""
        if config is None or not config.base_url or not config.model:
            return None
        base = str(config.base_url).strip()
        if urlsplit(base).scheme not in ("http", "https") or not urlsplit(base).netloc:
            log.warning("ignoring llm.base_url %r: not an http(s) URL", base[:80])
            return None
        return cls(base.rstrip("/"), str(config.model), api_key(config, environ), timeout, post)

    @property
    def url(self) -> str:
        return self.base_url + "/chat/completions"

    def ask_list(self, instruction: str, items: Sequence[Item]) -> list[JsonValue]:
        """Send ``instruction`` and the numbered ``items`` in one call; one answer per item.

        Raises :class:`LlmError` (one line) for any failure or an answer that is not a JSON
        list as long as ``items``; the caller checks each entry's type.
        """
        if not items:
            return []
        headers = {"Content-Type": "application/json", "User-Agent": f"engram/{__version__}"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        numbered = "\n".join(_render(i + 1, item) for i, item in enumerate(items))
        payload: JsonObject = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": redact_secrets(instruction).text},
                {"role": "user", "content": numbered},
            ],
        }
        try:
            answer = (self.post or _post_httpx)(self.url, payload, headers, self.timeout)
        except LlmError:
            raise
        except Exception as exc:  # an injected transport's failure is no answer either
            reason = " ".join(str(exc).split())[:120] or type(exc).__name__
            raise LlmError(f"the LLM endpoint {_host(self.url)} failed: {reason}") from exc
        text = _answer_text(answer)
        start, end = text.find("["), text.rfind("]")
        try:
            parsed = json.loads(text[start : end + 1]) if 0 <= start < end else None
        except ValueError:
            parsed = None
        if not isinstance(parsed, list):
            raise LlmError(f"the LLM endpoint {_host(self.url)} answered no JSON list")
        if len(parsed) != len(items):
            raise LlmError(
                f"the LLM endpoint {_host(self.url)} answered {len(parsed)} entries "
                f"for {len(items)} items"
            )
        return parsed


__all__ = ["DEFAULT_TIMEOUT", "Item", "LlmClient", "LlmError", "PostJson", "api_key"]

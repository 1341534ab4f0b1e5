"""Cheap text rules the signal detectors share: error fingerprints, command classes,
self-correction / dead-end language, and instructions hidden in web content.

Everything here is a precompiled regular expression over text that ``events`` already
truncated, so each call costs microseconds (the per-event budget is 2 ms, docs/observer.md).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

# --------------------------------------------------------------------------- errors

_ERROR_LINE = re.compile(
    r"(error|exception|traceback|failed|failure|fatal|panic|cannot|can't|unable|"
    r"not found|no such|denied|refused|timed? ?out|assert)",
    re.IGNORECASE,
)
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{7,64}\b")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*[/\\])+[\w.-]+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_NAMED_ERROR = re.compile(
    r"\b(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning)|error(?:\[\w+\])?|fatal|panic)\b[:(]"
)
_TALLY = re.compile(r"^\W*\d+ (?:failed|passed|errors?)\b.*\bin [\d.]+s", re.IGNORECASE)
_QUOTED_ADDR = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>")
_SPACE = re.compile(r"\s+")
_TEST_SUMMARY = re.compile(r"^=+ .* =+$")


def error_headline(text: str) -> str:
    """The line that says what went wrong: the last line naming an error type
    (``KeyError: …``, ``error: …``), else the last error-looking line that is not a test
    runner's tally (``1 failed in 0.12s``), else the first line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    for line in reversed(lines):
        if _NAMED_ERROR.search(line):
            return _strip_prefix(line)[:300]
    for line in reversed(lines):
        if _TEST_SUMMARY.match(line) or _TALLY.search(line):
            continue
        if _ERROR_LINE.search(line):
            return _strip_prefix(line)[:300]
    return lines[0][:300]


def _strip_prefix(line: str) -> str:
    """``FAILED tests/x.py::t - KeyError: 'a'`` -> ``KeyError: 'a'``; ``E   x`` -> ``x``."""
    named = _NAMED_ERROR.search(line)
    if named and line.startswith(("FAILED", "ERROR", "E ")):
        return line[named.start() :]
    return line[2:].strip() if line.startswith("E ") else line


def error_fingerprint(text: str) -> str:
    """The same error twice gets the same fingerprint: numbers, paths, hex ids and object
    addresses are replaced by placeholders, whitespace is collapsed (docs/observer.md
    error-retry)."""
    line = error_headline(text)
    line = _QUOTED_ADDR.sub("<obj>", line)
    line = _PATH.sub("<path>", line)
    line = _HEX.sub("<hex>", line)
    line = _NUMBER.sub("<n>", line)
    return _SPACE.sub(" ", line).strip()[:200]


# --------------------------------------------------------------------------- commands

_TEST_COMMAND = re.compile(
    r"(?:^|[\s;&|(/])(pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|ava|rspec|phpunit|"
    r"ctest|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test|go\s+test|cargo\s+(?:test|nextest)|"
    r"mvn\s+(?:-\S+\s+)*(?:test|verify)|gradlew?\s+(?:\S+\s+)*test|make\s+(?:test|check)|"
    r"dotnet\s+test|mix\s+test|deno\s+test)\b"
)
_COMMIT_COMMAND = re.compile(r"\bgit\s+(?:-\S+\s+)*commit\b")
_GIT_COMMAND = re.compile(r"\bgit\s+(\w[\w-]*)")
_BUILD_COMMAND = re.compile(
    r"\b(make|cmake|tsc|mypy|ruff|eslint|flake8|cargo\s+(?:build|check|clippy)|go\s+(?:build|vet)|"
    r"npm\s+run\s+(?:build|lint|typecheck)|gradlew?\s+build|mvn\s+(?:compile|package))\b"
)
_INSTALL_COMMAND = re.compile(r"\b(pip|uv|npm|pnpm|yarn|cargo|go)\s+(install|add|get|sync)\b")
#: ``[main 3f2a9c1] message``; the branch bounded: from each ``[`` of a tool's output the
#: unbounded form scanned to the end, 3 s for 6,000 of them, the square of it (stop 33)
_COMMIT_SHA = re.compile(r"\[[^\]\s]{1,255}(?: \([^)]{0,100}\))? ([0-9a-f]{7,40})\]")
_PASSED_COUNT = re.compile(r"\b(\d+) (?:passed|passing)\b")
_FAILED_COUNT = re.compile(r"\b(\d+) (?:failed|failing|errors?)\b")


def classify_command(command: str) -> str:
    """A step label for a shell command: ``test``, ``commit``, ``git-<verb>``, ``build``,
    ``install`` or ``run`` (recipes compare these labels, not raw commands)."""
    if _TEST_COMMAND.search(command):
        return "test"
    if _COMMIT_COMMAND.search(command):
        return "commit"
    git = _GIT_COMMAND.search(command)
    if git:
        return f"git-{git.group(1)}"
    if _INSTALL_COMMAND.search(command):
        return "install"
    if _BUILD_COMMAND.search(command):
        return "build"
    return "run"


def commit_sha_from_output(output: str) -> str | None:
    """``[main 3f2a9c1] message`` -> ``3f2a9c1``."""
    match = _COMMIT_SHA.search(output)
    return match.group(1) if match else None


def run_passed(exit_code: int | None, output: str) -> bool | None:
    """Did a test run pass? The exit code decides; without one, the summary line does."""
    if exit_code is not None:
        return exit_code == 0
    failed = _FAILED_COUNT.search(output)
    if failed and int(failed.group(1)) > 0:
        return False
    if _PASSED_COUNT.search(output) or re.search(r"^OK\b", output, re.MULTILINE):
        return True
    return None


def normalise_command(command: str) -> str:
    return _SPACE.sub(" ", command.strip())[:200]


def normalise_pattern(pattern: str) -> str:
    return _SPACE.sub(" ", pattern.strip().lower())[:200]


# --------------------------------------------------------------------------- files

_CONFIG_NAMES = frozenset(
    {
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "tox.ini",
        "pytest.ini",
        "mypy.ini",
        ".flake8",
        "requirements.txt",
        "package.json",
        "tsconfig.json",
        "webpack.config.js",
        "vite.config.ts",
        "vite.config.js",
        "babel.config.js",
        ".babelrc",
        ".eslintrc",
        ".eslintrc.json",
        ".prettierrc",
        "cargo.toml",
        "go.mod",
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
        "makefile",
        "dockerfile",
        "docker-compose.yml",
        "docker-compose.yaml",
        ".env",
        ".env.example",
        "settings.py",
        "config.py",
        "conftest.py",
    }
)
_CONFIG_SUFFIXES = (".toml", ".ini", ".cfg", ".conf", ".yaml", ".yml", ".properties", ".env")


def is_config_file(path: str) -> bool:
    name = PurePosixPath(path).name.lower()
    if name in _CONFIG_NAMES or name.startswith(".env"):
        return True
    if name.endswith(_CONFIG_SUFFIXES):
        return True
    parts = PurePosixPath(path).parts
    return any(p in ("config", "configs", ".github", "settings") for p in parts[:-1])


def module_of(path: str) -> str:
    """The module a file belongs to: its directory (``.`` for top-level files)."""
    parent = PurePosixPath(path).parent.as_posix()
    return parent if parent else "."


# --------------------------------------------------------------------------- language

#: Self-correction in reasoning text (docs/observer.md). "Wait" alone is too common, so it needs a
#: substantial clause after it.
SELF_CORRECTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"I was wrong about (.+?)[.;] (.+?) (?:is|are|was|were) actually (.+)",
        r"Let me reconsider[.:]? (.+)",
        r"Actually,? (.+?) (?:not|instead of|rather than) (.+)",
        r"I initially thought (.+?) but (.+)",
        r"Correction: (.+)",
        r"Wait[,.]? (?:(?:no|so|that|the|this|it|I|actually)\b)(.{20,})",
        r"(?:turns out|it turns out) (?:that )?(.{15,})",
        r"I (?:misread|misunderstood|assumed wrongly) (.+)",
    )
)

#: Dead-end language (docs/observer.md reference implementation, plus common phrasings).
DEAD_END_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"this approach (?:won't|will not|cannot|can't|doesn't|does not) work",
        r"I need to abandon this",
        r"let me try a different approach",
        r"(?:try|take) (?:a|another) different (?:approach|strategy|route)",
        r"unavailable in (?:test|tests|ci|production)",
        r"not available in this environment",
        r"(?:that|this) (?:was|is) a dead end",
        r"abandon(?:ing)? (?:this|that|the) (?:approach|idea|attempt|plan)",
        r"revert(?:ing)? (?:my|the|these|this) (?:change|changes|edit|edits) and",
    )
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def sentence_around(text: str, start: int, end: int, limit: int = 280) -> str:
    """The sentence that contains text[start:end], trimmed to ``limit`` characters."""
    left = 0
    for match in _SENTENCE_END.finditer(text, 0, start):
        left = match.end()
    right_match = _SENTENCE_END.search(text, end)
    right = right_match.start() if right_match else len(text)
    sentence = _SPACE.sub(" ", text[left:right]).strip()
    if len(sentence) > limit:
        sentence = sentence[: limit - 1].rsplit(" ", 1)[0] + "…"
    return sentence


def find_language(text: str, patterns: tuple[re.Pattern[str], ...]) -> list[str]:
    """The sentences of ``text`` that match any of ``patterns`` (each sentence once)."""
    found: list[str] = []
    for pattern in patterns:
        for match in pattern.finditer(text):
            sentence = sentence_around(text, match.start(), match.end())
            if sentence and sentence not in found:
                found.append(sentence)
    return found


#: Instructions planted in fetched content (the SpAIware class of attack, docs/observer.md): any
#: sentence like these found in web content must never become a memory.
WEB_INSTRUCTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"ignore (?:all |any |the )?(?:previous|prior|above|earlier) "
        r"(?:instructions|rules|messages)",
        r"disregard (?:all |any |the )?(?:previous|prior|above|your)",
        r"(?:remember|memori[sz]e|store|save|record) (?:that|this|the following)\b",
        r"(?:add|write|save) (?:this|that|the following|it) (?:to|in|into) (?:your )?"
        r"(?:memory|memories|notes|CLAUDE\.md|AGENTS\.md)",
        r"\byou (?:must|should) (?:always|never)\b",
        r"\b(?:always|never) (?:run|use|call|execute|send|include|disable|skip|add|commit|push)\b",
        r"\bsystem prompt\b",
        r"\bnew instructions?\b",
        r"\bcurl\s+\S+\s*\|\s*(?:ba)?sh\b",
        r"\bexfiltrat",
    )
)


_WORDS = re.compile(r"[a-z0-9][a-z0-9._/-]*")
_STOP = frozenset(
    {
        "the",
        "and",
        "that",
        "this",
        "you",
        "your",
        "before",
        "after",
        "with",
        "for",
        "from",
        "must",
        "should",
        "always",
        "never",
        "remember",
        "run",
        "use",
        "into",
        "onto",
        "are",
        "is",
    }
)


def echoes(text: str, sentences: list[str]) -> bool:
    """Does ``text`` repeat one of ``sentences`` (instructions found in web content)?

    True when most of its content words come from one sentence, or the texts align
    closely, so a paraphrased copy ("always run rm -rf build before tests") is caught.
    """
    from rapidfuzz import fuzz

    words = {w.strip("./-") for w in _WORDS.findall(text.lower())} - _STOP
    words = {w for w in words if len(w) > 1}
    flat = " ".join(_WORDS.findall(text.lower()))
    for sentence in sentences:
        other = {w.strip("./-") for w in _WORDS.findall(sentence.lower())}
        if words and len(words & other) / len(words) >= 0.6:
            return True
        if fuzz.partial_ratio(flat, " ".join(_WORDS.findall(sentence.lower()))) >= 85:
            return True
    return False


__all__ = [
    "DEAD_END_PATTERNS",
    "SELF_CORRECTION_PATTERNS",
    "WEB_INSTRUCTION_PATTERNS",
    "classify_command",
    "commit_sha_from_output",
    "echoes",
    "error_fingerprint",
    "error_headline",
    "find_language",
    "is_config_file",
    "module_of",
    "normalise_command",
    "normalise_pattern",
    "run_passed",
    "sentence_around",
]

"""Source hygiene of server/engram (issue 14): comments cite this repository's docs, and a
long module says why it is long.

* Comments and docstrings point a reader at ``docs/<name>.md`` (and a section by its
  heading), never at the design documents the project was seeded from ("V5 §16", a seed
  file's name or title): a reader of the repository cannot follow those. Every
  ``docs/<name>.md "Heading"`` citation must name a file and a heading that exist.
* The docs (``docs/*.md``, README.md) do not cite those documents either: each states its
  reason itself.
* A module over :data:`MAX_LINES` lines states at its top why it is not split
  (``Long on purpose: ...`` in the module docstring; docs/architecture.md "Module size").
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "engram"
DOCS = ROOT / "docs"
MAX_LINES = 600
REASON = "Long on purpose:"

#: Citations of documents that are not in the repository: section signs, the seed design
#: documents' versions ("V3", "V5 §4") and titles, and seed file names (000_<hash>.txt).
OUTSIDE = re.compile(
    r"§"
    r"|\bV[1-9]\b"
    r"|\bTMWS\b"
    r"|Memory (?:Bridge|System V)"
    r"|Living Memory System"
    r"|\b\d{3}_[0-9a-f]{16}\b",
)
#: docs/<name>.md followed by a quoted heading (on one line; the path may end the line before).
DOC_SECTION = re.compile(r'docs/([\w.-]+\.md)"?\)?\s*\(?"([A-Z][^"\n]*)"')


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _comments_and_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and string literal: what a reader is pointed at."""
    import tokenize

    out: list[tuple[int, str]] = []
    with open(path, encoding="utf-8") as handle:
        for token in tokenize.generate_tokens(handle.readline):
            if token.type in (tokenize.COMMENT, tokenize.STRING):
                out.append((token.start[0], token.string))
    return out


def _headings() -> dict[str, set[str]]:
    headings: dict[str, set[str]] = {}
    for doc in DOCS.glob("*.md"):
        headings[doc.name] = {
            line.lstrip("#").strip()
            for line in doc.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")
        }
    return headings


def test_no_citation_of_outside_documents() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}"
        for path in _sources()
        for line, text in _comments_and_strings(path)
        for match in OUTSIDE.finditer(text)
    ]
    assert not found, (
        f"comments cite documents outside the repository; point them at docs/*.md: {found}"
    )


def _doc_files() -> list[Path]:
    return [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]


def test_docs_cite_no_outside_documents() -> None:
    found = [
        f"{doc.relative_to(ROOT)}:{number}: {match.group(0)!r}"
        for doc in _doc_files()
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
        for match in OUTSIDE.finditer(line)
    ]
    assert not found, f"docs cite documents outside the repository; say the reason instead: {found}"


def test_doc_citations_name_real_sections() -> None:
    headings = _headings()
    broken = []
    for path in _sources():
        for line, text in _comments_and_strings(path):
            for name, section in DOC_SECTION.findall(text):
                titles = headings.get(name)
                if titles is None or not any(t.startswith(section) for t in titles):
                    broken.append(f"{path.relative_to(ROOT)}:{line}: docs/{name} {section!r}")
    assert not broken, f"citations of missing docs or headings: {broken}"


def test_long_modules_state_why() -> None:
    silent = []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines <= MAX_LINES:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if REASON not in docstring:
            silent.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert not silent, (
        f"modules over {MAX_LINES} lines without {REASON!r} in their docstring "
        f"(split them or say why not): {silent}"
    )


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    """The patterns catch the citations this test exists for (and not ordinary words)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Redaction (V5 §16) and gates (docs/observer.md "Promotion Gates by Session Type")."""\n'
        "# see 003_7f7b22c24ef34ad7.txt and TMWS\n"
        "VERSION = 'v5'\n",
        encoding="utf-8",
    )
    hits = [m.group(0) for _, t in _comments_and_strings(sample) for m in OUTSIDE.finditer(t)]
    assert hits == ["V5", "§", "003_7f7b22c24ef34ad7", "TMWS"]
    sections = [s for _, t in _comments_and_strings(sample) for s in DOC_SECTION.findall(t)]
    assert sections == [("observer.md", "Promotion Gates by Session Type")]
    assert not any(t.startswith(sections[0][1]) for t in _headings()["observer.md"])

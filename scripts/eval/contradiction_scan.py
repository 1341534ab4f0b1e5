#!/usr/bin/env python3
"""Candidate pairs for a contradiction set: one-line edits that carry a value or default word.

Reads the history of bare git mirrors (``--mirrors DIR``, directories ``owner+name/repo``)
and prints, one JSON object a line, every single-line edit (one line removed, one line added
in one hunk of a modified file) of a documentation file, or of a code comment, where both
lines carry a value or default word (default, true/false, enabled/disabled, required,
optional, before/after, always/never, a number after "is"/"to"/"of" …) and the two lines,
cleaned of markup as ``contradictions.py`` cleans them, differ but share most of their words.

Each candidate is a pair of references in the format of the labelled sets (``a``: the line at
the parent commit, ``b``: the same line after the commit) plus both texts, so that a person can
label it by reading the two texts only; the labelled file keeps only the references, the
label, ``source`` and ``split``. The sample is deterministic (``--seed``), at most
``--per-repo`` candidates a repository, so no repository dominates a set.

``--changed-value`` keeps only edits whose removed or added words include such a word (a
contradiction is rare among all value-carrying edits, ~5 %; this raises it without looking
at what any reader of Engram says). Look-alikes pass it just as well: markup around a value,
a version bumped in an example, a default added next to an unchanged one.

Usage: scripts/eval/contradiction_scan.py owner/name [owner/name ...] [--per-repo 40]
       [--seed 4] [--max-commits 20000] [--changed-value] [--mirrors DIR]
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import contradictions as base

DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc", ".markdown")
CODE_SUFFIXES = (".py", ".rs", ".go", ".java", ".ts", ".js", ".kt", ".c", ".h", ".rb")
COMMENT = re.compile(r"^\s*(?://+|#(?!\[)|\*|/\*\*)\s")
VALUE_WORD = re.compile(
    r"\b(?:default(?:s|ed)?|true|false|enabled?|disabled?|required|optional|before|after|"
    r"always|never|no longer|deprecated|removed|minimum|maximum|at least|at most|"
    r"(?:is|to|of|at|be)\s+`?-?\d[\d.]*)\b",
    re.I,
)
CHANGED_VALUE = re.compile(
    r"^(?:default(?:s|ed)?|true|false|yes|no|on|off|none|null|nil|undefined|enabled?|"
    r"disabled?|required|optional|before|after|always|never|not|no|longer|deprecated|removed|"
    r"minimum|maximum|least|most|only|must|may|should|can|cannot|\S*\d\S*)$"
)
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def words(text: str) -> list[str]:
    return re.findall(r"[\w.]+", text.lower())


def changes_a_value(wa: list[str], wb: list[str]) -> bool:
    """Some word the edit removed or added is a value, default, state or negation word."""
    changed = [
        word
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb).get_opcodes()
        if op != "equal"
        for word in wa[i1:i2] + wb[j1:j2]
    ]
    return any(CHANGED_VALUE.match(word.strip(".")) for word in changed)


def candidates(
    repo: str, git_dir: Path, max_commits: int, changed_value: bool
) -> Iterator[dict[str, object]]:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "log", "--no-merges", "--first-parent",
         f"--max-count={max_commits}", "--diff-filter=M", "-U0", "--no-renames",
         "--format=commit %H %P", "-p", "HEAD"],
        capture_output=True, text=True, errors="replace",
    )  # fmt: skip
    if done.returncode != 0:  # a mirror missing some objects: the history up to there
        print(f"{repo}: git log stopped: {done.stderr.strip()[:200]}", file=sys.stderr)
    log = done.stdout
    commit = parent = path = ""
    removed: list[str] = []
    added: list[str] = []
    start_a = start_b = 0

    def flush() -> Iterator[dict[str, object]]:
        if len(removed) != 1 or len(added) != 1 or not parent:
            return
        old, new = removed[0], added[0]
        is_doc = path.endswith(DOC_SUFFIXES)
        comment = bool(COMMENT.match(old) and COMMENT.match(new))
        if not is_doc and not (path.endswith(CODE_SUFFIXES) and comment):
            return
        if not (VALUE_WORD.search(old) and VALUE_WORD.search(new)):
            return
        text_a, text_b = base.clean(old), base.clean(new)
        if text_a == text_b or not (20 <= len(text_a) <= 400 and 20 <= len(text_b) <= 400):
            return
        wa, wb = words(text_a), words(text_b)
        if len(wa) < 4 or len(wb) < 4 or wa == wb:
            return
        if difflib.SequenceMatcher(None, wa, wb).ratio() < 0.5:
            return
        if changed_value and not changes_a_value(wa, wb):
            return
        yield {
            "a": {"commit": parent, "lines": [start_a, start_a], "path": path, "repo": repo},
            "b": {"commit": commit, "lines": [start_b, start_b], "path": path, "repo": repo},
            "source": "doc-edit" if is_doc else "comment-edit",
            "text_a": text_a,
            "text_b": text_b,
        }

    for line in log.splitlines():
        if line.startswith("commit "):
            yield from flush()
            removed, added = [], []
            parts = line.split()
            commit, parent = parts[1], (parts[2] if len(parts) > 2 else "")
        elif line.startswith("diff --git"):
            yield from flush()
            removed, added = [], []
        elif line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else ""
        elif line.startswith("--- "):
            continue
        elif (match := HUNK.match(line)) is not None:
            yield from flush()
            removed, added = [], []
            start_a, start_b = int(match.group(1)), int(match.group(3))
        elif line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
    yield from flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="+")
    parser.add_argument("--per-repo", type=int, default=40)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--max-commits", type=int, default=20000)
    parser.add_argument(
        "--changed-value",
        action="store_true",
        help="only edits that remove or add a value, default, state or negation word",
    )
    parser.add_argument("--mirrors", type=Path, default=base.DEFAULT_MIRRORS)
    args = parser.parse_args(argv)
    for repo in args.repos:
        git_dir = args.mirrors / repo.replace("/", "+") / "repo"
        if not git_dir.is_dir():
            print(f"contradiction_scan: {repo} is not under {args.mirrors}", file=sys.stderr)
            return 2
        found = {}
        for cand in candidates(repo, git_dir, args.max_commits, args.changed_value):
            key = (cand["text_a"], cand["text_b"])
            found.setdefault(key, cand)  # the same edit on several branches: once
        rows = sorted(found.values(), key=lambda c: (str(c["text_a"]), str(c["text_b"])))
        random.Random(f"{args.seed}:{repo}").shuffle(rows)
        for cand in rows[: args.per_repo]:
            ident = json.dumps([cand["a"], cand["b"]], sort_keys=True).encode()
            cand["id"] = hashlib.sha1(ident).hexdigest()[:10]
            print(json.dumps(cand, sort_keys=True))
        print(f"{repo}: {len(rows)} candidates", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Measure Engram's secret redaction: recall on real-shaped secrets, false positives on code.

Secrets are generated at run time from maintained scanners' rule sets, never committed:

* detect-secrets (PyPI, a dev dependency): each plugin's deny-list regexes;
* gitleaks' ``config/gitleaks.toml`` when ``--gitleaks FILE`` is given (222 rules): each
  rule's regex, the secret group it names, its entropy floor and its global allow-list.

Each regex yields ``--samples`` strings (``rstr.xeger``, seeded), kept only when the rule's
own regex matches them again. A sample counts as caught when the secret part (the rule's
secret group, else the whole match) no longer appears in ``redact_secrets`` of the line it
stands in; three lines per sample: the bare match, a log line and an assignment in code.

False positives: every non-empty line of the code files of the ``--repos`` given (for
example click, cobra and express) goes through ``redact_secrets``; a changed line is a false
positive (the repositories are public code, so any real secret in them would count against
Engram too: a conservative figure).

Prints one JSON object as its last line:
``{"dataset": "redaction", "items": N, "rows": {"engram": {...}}, "sources": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

from engram.redaction import redact_secrets, shannon_entropy

CODE_SUFFIXES = frozenset({".py", ".go", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx"})
#: the lines each sample stands in
CONTEXTS = ("{m}", "2024-05-01 12:00:03 WARN upstream rejected {m} (retrying)", "    cfg = {m!r}")


class Rule:
    """One generator: a regex, which group is the secret, an entropy floor."""

    def __init__(
        self, source: str, rule_id: str, pattern: str, group: int | None, entropy: float
    ) -> None:
        self.source = source
        self.rule_id = rule_id
        self.pattern = pattern
        self.regex = re.compile(pattern)
        self.group = group
        self.entropy = entropy


def go_to_python(pattern: str) -> str:
    """Gitleaks' RE2 syntax as Python ``re``: inline flags to the front, ``\\z`` to ``\\Z``."""
    flags = ""
    if "(?i)" in pattern[1:]:
        pattern = pattern.replace("(?i)", "")
        flags = "(?i)"
    elif pattern.startswith("(?i)"):
        flags, pattern = "(?i)", pattern[4:]
    pattern = pattern.replace(r"\z", r"\Z").replace("[[:alnum:]]", "[A-Za-z0-9]")
    return flags + pattern


def gitleaks_rules(path: Path) -> tuple[list[Rule], list[str], dict[str, Any]]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    rules: list[Rule] = []
    skipped: list[str] = []
    for raw in data.get("rules", []):
        if "regex" not in raw:
            skipped.append(f"{raw.get('id')}: path-only rule")
            continue
        try:
            rules.append(
                Rule(
                    "gitleaks",
                    raw["id"],
                    go_to_python(raw["regex"]),
                    raw.get("secretGroup"),
                    float(raw.get("entropy", 0.0)),
                )
            )
        except re.error as exc:
            skipped.append(f"{raw['id']}: {exc}")
    return rules, skipped, data.get("allowlist", {})


def detect_secrets_rules() -> tuple[list[Rule], list[str]]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    rules: list[Rule] = []
    skipped: list[str] = []
    cls: Any
    for secret_type, cls in sorted(get_mapping_from_secret_type_to_class().items()):
        if cls.__name__ == "IPPublicDetector":
            skipped.append(f"{secret_type}: an IP address is not a secret")
            continue
        denylist = list(getattr(cls(), "denylist", []) or [])
        if not denylist:
            skipped.append(f"{secret_type}: no deny-list regex (entropy or keyword plugin)")
        for i, regex in enumerate(denylist):
            if cls.__name__ == "PrivateKeyDetector":
                # the deny-list names the header only: a real key is the whole block
                kind = regex.pattern.replace("BEGIN ", "")
                pattern = (
                    rf"-----BEGIN {kind}-----\n[A-Za-z0-9+/]{{64}}\n[A-Za-z0-9+/]{{40}}=\n"
                    rf"-----END {kind}-----"
                )
                if "PuTTY" in regex.pattern:
                    pattern = (
                        r"PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\n"
                        r"Private-Lines: 1\n[A-Za-z0-9+/]{64}\nPrivate-MAC: [0-9a-f]{40}"
                    )
                rules.append(Rule("detect-secrets", f"{secret_type} #{i}", pattern, None, 0.0))
                continue
            rules.append(
                Rule(
                    "detect-secrets",
                    f"{secret_type} #{i}",
                    regex.pattern,
                    None,
                    0.0,
                )
            )
    return rules, skipped


#: what free-form parts of a rule (``.``, ``\\S``, ``[^"]``) are drawn from: characters that
#: stand around secrets in real configs and logs, not control characters or stray brackets
_TEXT_CHARS = string.ascii_letters + string.digits + "_-.:/=+~ "


def _generator(rng: random.Random) -> Any:
    """``rstr`` that draws free-form parts from :data:`_TEXT_CHARS` and repeats a little."""
    import rstr

    class Realistic(rstr.Rstr):  # type: ignore[misc, valid-type]
        def _handle_in(self, value: Any) -> Any:
            candidates = list(chain(*(self._handle_state(i) for i in value)))
            if candidates and candidates[0] is False:
                candidates = sorted(set(_TEXT_CHARS).difference(candidates[1:]))
            return self._random.choice(candidates)

        def _handle_repeat(self, start: int, end: int, value: Any) -> str:
            times = self._random.randint(start, max(start, min(end, start + 12)))
            return "".join("".join(self._handle_state(i) for i in value) for _ in range(times))

    return Realistic(
        rng,
        printable=_TEXT_CHARS,
        whitespace=" ",
        nonwhitespace=_TEXT_CHARS.replace(" ", ""),
        nonword=" .-:/=+~",
        nondigits=string.ascii_letters + "_-.",
        nonletters=string.digits + "_-.",
    )


def samples(
    rule: Rule, n: int, rng: random.Random, allow: list[re.Pattern[str]], stop: list[str]
) -> Iterator[tuple[str, str]]:
    """(match, secret) pairs that the rule's own regex accepts."""
    gen = _generator(rng)
    made = 0
    for _ in range(n * 20):
        if made >= n:
            return
        try:
            text = gen.xeger(rule.regex)
        except Exception:
            return
        match = rule.regex.search(text)
        if match is None:
            continue
        # gitleaks' rule: the named secret group, else the first group, else the whole match
        if rule.group is not None and rule.group <= rule.regex.groups:
            index = rule.group
        else:
            index = 1 if rule.regex.groups else 0
        secret = match.group(index) or match.group(0)
        if len(secret.strip()) < 6 or (rule.entropy and shannon_entropy(secret) < rule.entropy):
            continue
        if any(a.search(secret) for a in allow) or any(s in secret.lower() for s in stop):
            continue
        made += 1
        yield match.group(0), secret


def recall(rules: list[Rule], n: int, seed: int, allowlist: dict[str, Any]) -> dict[str, Any]:
    rng = random.Random(seed)
    allow = []
    for pattern in allowlist.get("regexes", []):
        try:
            allow.append(re.compile(go_to_python(pattern)))
        except re.error:
            continue
    stop = [s.lower() for s in allowlist.get("stopwords", [])]
    items = caught = 0
    per_rule: dict[str, list[int]] = {}
    missed: list[dict[str, str]] = []
    ungenerated: list[str] = []
    for rule in rules:
        got = list(samples(rule, n, rng, allow, stop))
        if not got:
            ungenerated.append(rule.rule_id)
            continue
        for match, secret in got:
            for context in CONTEXTS:
                line = context.format(m=match)
                out = redact_secrets(line).text
                ok = secret.strip() not in out
                items += 1
                caught += ok
                stats = per_rule.setdefault(rule.rule_id, [0, 0])
                stats[0] += ok
                stats[1] += 1
                if not ok and len(missed) < 40:
                    missed.append({"rule": rule.rule_id, "line": line[:160]})
    worst = sorted(
        ((k, v[0] / v[1]) for k, v in per_rule.items() if v[0] < v[1]), key=lambda kv: kv[1]
    )
    return {
        "items": items,
        "caught": caught,
        "recall": round(caught / items, 4) if items else None,
        "rules": len(per_rule),
        "rules_not_generated": ungenerated,
        "worst_rules": [f"{k}: {v:.2f}" for k, v in worst[:25]],
        "missed_examples": missed,
    }


def code_lines(repo: Path) -> Iterator[tuple[str, str]]:
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode("utf-8", "replace")
    for rel in sorted(p for p in out.split("\0") if p):
        if Path(rel).suffix not in CODE_SUFFIXES or ".min." in rel:
            continue
        try:
            text = (repo / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for line in text.splitlines():
            if line.strip():
                yield rel, line


def false_positives(repos: list[Path]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    total_lines = total_fp = 0
    for repo in repos:
        lines = fp = 0
        examples: list[str] = []
        for rel, line in code_lines(repo):
            lines += 1
            result = redact_secrets(line)
            if result.text != line:
                fp += 1
                if len(examples) < 15:
                    examples.append(f"{rel}: {line.strip()[:140]}")
        rows[repo.name] = {
            "code_lines": lines,
            "changed_lines": fp,
            "rate": round(fp / lines, 5) if lines else None,
            "examples": examples,
        }
        total_lines += lines
        total_fp += fp
    rows["all"] = {
        "code_lines": total_lines,
        "changed_lines": total_fp,
        "rate": round(total_fp / total_lines, 5) if total_lines else None,
    }
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gitleaks", type=Path, help="gitleaks' config/gitleaks.toml")
    parser.add_argument("--repos", default="", help="comma-separated repository work trees")
    parser.add_argument("--samples", type=int, default=10, help="samples per regex")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--limit-rules", type=int, default=0, help="first N rules (smoke test)")
    parser.add_argument("--json", action="store_true", help="only the JSON line")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result: dict[str, Any] = {"dataset": "redaction", "rows": {"engram": {}}, "sources": {}}
    ds_rules, ds_skipped = detect_secrets_rules()
    if args.limit_rules:
        ds_rules = ds_rules[: args.limit_rules]
    ds = recall(ds_rules, args.samples, args.seed, {})
    ds["rules_skipped"] = ds_skipped
    result["sources"]["detect-secrets"] = ds
    items, caught = ds["items"], ds["caught"]
    if args.gitleaks:
        gl_rules, gl_skipped, allowlist = gitleaks_rules(args.gitleaks)
        if args.limit_rules:
            gl_rules = gl_rules[: args.limit_rules]
        gl = recall(gl_rules, args.samples, args.seed, allowlist)
        gl["rules_skipped"] = gl_skipped
        result["sources"]["gitleaks"] = gl
        items += gl["items"]
        caught += gl["caught"]
    repos = [Path(r).expanduser() for r in args.repos.split(",") if r.strip()]
    engram: dict[str, Any] = {
        "recall": round(caught / items, 4) if items else None,
        "recall_detect_secrets": ds["recall"],
    }
    if args.gitleaks:
        engram["recall_gitleaks"] = result["sources"]["gitleaks"]["recall"]
    if repos:
        fp = false_positives(repos)
        result["sources"]["code"] = fp
        engram["false_positive_line_rate"] = fp["all"]["rate"]
        engram["code_lines"] = fp["all"]["code_lines"]
    result["items"] = items
    result["rows"]["engram"] = engram
    result["seconds"] = round(time.perf_counter() - started, 1)
    if not args.json:
        for name, source in result["sources"].items():
            if name == "code":
                for repo, row in source.items():
                    print(f"{repo}: {row['changed_lines']}/{row['code_lines']} lines changed")
                    for example in row.get("examples", []):
                        print(f"    {example}")
            else:
                print(f"{name}: recall {source['recall']} over {source['items']} lines")
                for worst in source["worst_rules"]:
                    print(f"    {worst}")
                for miss in source["missed_examples"][:20]:
                    print(f"    missed {miss['rule']}: {miss['line']!r}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

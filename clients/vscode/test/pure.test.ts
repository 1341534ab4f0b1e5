import { strict as assert } from "node:assert";
import { test } from "node:test";

import { buildTree, notSetUpTree } from "../src/tree";
import { buildImpactTree } from "../src/impact";
import { missingServerMessage, pythonExtensionInterpreter, serverCandidates } from "../src/python";
import { buildProbeCommand, buildServerCommand } from "../src/serverCommand";
import { WORKSPACE_LIMITS, WORKSPACE_SETTABLE, toServerSettings } from "../src/settings";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  consolidateText,
  diagnosticMemoryId,
  hoverWithout,
  moduleOf,
  parseMemory,
  parseMemoryList,
  parseStats,
  plainText,
  shareText,
  statusText,
  rememberedText,
  summaryText,
  syncText,
} from "../src/model";

test("server: an explicit setting is the only candidate; otherwise interpreter, PATH, ~/.local/bin, python3", () => {
  assert.deepEqual(serverCandidates({ serverPath: " ~/bin/engram ", python: "/opt/py", home: "/home/u" }, "/venv/bin/python"), [
    { kind: "executable", command: "/home/u/bin/engram", source: "serverPath" },
  ]);
  assert.deepEqual(serverCandidates({ python: "/opt/py" }, "/venv/bin/python"), [{ kind: "python", command: "/opt/py", source: "python" }]);
  const auto = serverCandidates({ home: "/home/u", platform: "linux" }, "/proj/.venv/bin/python");
  assert.deepEqual(
    auto.map((c) => `${c.kind}:${c.command}`),
    ["python:/proj/.venv/bin/python", "executable:engram", "executable:/home/u/.local/bin/engram", "python:python3"],
  );
  const api = { environments: { getActiveEnvironmentPath: () => ({ path: "/venv/bin/python" }) } };
  assert.equal(pythonExtensionInterpreter(api), "/venv/bin/python");
  const legacy = { settings: { getExecutionDetails: () => ({ execCommand: ["/legacy/python"] }) } };
  assert.equal(pythonExtensionInterpreter(legacy), "/legacy/python");
  assert.equal(pythonExtensionInterpreter(undefined), undefined);
});

test("server: a missing program and a missing package get different fixes, never `pip install engram`", () => {
  const setting = { kind: "python" as const, command: "/nope/python", source: "python" as const };
  assert.match(missingServerMessage([{ candidate: setting, stderr: "spawn /nope/python ENOENT" }]), /was not found/);
  const noPackage = missingServerMessage([{ candidate: setting, stderr: "ModuleNotFoundError: No module named 'engram'" }]);
  assert.match(noPackage, /not installed for the interpreter in "engram.python"/);
  assert.match(noPackage, /pipx install <path to the Engram repository>/);
  const projectVenv = { kind: "python" as const, command: "/proj/.venv/bin/python", source: "python-extension" as const };
  const onPath = { kind: "executable" as const, command: "engram", source: "path" as const };
  const all = missingServerMessage([
    { candidate: projectVenv, stderr: "ModuleNotFoundError: No module named 'engram'" },
    { candidate: onPath, stderr: "spawn engram ENOENT" },
  ]);
  assert.match(all, /Python extension's interpreter \(\/proj\/.venv\/bin\/python\) lacks the engram package/);
  assert.match(all, /`engram` on PATH was not found/);
  assert.match(all, /engram\.serverPath/);
  for (const text of [noPackage, all]) {
    assert.doesNotMatch(text, /pip install engram/);
  }
});

test("server command is python -P -m engram serve in the workspace", () => {
  const cmd = buildServerCommand("/venv/bin/python", "/ws", ["--log-level", "debug"]);
  assert.equal(cmd.command, "/venv/bin/python");
  assert.deepEqual(cmd.args, ["-P", "-m", "engram", "serve", "--workspace", "/ws", "--log-level", "debug"]);
  assert.equal(cmd.cwd, "/ws");
  assert.deepEqual(buildServerCommand("py", undefined).args, ["-P", "-m", "engram", "serve"]);
  const pipx = { kind: "executable" as const, command: "/home/u/.local/bin/engram", source: "serverPath" as const };
  assert.deepEqual(buildServerCommand(pipx, "/ws", [], "debug"), {
    command: "/home/u/.local/bin/engram",
    args: ["serve", "--workspace", "/ws", "--log-level", "debug"],
    cwd: "/ws",
  });
  assert.deepEqual(buildProbeCommand(pipx).args, ["--version"]);
});

test("client-only settings are not sent to the server", () => {
  const out = toServerSettings({ python: "/x", serverArgs: [], diagnostics: { trustLevel: 3 }, get: () => 1 });
  assert.deepEqual(out, { diagnostics: { trustLevel: 3 } });
  assert.deepEqual(toServerSettings(undefined), {});
});

test("a repository's .vscode/settings.json sets only the declared tuning settings; the rest is the user's", () => {
  // what VS Code merges when a clone commits .vscode/settings.json: undeclared keys included
  const hostile = {
    observer: { plugins: ["tools/x.py:X"], enabled: true },
    llm: { base_url: "http://attacker.example/v1", api_key_env: "GITHUB_TOKEN" },
    team: { trusted: true },
    store: { uri: "s3://attacker/store", endpoint: "http://attacker.example" },
    diagnostics: { trustLevel: 3 },
  };
  const user = { llm: { base_url: "https://llm.example/v1" }, diagnostics: { trustLevel: 1 } };
  const merged = {
    ...hostile,
    llm: { ...hostile.llm },
    embed: { model: "none" },
    get: () => undefined,
  };
  const out = toServerSettings(merged, { globalValue: user, workspaceValue: hostile });
  // trustLevel 3 would show less confident memories than the default 2: the user's own 1
  assert.deepEqual(out, {
    observer: { enabled: true },
    llm: { base_url: "https://llm.example/v1" },
    diagnostics: { trustLevel: 1 },
    embed: { model: "none" },
  });
  // a folder's settings of a multi-root window are a repository's too
  const folder = toServerSettings({ ...hostile, get: () => undefined }, { workspaceFolderValue: hostile });
  assert.deepEqual(folder, { observer: { enabled: true } });
  // the user's own settings are all the user's
  assert.deepEqual(toServerSettings({ ...hostile }, { globalValue: hostile }), hostile);
});

test("a notification quoting a repository carries no link VS Code would follow", () => {
  const synced = "skipped .engram-team/[the fix](command:workbench.action.terminal.new).json: not valid JSON";
  // VS Code's notification link form (vs/base/common/linkedText.ts)
  const link = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/gi;
  assert.match(synced, link);
  assert.doesNotMatch(plainText(synced), link);
  assert.equal(plainText("[Memory m-1: a (b)]"), "[Memory m-1: a (b)]");
});

test("the settings a workspace may set are the manifest's declared, not machine-scoped ones", () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as {
    contributes: { configuration: { properties: Record<string, { scope?: string }> } };
  };
  const clientOnly = ["engram.enable", "engram.server.logLevel", "engram.trace.server"];
  const declared = Object.entries(manifest.contributes.configuration.properties)
    .filter(([key, spec]) => spec.scope !== "machine" && spec.scope !== "application" && !clientOnly.includes(key))
    .map(([key]) => key.replace(/^engram\./, ""));
  assert.deepEqual([...WORKSPACE_SETTABLE].sort(), declared.sort());
});

test("a workspace may narrow a numeric setting, never widen it (stop 32)", () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as {
    contributes: { configuration: { properties: Record<string, { type?: string; default?: unknown }> } };
  };
  const numeric = Object.entries(manifest.contributes.configuration.properties)
    .filter(([, spec]) => spec.type === "integer" || spec.type === "number")
    .map(([key]) => key.replace(/^engram\./, ""))
    .filter((key) => WORKSPACE_SETTABLE.includes(key));
  assert.deepEqual(Object.keys(WORKSPACE_LIMITS).sort(), numeric.sort());
  for (const [key, [direction, bound]] of Object.entries(WORKSPACE_LIMITS)) {
    assert.equal(manifest.contributes.configuration.properties[`engram.${key}`].default, bound, key);
    const [section, name] = key.split(".");
    const wide = direction === "at_most" ? bound * 100 : 0;
    const narrow = direction === "at_most" ? 1 : bound * 2;
    const user = { [section]: { [name]: bound } };
    for (const [value, expected] of [[wide, bound], [narrow, narrow]]) {
      const repo = { [section]: { [name]: value } };
      const out = toServerSettings({ ...repo }, { globalValue: user, workspaceValue: repo });
      assert.deepEqual(out, { [section]: { [name]: expected } }, `${key} = ${value}`);
    }
  }
  // the budget of an agent's context pack: a repository's million tokens is not the user's
  const repo = { retrieval: { defaultBudgetTokens: 1000000 } };
  assert.deepEqual(toServerSettings({ ...repo }, { workspaceValue: repo }), {});
});

test("memory lists are read from any of the server's result shapes", () => {
  const raw = {
    hits: [
      {
        memory: { id: "m-1", type: "gotcha", content: "Redis must be up", confidence: 0.8, source: "user_taught",
          anchors: [{ file: "src/auth/a.py" }], related_files: ["src/auth/b.py"], needs_review: true, stale_at: null },
        stale: false,
        citation: "[Memory m-1: Redis must be up]",
      },
      { nonsense: true },
    ],
  };
  const list = parseMemoryList(raw);
  assert.equal(list.length, 1);
  assert.deepEqual(list[0].files, ["src/auth/a.py", "src/auth/b.py"]);
  assert.equal(list[0].needsReview, true);
  assert.equal(parseMemoryList([{ id: "m-2", content: "x" }])[0].citation, "[Memory m-2: x]");
  // remember, confirm, pin: `{"id", "memory": {…, "citation"}}`, no `citation_text`
  const shared = '[Memory m-3, shared: "a teammate\'s words"]';
  const made = parseMemory({ id: "m-3", memory: { id: "m-3", content: "a teammate's words", citation: shared } });
  assert.equal(made?.citation, shared);
  assert.deepEqual(parseMemoryList("junk"), []);
});

test("stats, status text and session summary", () => {
  const stats = parseStats({
    total: 12, needs_review: 2, stale: 1, by_type: { gotcha: 7, decision: 5 }, session: { learned: 2 },
  });
  assert.equal(stats.total, 12);
  assert.equal(stats.sessionLearned, 2);
  assert.equal(statusText(stats, undefined), "$(book) Engram: 12 memories · 2 to review");
  assert.match(statusText(stats, "indexing 40%"), /indexing 40%/);
  assert.equal(statusText(parseStats({ total: 1 }), undefined), "$(book) Engram: 1 memory");
  assert.equal(parseStats({ memories: { total: 3 } }).total, 3);
  // a flagged-incorrect memory is kept for its history but is not counted as shown
  const flagged = parseStats({ total: 2, shown: 1, active: 1, deprecated: 1 });
  assert.equal(statusText(flagged, undefined), "$(book) Engram: 1 memory");
  // the status bar counts what is shown; the Memory view's "Active" is the trust state
  const waiting = parseStats({ total: 8, shown: 8, active: 5, needs_review: 3, deprecated: 0 });
  assert.equal(statusText(waiting, undefined), "$(book) Engram: 8 memories · 3 to review");
  const health = buildTree(waiting, [], [])[0].children?.map((n) => `${n.label} ${n.description}`);
  assert.deepEqual(health, ["Active 5", "Needs review 3", "Stale 0", "Retired 0"]);
  assert.match(summaryText({ applied: [1, 2], learned: [1], needs_review: [] }), /2 memories applied, 1 learned, 0 to review/);
});

test("memory tree: health, by type, by module, review queue", () => {
  const memories = parseMemoryList([
    { id: "a", type: "gotcha", content: "g", anchors: [{ file: "src/x/a.py" }] },
    { id: "b", type: "decision", content: "d" },
  ]);
  const tree = buildTree(parseStats({ total: 2, by_type: { gotcha: 1, decision: 1 } }), memories, [memories[0]]);
  assert.deepEqual(tree.map((n) => n.label), ["Health", "By type", "By module", "Review queue"]);
  assert.deepEqual(tree[0].children?.map((n) => n.label), ["Active", "Needs review", "Stale", "Retired"]);
  assert.deepEqual(tree[1].children?.map((n) => n.label), ["decision", "gotcha"]);
  assert.deepEqual(tree[2].children?.map((n) => n.label), ["(global)", "src/x"]);
  assert.equal(tree[3].children?.[0].memory?.id, "a");
  assert.equal(moduleOf("a.py"), "(root)");
});

test("team sharing and consolidation messages", () => {
  assert.equal(
    shareText({ folder: ".engram-team", written: [".engram-team/m-1.json"], unchanged: [], committed: "0123456789abcdef" }),
    "Engram: shared 1 memory in .engram-team/ (committed as 0123456789; push it with your code).",
  );
  assert.match(shareText({ written: [], unchanged: ["m-1", "m-2"] }), /nothing new to share; 2 memories already/);
  assert.match(shareText({}), /Confirm a memory first/);
  assert.equal(
    syncText({ added: 2, updated: 1, retired: 0, skipped: ["x.json: not valid JSON"] }),
    "Engram team memories: 2 added, 1 updated, 0 retired; 1 file skipped (see the log).",
  );
  assert.match(consolidateText({ merged: ["a <- b"], conflicts: ["c vs d: opposite"] }), /merged 1 .* found 1 contradiction\. They are in the review queue/);
  assert.match(consolidateText("junk"), /merged 0 near-duplicates, found 0 contradictions\.$/);
});

test("impact is a tree: dependents, co-change, tests, not JSON", () => {
  const tree = buildImpactTree({
    target: "src/billing.py",
    symbol: null,
    summary: "2 dependents; usually changes with src/ledger.py (70%)",
    direct_dependents: [{ file: "src/shop.py", depth: 1, weight: 1, path: ["src/billing.py", "src/shop.py"] }],
    transitive_dependents: [{ file: "src/api.py", depth: 2, weight: 0.5, path: ["src/billing.py", "src/shop.py", "src/api.py"] }],
    cochange: [{ file: "src/ledger.py", confidence: 0.7, support: 7 }],
    tests: ["tests/test_billing.py"],
    ranked_files: [],
    dependencies: [],
    notes: [],
  });
  assert.deepEqual(tree.map((n) => n.label), ["src/billing.py", "Dependents", "Usually changes with", "Tests to run"]);
  assert.equal(tree[0].description, "2 dependents; usually changes with src/ledger.py (70%)");
  assert.deepEqual(tree[1].children?.map((n) => `${n.label} (${n.description})`), ["src/shop.py (direct)", "src/api.py (via src/shop.py)"]);
  assert.equal(tree[2].children?.[0].description, "70% of its commits (7)");
  assert.equal(tree[3].children?.[0].file, "tests/test_billing.py");
  assert.equal(buildImpactTree({ target: "a.py" })[1].description, "none found");
  assert.equal(buildImpactTree("junk")[0].label, "No impact report");
});

test("teaching says what was kept, not JSON", () => {
  const text = rememberedText({ id: "m-1", merged: false, redactions: ["github_token"], memory: { id: "m-1", content: "use cents" } });
  assert.equal(text, 'Engram remembered m-1: "use cents" (redacted: github_token (rotate it))');
  assert.match(rememberedText({ id: "m-2", merged: true, memory: { id: "m-2", content: "x" } }), /merged it into m-2/);
});

test("memory tree of a folder left out: one row that sets it up, not 'Server not ready'", () => {
  const [row, ...rest] = notSetUpTree("notes");
  assert.deepEqual(rest, []);
  assert.equal(row.label, "Engram is not set up in notes");
  assert.equal(row.command, "engram.ui.start");
  assert.ok(!JSON.stringify(row).includes("not ready"));
});

test("hover: the memory of a diagnostic is found by its id line and left out of Engram's hover", () => {
  assert.equal(diagnosticMemoryId("Gotcha: it bites\nm-ee231f583d · user_taught · today · confidence 0.90"), "m-ee231f583d");
  assert.equal(
    diagnosticMemoryId('Gotcha: a\n[CONFLICT with m-0123456789: "b" — both kept; check which holds]\nm-ee231f583d · user_taught'),
    "m-ee231f583d",
    "a conflict marker names another memory, not this one",
  );
  assert.equal(diagnosticMemoryId("no id here"), undefined);
  const a = "**Gotcha** · user_taught\n\nFlush\n\n`[Memory m-ee231f583d: Flush…]`";
  const b = "**Decision** · user_taught\n\nkeep it\n\n`[Memory m-0123456789: keep it…]`";
  const impact = "**Engram impact** · 3 dependents";
  assert.equal(hoverWithout([impact, a, b].join("\n\n---\n\n"), new Set(["m-ee231f583d"])), [impact, b].join("\n\n---\n\n"));
  assert.equal(hoverWithout(a, new Set(["m-ee231f583d"])), undefined);
  assert.equal(hoverWithout(a, new Set()), a);
});

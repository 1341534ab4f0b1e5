import { strict as assert } from "node:assert";
import { test } from "node:test";

import { buildTree } from "../src/tree";
import { choosePython, missingServerMessage } from "../src/python";
import { buildServerCommand } from "../src/serverCommand";
import { toServerSettings } from "../src/settings";
import {
  consolidateText,
  moduleOf,
  parseMemoryList,
  parseStats,
  shareText,
  statusText,
  summaryText,
  syncText,
} from "../src/model";

test("python: setting wins, then the Python extension, then python3", () => {
  const api = { environments: { getActiveEnvironmentPath: () => ({ path: "/venv/bin/python" }) } };
  assert.deepEqual(choosePython(" /opt/py ", api), { command: "/opt/py", source: "setting" });
  assert.deepEqual(choosePython("", api), { command: "/venv/bin/python", source: "python-extension" });
  const legacy = { settings: { getExecutionDetails: () => ({ execCommand: ["/legacy/python"] }) } };
  assert.equal(choosePython(undefined, legacy).command, "/legacy/python");
  assert.equal(choosePython(undefined, undefined).source, "default");
});

test("python: missing interpreter and missing package get different fixes", () => {
  const choice = { command: "/nope/python", source: "setting" as const };
  assert.match(missingServerMessage(choice, "spawn /nope/python ENOENT"), /was not found/);
  assert.match(missingServerMessage(choice, "ModuleNotFoundError: No module named 'engram'"), /pip install engram/);
});

test("server command is python -m engram serve in the workspace", () => {
  const cmd = buildServerCommand("/venv/bin/python", "/ws", ["--log-level", "debug"]);
  assert.equal(cmd.command, "/venv/bin/python");
  assert.deepEqual(cmd.args, ["-m", "engram", "serve", "--workspace", "/ws", "--log-level", "debug"]);
  assert.equal(cmd.cwd, "/ws");
  assert.deepEqual(buildServerCommand("py", undefined).args, ["-m", "engram", "serve"]);
});

test("client-only settings are not sent to the server", () => {
  const out = toServerSettings({ python: "/x", serverArgs: [], diagnostics: { trustLevel: 3 }, get: () => 1 });
  assert.deepEqual(out, { diagnostics: { trustLevel: 3 } });
  assert.deepEqual(toServerSettings(undefined), {});
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
  const flagged = parseStats({ total: 2, active: 1, deprecated: 1 });
  assert.equal(statusText(flagged, undefined), "$(book) Engram: 1 memory");
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

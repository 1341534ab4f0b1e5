import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { installMocks } from "./mockVscode";

test("an interpreter without Engram gives one message with the fix and starts nothing", async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "engram-ext-"));
  mkdirSync(path.join(ws, ".engram"));
  // a real interpreter that lacks the engram package (the project's own venv, say)
  const rec = installMocks({ python: "/usr/bin/python3" }, ws);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ext = require("../src/extension") as typeof import("../src/extension");
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.equal(rec.clients.length, 0);
  assert.equal(rec.errors.length, 1);
  assert.match(rec.errors[0], /engram package is not installed for the interpreter in "engram.python" \(\/usr\/bin\/python3\)/);
  assert.match(rec.errors[0], /pipx install/);
  assert.doesNotMatch(rec.errors[0], /pip install engram/);
  subscriptions.forEach((d) => d.dispose());
});

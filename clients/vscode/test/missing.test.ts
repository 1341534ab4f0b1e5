import { strict as assert } from "node:assert";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { installMocks } from "./mockVscode";

function loadExtension(): typeof import("../src/extension") {
  // each test installs its own mocks: load a fresh copy of the extension
  for (const key of Object.keys(require.cache)) {
    if (key.includes(`${path.sep}src${path.sep}`)) {
      delete require.cache[key];
    }
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require("../src/extension") as typeof import("../src/extension");
}

/**
 * Run `body` with an environment in which /usr/bin/python3 cannot import engram, whatever
 * the shell that ran the tests had: the extension's probe and server inherit the extension
 * host's environment, so `PYTHONPATH=…/server npm run unit` (how a developer runs the
 * Python side) gave /usr/bin/python3 the engram package and both tests below a server.
 */
async function withoutEngramInEnv(body: () => Promise<void>): Promise<void> {
  const names = ["PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE"];
  const saved = new Map(names.map((name) => [name, process.env[name]]));
  for (const name of names) {
    delete process.env[name];
  }
  process.env.PYTHONNOUSERSITE = "1"; // nor a `pip install --user` engram
  try {
    await body();
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) {
        delete process.env[name];
      } else {
        process.env[name] = value;
      }
    }
  }
}

test("an interpreter without Engram gives one message with the fix and starts nothing", () => withoutEngramInEnv(async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "engram-ext-"));
  mkdirSync(path.join(ws, ".engram"));
  // a real interpreter that lacks the engram package (the project's own venv, say)
  const rec = installMocks({ python: "/usr/bin/python3" }, ws);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.equal(rec.clients.length, 0);
  assert.equal(rec.errors.length, 1);
  assert.match(rec.errors[0], /engram package is not installed for the interpreter in "engram.python" \(\/usr\/bin\/python3\)/);
  assert.match(rec.errors[0], /pipx install/);
  assert.doesNotMatch(rec.errors[0], /pip install engram/);
  subscriptions.forEach((d) => d.dispose());
}));

/** Wait (bounded) until `done` holds: the extension relaunches from a settings listener. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test("fixing the setting the message names starts the server without a window reload", () => withoutEngramInEnv(async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "engram-ext-"));
  mkdirSync(path.join(ws, ".engram"));
  // a stand-in `engram` that answers the probe (`engram --version`) as the real one does
  const engram = path.join(ws, "engram");
  writeFileSync(engram, "#!/bin/sh\necho 'engram 0.0.0'\n");
  chmodSync(engram, 0o755);
  const rec = installMocks({ python: "/usr/bin/python3" }, ws);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.equal(rec.clients.length, 0);
  assert.equal(rec.errors.length, 1);

  rec.changeSettings({ serverPath: engram });
  await until(() => rec.clients.length === 1 && rec.clients[0].started);
  assert.equal(rec.clients.length, 1);
  assert.equal(rec.clients[0].serverOptions.command, engram);
  assert.deepEqual((rec.clients[0].serverOptions.args as string[]).slice(0, 1), ["serve"]);
  assert.equal(rec.contexts["engram.active"], true);
  assert.equal(rec.errors.length, 1, "no second error once the setting is fixed");

  // a later launch setting replaces the running server: the old one is stopped first
  rec.changeSettings({ serverArgs: ["--log-file", "x.log"] });
  await until(() => rec.clients.length === 2 && rec.clients[1].started);
  assert.equal(rec.clients[0].stopped, true);
  assert.deepEqual((rec.clients[1].serverOptions.args as string[]).slice(-2), ["--log-file", "x.log"]);

  // a setting the running server reads itself (didChangeConfiguration) keeps the process
  rec.changeSettings({ diagnostics: { trustLevel: 3 } });
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(rec.clients.length, 2);
  assert.equal(rec.clients[1].stopped, false);
  subscriptions.forEach((d) => d.dispose());
}));

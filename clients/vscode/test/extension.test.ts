import { strict as assert } from "node:assert";
import * as path from "node:path";
import { test } from "node:test";

import { installMocks } from "./mockVscode";

const repoPython = path.resolve(__dirname, "../../../../.venv/bin/python");

test("activation with a working interpreter starts the server with the built command", async () => {
  const rec = installMocks({ python: repoPython, serverArgs: [] });
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ext = require("../src/extension") as typeof import("../src/extension");
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.deepEqual(rec.errors, []);
  assert.equal(rec.clients.length, 1);
  const server = rec.clients[0].serverOptions as { command: string; args: string[] };
  assert.equal(server.command, repoPython);
  assert.deepEqual(server.args, ["-m", "engram", "serve", "--workspace", "/tmp/engram-ws"]);
  assert.ok(rec.clients[0].started);
  assert.deepEqual(rec.treeProviders, ["engram.memory"]);
  // Only client-side ids are registered here; server ids come from the language client.
  for (const id of rec.commands.keys()) {
    assert.match(id, /^engram\.ui\./);
  }
  assert.ok(rec.commands.has("engram.ui.teach"));
  assert.ok(rec.commands.has("engram.ui.review"));
  for (const id of ["engram.ui.shareTeam", "engram.ui.syncTeam", "engram.ui.consolidate", "engram.ui.openReport"]) {
    assert.ok(rec.commands.has(id), id);
  }
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

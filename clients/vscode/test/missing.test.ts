import { strict as assert } from "node:assert";
import { test } from "node:test";

import { installMocks } from "./mockVscode";

test("a missing interpreter gives a clear message with a fix and starts nothing", async () => {
  const rec = installMocks({ python: "/definitely/not/python" });
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ext = require("../src/extension") as typeof import("../src/extension");
  await ext.activate({ subscriptions: [] } as never);
  assert.equal(rec.clients.length, 0);
  assert.equal(rec.errors.length, 1);
  assert.match(rec.errors[0], /engram\.python/);
});

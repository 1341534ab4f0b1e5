import { strict as assert } from "node:assert";
import { test } from "node:test";

import { openReport, reportTitle, WebviewLike } from "../src/report";

test("openReport asks the server, reads the page and shows it in one panel", async () => {
  const calls: [string, unknown][] = [];
  const panels: WebviewLike[] = [];
  const deps = {
    run: async (command: string, args: unknown) => {
      calls.push([command, args]);
      return { path: "/ws/.engram/report.html", module: "src/billing.py" };
    },
    readFile: async (path: string) => `<html>${path}</html>`,
    createPanel: (title: string) => {
      const panel = { title, revealed: 0, webview: { html: "" }, reveal() { this.revealed += 1; } };
      panels.push(panel);
      return panel;
    },
  };
  const panel = await openReport(deps);
  assert.deepEqual(calls, [["engram.report", {}]]);
  assert.equal(panel.webview.html, "<html>/ws/.engram/report.html</html>");
  assert.equal((panel as unknown as { title: string }).title, "Engram Report (billing.py)");
  await openReport(deps, panel); // a second open refreshes the same panel
  assert.equal(panels.length, 1);
});

test("a server without the command is a clear error", async () => {
  const deps = {
    run: async () => ({}),
    readFile: async () => "",
    createPanel: () => ({ webview: { html: "" }, reveal() {} }),
  };
  await assert.rejects(openReport(deps), /did not return a report path/);
  assert.equal(reportTitle({ path: "x" }), "Engram Report");
});

// Smoke test: start the REAL server with exactly the command line the extension builds
// (out/src/serverCommand.js, compiled from src/serverCommand.ts, plus the --stdio the
// language client appends), then initialize,
// didOpen -> diagnostics for a known gotcha, and hover on the anchored line.
//
// Usage: ENGRAM_PYTHON=/path/to/python node scripts/smoke.mjs
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const require = createRequire(import.meta.url);
const rpc = require("vscode-jsonrpc/node");
const { buildServerCommand } = require("../out/src/serverCommand.js");

const python = process.env.ENGRAM_PYTHON || "python3";
const ws = mkdtempSync(path.join(tmpdir(), "engram-smoke-"));
execFileSync("git", ["init", "-q", ws]);
const file = path.join(ws, "billing.py");
writeFileSync(file, "import os\n\n\ndef charge(amount):\n    return amount * 100\n");
const remember = [
  "-m", "engram", "remember", "--workspace", ws, "--type", "gotcha", "--file", "billing.py",
  "--symbol", "charge", "--line", "4",
  "charge() takes euros but the payment API wants cents: always multiply by 100",
];
execFileSync(python, remember, { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ENGRAM_EMBED__MODEL: "none" } });

const cmd = buildServerCommand(python, ws, []);
const started = Date.now();
// vscode-languageclient appends --stdio for TransportKind.stdio: so do we
const child = spawn(cmd.command, [...cmd.args, "--stdio"], { cwd: cmd.cwd, stdio: ["pipe", "pipe", "inherit"] });
const conn = rpc.createMessageConnection(
  new rpc.StreamMessageReader(child.stdout),
  new rpc.StreamMessageWriter(child.stdin),
);
const diagnostics = new Promise((resolve) => {
  conn.onNotification("textDocument/publishDiagnostics", (params) => {
    if (params.uri === pathToFileURL(file).href && params.diagnostics.length > 0) resolve(params.diagnostics);
  });
});
conn.onRequest(() => null); // workspace/configuration, progress creation, registrations
conn.onNotification(() => {});
conn.listen();

const fail = (msg) => {
  console.error(`smoke: FAIL ${msg}`);
  child.kill();
  process.exit(1);
};
const timeout = (ms, what) => new Promise((_, reject) => setTimeout(() => reject(new Error(`${what} timed out`)), ms));

try {
  const init = await Promise.race([
    conn.sendRequest("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(ws).href,
      workspaceFolders: [{ uri: pathToFileURL(ws).href, name: "ws" }],
      capabilities: { textDocument: { hover: { contentFormat: ["markdown", "plaintext"] }, publishDiagnostics: {} } },
      initializationOptions: { embed: { model: "none" } },
      clientInfo: { name: "Visual Studio Code", version: "1.95.0" },
    }),
    timeout(30000, "initialize"),
  ]);
  const initMs = Date.now() - started;
  if (!init.capabilities) fail("initialize returned no capabilities");
  conn.sendNotification("initialized", {});
  const text = "import os\n\n\ndef charge(amount):\n    return amount * 100\n";
  conn.sendNotification("textDocument/didOpen", {
    textDocument: { uri: pathToFileURL(file).href, languageId: "python", version: 1, text },
  });
  const diags = await Promise.race([diagnostics, timeout(30000, "diagnostics")]);
  const gotcha = diags.find((d) => d.source === "engram");
  if (!gotcha) fail(`no engram diagnostic in ${JSON.stringify(diags)}`);
  if (gotcha.range.start.line !== 3) fail(`diagnostic on line ${gotcha.range.start.line}, expected 3`);
  const hover = await Promise.race([
    conn.sendRequest("textDocument/hover", {
      textDocument: { uri: pathToFileURL(file).href },
      position: { line: 3, character: 6 },
    }),
    timeout(10000, "hover"),
  ]);
  const hoverText = JSON.stringify(hover ?? {});
  if (!hoverText.includes("cents")) fail(`hover does not show the memory: ${hoverText}`);
  await conn.sendRequest("shutdown");
  conn.sendNotification("exit");
  console.log(JSON.stringify({ smoke: "ok", initialize_ms: initMs, diagnostic_line: gotcha.range.start.line }));
  setTimeout(() => process.exit(0), 200);
} catch (err) {
  fail(String(err));
}

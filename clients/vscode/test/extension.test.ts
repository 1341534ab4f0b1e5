import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { installMocks } from "./mockVscode";

const repoPython = path.resolve(__dirname, "../../../../.venv/bin/python");

function folder(withEngram: boolean): string {
  const dir = mkdtempSync(path.join(tmpdir(), "engram-ext-"));
  if (withEngram) {
    mkdirSync(path.join(dir, ".engram"));
  }
  return dir;
}

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

/** The client's middleware, as vscode-languageclient calls it. */
interface Middleware {
  executeCommand(command: string, args: unknown[], next: unknown): Promise<unknown>;
  provideHover(document: unknown, position: unknown, token: unknown, next: unknown): Promise<{ contents: { value: string }[] } | undefined>;
}

/** The extension activated in a folder set up for Engram; `done` deactivates it. */
async function activated(): Promise<{ rec: ReturnType<typeof installMocks>; middleware: Middleware; done(): Promise<void> }> {
  const rec = installMocks({ python: repoPython }, folder(true));
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  const done = async () => {
    await ext.deactivate();
    subscriptions.forEach((d) => d.dispose());
  };
  return { rec, middleware: rec.clients[0].clientOptions.middleware as Middleware, done };
}

test("in an Engram workspace, activation starts the server with the built command", async () => {
  const ws = folder(true);
  const rec = installMocks({ python: repoPython, serverArgs: [] }, ws);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.deepEqual(rec.errors, []);
  assert.equal(rec.clients.length, 1);
  const server = rec.clients[0].serverOptions as { command: string; args: string[] };
  assert.equal(server.command, repoPython);
  assert.deepEqual(server.args, ["-P", "-m", "engram", "serve", "--workspace", ws]);
  assert.ok(rec.clients[0].started);
  assert.equal(rec.contexts["engram.active"], true);
  assert.deepEqual(rec.treeProviders, ["engram.memory", "engram.impact"]);
  // Only client-side ids are registered here; server ids come from the language client.
  for (const id of rec.commands.keys()) {
    assert.match(id, /^engram\.ui\./);
  }
  for (const id of [
    "engram.ui.teach",
    "engram.ui.review",
    "engram.ui.start",
    "engram.ui.shareTeam",
    "engram.ui.syncTeam",
    "engram.ui.consolidate",
    "engram.ui.openReport",
  ]) {
    assert.ok(rec.commands.has(id), id);
  }
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

test("elsewhere nothing starts until 'Engram: Set Up This Folder'", async () => {
  const ws = folder(false);
  const rec = installMocks({ python: repoPython }, ws);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.equal(rec.clients.length, 0);
  assert.deepEqual(rec.errors, []);
  await rec.commands.get("engram.ui.sessionSummary")?.();
  assert.equal(rec.clients.length, 0, "another command does not start it either");
  assert.match(rec.errors[0], /Set Up This Folder/);
  await rec.commands.get("engram.ui.start")?.();
  assert.equal(rec.clients.length, 1);
  assert.ok(rec.clients[0].started);
  // the server sets the folder up (it leaves a folder without .engram/ out: nothing
  // written there) and runs its first index: impact and hover knew no symbol without it
  assert.deepEqual(rec.requestArgs[rec.requests.indexOf("engram.setUp")], { workspaceFolder: ws });
  assert.match(rec.infos.at(-1) ?? "", /Engram set up in this workspace/);
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

test("with no folder open, Start says to open one and starts nothing", async () => {
  const rec = installMocks({ python: repoPython }, null);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  await rec.commands.get("engram.ui.start")?.();
  // it started a server in the extension host's working directory and made .engram/ there
  assert.equal(rec.clients.length, 0);
  assert.match(rec.errors[0] ?? "", /open a folder first/);
  assert.deepEqual(rec.infos, []);
  subscriptions.forEach((d) => d.dispose());
});

test("Teach refuses a buffer that is not a saved file, before asking anything", async () => {
  const rec = installMocks({ python: repoPython }, folder(true));
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  for (const uri of [
    { scheme: "untitled", path: "Untitled-1", fsPath: "Untitled-1" },
    { scheme: "engram-context", path: "/Engram context.md", fsPath: "/Engram context.md" },
    { scheme: "git", path: "/ws/billing.py", fsPath: "/ws/billing.py" },
  ]) {
    rec.errors.length = 0;
    rec.requests.length = 0;
    rec.answers.push("gotcha", "a note");
    rec.window.activeTextEditor = { document: { uri, getText: () => "x" }, selection: { start: { line: 0 }, end: { line: 0 } } };
    await rec.commands.get("engram.ui.teach")?.();
    // the server was asked and answered "Untitled-1 does not exist (--allow-missing ...)"
    assert.deepEqual(rec.requests, [], uri.scheme);
    assert.match(rec.errors[0] ?? "", /saved file of the workspace/, uri.scheme);
    assert.equal(rec.answers.length, 2, "nothing was asked");
    rec.answers.length = 0;
  }
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

test("in a multi-root window a file of the second folder reaches the server by its own path", async () => {
  const first = folder(true);
  const second = folder(true);
  const rec = installMocks({ python: repoPython }, first, [second]);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  const file = path.join(second, "cmd", "root.go");
  rec.window.activeTextEditor = {
    document: { uri: { scheme: "file", path: file, fsPath: file }, getText: () => "func Execute()" },
    selection: { start: { line: 3 }, end: { line: 3 } },
  };
  rec.answers.push("gotcha", "Execute exits on error");
  await rec.commands.get("engram.ui.teach")?.();
  await rec.commands.get("engram.ui.impact")?.();
  await rec.commands.get("engram.ui.context")?.();
  // "cmd/root.go", relative to its folder, was taken by the server as a file of the first
  const sent = (name: string) => rec.requestArgs[rec.requests.indexOf(name)] as { file?: string };
  for (const name of ["engram.remember", "engram.impact", "engram.context"]) {
    assert.equal(sent(name)?.file, file, name);
  }
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

test("in a multi-root window workspace commands go to the active file's folder, or the one picked", async () => {
  const first = folder(true);
  const second = folder(true);
  const rec = installMocks({ python: repoPython }, first, [second]);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  const sent = (name: string) => rec.requestArgs[rec.requests.lastIndexOf(name)] as Record<string, unknown>;
  // searching from a file of the second folder searched the first folder's memories
  const file = path.join(second, "args.go");
  rec.window.activeTextEditor = {
    document: { uri: { scheme: "file", path: file, fsPath: file }, getText: () => "" },
    selection: { start: { line: 0 }, end: { line: 0 } },
  };
  rec.answers.push("ExactArgs", undefined);
  await rec.commands.get("engram.ui.search")?.();
  assert.deepEqual(sent("engram.search"), { query: "ExactArgs", k: 20, workspaceFolder: second });
  await rec.commands.get("engram.ui.syncTeam")?.();
  assert.equal(sent("engram.syncTeam").workspaceFolder, second);
  await rec.commands.get("engram.ui.review")?.();
  assert.equal(sent("engram.stats").workspaceFolder, second, "the Memory view shows that folder");
  // no file open: the user picks the folder; cancelling the pick sends nothing
  rec.window.activeTextEditor = undefined;
  rec.answers.push(first);
  await rec.commands.get("engram.ui.shareTeam")?.();
  assert.equal(sent("engram.share").workspaceFolder, first);
  const before = rec.requests.length;
  rec.answers.push(undefined);
  await rec.commands.get("engram.ui.consolidate")?.();
  assert.equal(rec.requests.length, before);
  assert.deepEqual(rec.errors, []);
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

test("in a multi-root window a folder nobody set up is left out until Set Up This Folder", async () => {
  const first = folder(true);
  const second = folder(false);
  const rec = installMocks({ python: repoPython }, first, [second]);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.equal(rec.clients.length, 1, "the window's one server, for the folder set up");
  assert.deepEqual(rec.infos, [], "no toast at each start");
  assert.match(rec.status?.tooltip ?? "", new RegExp(`not set up in ${path.basename(second)}`));
  // a file of the folder left out: the status bar says so and offers the set-up; the
  // server is not asked for its stats (it has none: asked every minute, it failed)
  const file = path.join(second, "main.go");
  rec.window.activeTextEditor = {
    document: { uri: { scheme: "file", path: file, fsPath: file }, getText: () => "" },
    selection: { start: { line: 0 }, end: { line: 0 } },
  };
  rec.requests.length = 0;
  await rec.commands.get("engram.ui.review")?.();
  assert.equal(rec.requests.length, 0, rec.requests.join(", "));
  // Teach and Search say so before asking anything (the server refused after the typing)
  rec.answers.push("gotcha", "a note", "a query");
  await rec.commands.get("engram.ui.teach")?.();
  await rec.commands.get("engram.ui.search")?.();
  assert.equal(rec.answers.length, 3, "nothing was asked");
  assert.equal(rec.errors.length, 2);
  assert.match(rec.errors[0], new RegExp(`not set up in ${path.basename(second)}: run "Engram: Set Up This Folder"`));
  rec.errors.length = 0;
  rec.answers.length = 0;
  assert.match(rec.status?.text ?? "", /not set up/);
  assert.equal(rec.status?.command, "engram.ui.start");
  await rec.commands.get("engram.ui.start")?.();
  assert.deepEqual(rec.requestArgs[rec.requests.indexOf("engram.setUp")], { workspaceFolder: second });
  assert.match(rec.infos.at(-1) ?? "", new RegExp(`Engram set up in ${path.basename(second)}`));
  assert.deepEqual(rec.errors, []);
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

test("a quick fix whose server command fails says so once, in the server's words", async () => {
  const { rec, middleware, done } = await activated();
  rec.failWith = "engram.confirm: no memory with id m-0000000000";
  const result = await middleware.executeCommand("engram.confirm", [{ id: "m-0000000000" }], () => {
    throw new Error("not through vscode-languageclient's own error path");
  });
  assert.equal(result, undefined, "no rethrow: VS Code would show it a second time");
  assert.deepEqual(rec.errors, ["Engram: engram.confirm: no memory with id m-0000000000"]);
  assert.deepEqual(rec.requestArgs.at(-1), { id: "m-0000000000" });
  await done();
});

test("a quick fix that succeeds refreshes the Memory view and the status bar at once", async () => {
  const { rec, middleware, done } = await activated();
  const before = rec.requests.length;
  await middleware.executeCommand("engram.flag", [{ id: "m-0000000000", kind: "outdated" }], () => undefined);
  await new Promise((resolve) => setImmediate(resolve));
  // the counts were asked for again: stop 33's walk saw "6 memories" and "Retired 0" after
  // flagging one incorrect, for up to a minute, while the report said otherwise
  assert.deepEqual(rec.requests.slice(before), ["engram.flag", "engram.stats", "engram.list", "engram.review"]);
  await done();
});

test("the hover leaves out the memories VS Code shows there as diagnostics", async () => {
  const { rec, middleware, done } = await activated();
  const vscode = require("vscode") as { MarkdownString: new (v: string) => { value: string } }; // eslint-disable-line @typescript-eslint/no-require-imports
  const memory = (id: string, text: string) => `**Gotcha** · user_taught · today\n\n${text}\n\n\`[Memory ${id}: ${text.slice(0, 20)}…]\``;
  const impact = "**Engram impact** · `Flush`: 13 dependents";
  const markdown = [impact, memory("m-ee231f583d", "Flush must mark the header"), memory("m-0123456789", "another one")].join("\n\n---\n\n");
  const under = { contains: () => true };
  const elsewhere = { contains: () => false };
  rec.diagnostics = [
    { source: "engram", range: under, message: "Gotcha: Flush must mark the header\nm-ee231f583d · user_taught · today" },
    { source: "engram", range: elsewhere, message: "Gotcha: another one\nm-0123456789 · user_taught · today" },
    { source: "gopls", range: under, message: "m-0123456789 · not Engram's" },
  ];
  const next = async () => ({ contents: [new vscode.MarkdownString(markdown)], range: undefined });
  const hover = await middleware.provideHover({ uri: "file:///ws/wrap_writer.go" }, {}, {}, next);
  const text = hover?.contents.map((c) => c.value).join("\n") ?? "";
  assert.doesNotMatch(text, /m-ee231f583d/, "the memory of the diagnostic under the cursor, once");
  assert.match(text, /Engram impact/);
  assert.match(text, /m-0123456789/, "a memory with no diagnostic here stays");
  rec.diagnostics = [{ source: "engram", range: under, message: "Gotcha: x\nm-ee231f583d · user_taught" }];
  const only = async () => ({ contents: [new vscode.MarkdownString(memory("m-ee231f583d", "Flush"))], range: undefined });
  assert.equal(await middleware.provideHover({ uri: "file:///ws/a.go" }, {}, {}, only), undefined);
  await done();
});

test("in a multi-root window the server starts when any folder uses Engram, not only the first", async () => {
  const rec = installMocks({ python: repoPython }, folder(false), [folder(true)]);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.equal(rec.clients.length, 1);
  assert.ok(rec.clients[0].started, "the second folder's .engram/ starts the server");
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

test("engram.enable false keeps it off even in an Engram workspace", async () => {
  const rec = installMocks({ python: repoPython, enable: false }, folder(true));
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.equal(rec.clients.length, 0);
  assert.deepEqual(rec.errors, []);
  subscriptions.forEach((d) => d.dispose());
});

test("engram.serverPath runs that executable's serve", async () => {
  const ws = folder(true);
  const engram = path.join(path.dirname(repoPython), "engram");
  const rec = installMocks({ serverPath: engram, python: "/ignored/python" }, ws);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  assert.deepEqual(rec.errors, []);
  const server = rec.clients[0].serverOptions as { command: string; args: string[] };
  assert.equal(server.command, engram);
  assert.deepEqual(server.args, ["serve", "--workspace", ws]);
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

test("Show Impact from a Show Context document acts on the file it is the context of", async () => {
  // a new user's walk (stop 31): Show Context, then Show Impact said "open a file first"
  // with the file open one tab away (the context document was the active editor)
  const ws = folder(true);
  const rec = installMocks({ python: repoPython }, ws);
  const ext = loadExtension();
  const subscriptions: { dispose(): void }[] = [];
  await ext.activate({ subscriptions } as never);
  const file = path.join(ws, "src", "signer.py");
  rec.window.activeTextEditor = {
    document: { uri: { scheme: "file", path: file, fsPath: file }, getText: () => "" },
    selection: { start: { line: 0 }, end: { line: 0 } },
  };
  await rec.commands.get("engram.ui.context")?.();
  const shown = { scheme: "engram-context", path: "/Engram context - src_signer.py.md" };
  rec.window.activeTextEditor = {
    document: { uri: { ...shown, toString: () => `${shown.scheme}:${shown.path}` }, getText: () => "" },
    selection: { start: { line: 0 }, end: { line: 0 } },
  };
  rec.errors.length = 0;
  await rec.commands.get("engram.ui.impact")?.();
  assert.deepEqual(rec.errors, []);
  const sent = rec.requestArgs[rec.requests.lastIndexOf("engram.impact")] as { file?: string };
  assert.equal(sent?.file, file);
  await ext.deactivate();
  subscriptions.forEach((d) => d.dispose());
});

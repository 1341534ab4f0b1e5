/**
 * Engram for VS Code: starts `engram serve` with the right Python, and adds the Memory
 * view, a status bar item and the teach / review / search commands on top of the
 * language client. Server commands (engram.search, engram.remember, …) are registered by
 * vscode-languageclient from the server's executeCommandProvider; the extension's own
 * commands use the distinct `engram.ui.*` ids, so no id is registered twice.
 */

import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";

import {
  consolidateText,
  parseMemoryList,
  parseStats,
  shareText,
  Stats,
  statusText,
  summaryText,
  syncText,
  MemorySummary,
} from "./model";
import { choosePython, missingServerMessage, PythonChoice, PythonExtensionApi } from "./python";
import { buildProbeCommand, buildServerCommand } from "./serverCommand";
import { toServerSettings, SettingsObject } from "./settings";
import { buildTree, TreeNode } from "./tree";
import { openReport, WebviewLike } from "./report";

const FLAG_KINDS: { label: string; value: string; detail: string }[] = [
  { label: "Incorrect", value: "incorrect", detail: "It is wrong: stop showing it" },
  { label: "Outdated", value: "outdated", detail: "It was true once: mark it stale" },
  { label: "Wrong scope", value: "wrong_scope", detail: "True, but not here" },
  { label: "Not useful", value: "not_useful", detail: "Noise: show it less" },
];

const TEACH_TYPES = ["gotcha", "decision", "pattern", "dead_end", "workflow_recipe", "preference", "error_pattern"];

class MemoryTreeProvider implements vscode.TreeDataProvider<TreeNode> {
  private readonly changed = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private roots: TreeNode[] = buildTree(undefined, [], []);

  update(stats: Stats | undefined, memories: MemorySummary[], review: MemorySummary[]): void {
    this.roots = buildTree(stats, memories, review);
    this.changed.fire(undefined);
  }

  getChildren(element?: TreeNode): TreeNode[] {
    return element ? (element.children ?? []) : this.roots;
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const collapsible = node.children
      ? node.label === "Health" || node.label === "Review queue"
        ? vscode.TreeItemCollapsibleState.Expanded
        : vscode.TreeItemCollapsibleState.Collapsed
      : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(node.label, collapsible);
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.contextValue = node.kind;
    if (node.memory && node.memory.files.length > 0) {
      const folder = vscode.workspace.workspaceFolders?.[0];
      if (folder) {
        item.command = {
          command: "vscode.open",
          title: "Open",
          arguments: [vscode.Uri.joinPath(folder.uri, node.memory.files[0])],
        };
      }
    }
    return item;
  }
}

function probe(choice: PythonChoice): Promise<{ ok: boolean; stderr: string }> {
  const cmd = buildProbeCommand(choice.command);
  return new Promise((resolve) => {
    execFile(cmd.command, cmd.args, { timeout: 20000 }, (error, _stdout, stderr) => {
      resolve({ ok: !error, stderr: error ? `${error.message}\n${stderr}` : "" });
    });
  });
}

async function pythonApi(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    return ext.isActive ? ext.exports : await ext.activate();
  } catch {
    return undefined;
  }
}

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("Engram", { log: true });
  context.subscriptions.push(output);
  const folder = vscode.workspace.workspaceFolders?.[0];
  const config = vscode.workspace.getConfiguration("engram");
  const choice = choosePython(config.get<string>("python"), await pythonApi(), folder?.uri);
  output.info(`Python: ${choice.command} (${choice.source})`);

  const check = await probe(choice);
  if (!check.ok) {
    const message = missingServerMessage(choice, check.stderr);
    output.error(message);
    const pick = await vscode.window.showErrorMessage(message, "Open Settings", "Show Log");
    if (pick === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "engram.python");
    } else if (pick === "Show Log") {
      output.show();
    }
    return;
  }

  const server = buildServerCommand(choice.command, folder?.uri.fsPath, config.get<string[]>("serverArgs") ?? []);
  const serverOptions: ServerOptions = {
    command: server.command,
    args: server.args,
    options: { cwd: server.cwd },
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }],
    outputChannel: output,
    initializationOptions: toServerSettings(config as unknown as SettingsObject),
    synchronize: { configurationSection: "engram" },
    middleware: {
      workspace: {
        configuration: async (params, token, next) => {
          const result = await next(params, token);
          return Array.isArray(result)
            ? result.map((r, i) => (params.items[i]?.section === "engram" ? toServerSettings(r as SettingsObject) : r))
            : result;
        },
      },
    },
  };
  client = new LanguageClient("engram", "Engram", serverOptions, clientOptions);

  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  status.command = "engram.ui.review";
  status.text = statusText(undefined, undefined);
  status.show();
  context.subscriptions.push(status);

  const tree = new MemoryTreeProvider();
  context.subscriptions.push(vscode.window.registerTreeDataProvider("engram.memory", tree));

  const run = async (command: string, args: unknown): Promise<unknown> => {
    if (!client || client.state !== State.Running) {
      throw new Error("Engram server is not running (see Engram: Show Server Log)");
    }
    return client.sendRequest("workspace/executeCommand", { command, arguments: [args] });
  };

  let reportPanel: WebviewLike | undefined;
  let learnedSeen = 0;
  const refresh = async (): Promise<void> => {
    try {
      const [statsRaw, listRaw, reviewRaw] = await Promise.all([
        run("engram.stats", {}),
        run("engram.list", { limit: 500 }).catch(() => []),
        run("engram.review", {}),
      ]);
      const stats = parseStats(statsRaw);
      status.text = statusText(stats, stats.indexing);
      tree.update(stats, parseMemoryList(listRaw), parseMemoryList(reviewRaw));
      if (stats.sessionLearned > learnedSeen) {
        // the session summary, as soon as the session has learned something new
        learnedSeen = stats.sessionLearned;
        const summary = summaryText(await run("engram.sessionSummary", {}));
        void vscode.window.showInformationMessage(summary, "Review").then((pick) => {
          if (pick === "Review") {
            void vscode.commands.executeCommand("engram.ui.review");
          }
        });
      }
    } catch (err) {
      output.warn(`refresh failed: ${String(err)}`);
    }
  };

  const withErrors =
    (fn: (...args: unknown[]) => Promise<void>) =>
    async (...args: unknown[]): Promise<void> => {
      try {
        await fn(...args);
      } catch (err) {
        void vscode.window.showErrorMessage(`Engram: ${err instanceof Error ? err.message : String(err)}`);
      }
    };

  const relPath = (uri: vscode.Uri): string => vscode.workspace.asRelativePath(uri, false);

  context.subscriptions.push(
    vscode.commands.registerCommand(
      "engram.ui.teach",
      withErrors(async () => {
        const editor = vscode.window.activeTextEditor;
        if (!editor) {
          throw new Error("open a file and select the code the memory is about");
        }
        const type = await vscode.window.showQuickPick(TEACH_TYPES, { placeHolder: "What kind of memory?" });
        if (!type) {
          return;
        }
        const selected = editor.document.getText(editor.selection).trim();
        const text = await vscode.window.showInputBox({
          prompt: `Teach Engram a ${type} about this code`,
          value: selected.split("\n")[0].slice(0, 200),
          validateInput: (v) => (v.trim() ? undefined : "Say what should be remembered"),
        });
        if (!text) {
          return;
        }
        const result = await run("engram.remember", {
          text,
          type,
          file: relPath(editor.document.uri),
          start_line: editor.selection.start.line,
          end_line: editor.selection.end.line,
        });
        void vscode.window.showInformationMessage(`Engram remembered: ${JSON.stringify(result).slice(0, 120)}`);
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.search",
      withErrors(async () => {
        const query = await vscode.window.showInputBox({ prompt: "Search Engram's memories" });
        if (!query) {
          return;
        }
        const hits = parseMemoryList(await run("engram.search", { query, k: 20 }));
        const pick = await vscode.window.showQuickPick(
          hits.map((m) => ({ label: m.content.split("\n")[0], description: `${m.type} · ${m.files[0] ?? ""}`, memory: m })),
          { placeHolder: hits.length ? "Memories" : "No memory matches" },
        );
        const folder0 = vscode.workspace.workspaceFolders?.[0];
        if (pick && pick.memory.files[0] && folder0) {
          await vscode.window.showTextDocument(vscode.Uri.joinPath(folder0.uri, pick.memory.files[0]));
        }
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.context",
      withErrors(async () => {
        const editor = vscode.window.activeTextEditor;
        const args = editor ? { file: relPath(editor.document.uri) } : { query: "project overview" };
        const pack = (await run("engram.context", args)) as { text?: string };
        const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: pack.text ?? JSON.stringify(pack, null, 2) });
        await vscode.window.showTextDocument(doc, { preview: true });
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.impact",
      withErrors(async () => {
        const editor = vscode.window.activeTextEditor;
        if (!editor) {
          throw new Error("open a file first");
        }
        const report = await run("engram.impact", { file: relPath(editor.document.uri) });
        const doc = await vscode.workspace.openTextDocument({ language: "json", content: JSON.stringify(report, null, 2) });
        await vscode.window.showTextDocument(doc, { preview: true });
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.review",
      withErrors(async () => {
        await vscode.commands.executeCommand("engram.memory.focus");
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.sessionSummary",
      withErrors(async () => {
        void vscode.window.showInformationMessage(summaryText(await run("engram.sessionSummary", {})));
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.reindex",
      withErrors(async () => {
        await run("engram.reindex", {});
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.shareTeam",
      withErrors(async () => {
        void vscode.window.showInformationMessage(shareText(await run("engram.share", {})));
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.syncTeam",
      withErrors(async () => {
        void vscode.window.showInformationMessage(syncText(await run("engram.syncTeam", {})));
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.consolidate",
      withErrors(async () => {
        void vscode.window.showInformationMessage(consolidateText(await run("engram.consolidate", {})));
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.openReport",
      withErrors(async () => {
        reportPanel = await openReport(
          {
            run,
            readFile: (file) => fs.readFile(file, "utf8"),
            createPanel: (title) => {
              const panel = vscode.window.createWebviewPanel("engram.report", title, vscode.ViewColumn.Active, {
                enableScripts: true,
              });
              panel.onDidDispose(() => (reportPanel = undefined));
              return panel;
            },
          },
          reportPanel,
        );
      }),
    ),
    vscode.commands.registerCommand("engram.ui.refreshView", withErrors(refresh)),
    vscode.commands.registerCommand(
      "engram.ui.confirm",
      withErrors(async (node: unknown) => {
        const memory = (node as TreeNode | undefined)?.memory;
        if (memory) {
          await run("engram.confirm", { id: memory.id });
          await refresh();
        }
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.flag",
      withErrors(async (node: unknown) => {
        const memory = (node as TreeNode | undefined)?.memory;
        if (!memory) {
          return;
        }
        const pick = await vscode.window.showQuickPick(FLAG_KINDS, { placeHolder: "What is wrong with it?" });
        if (!pick) {
          return;
        }
        const note = await vscode.window.showInputBox({ prompt: "A note (optional)" });
        await run("engram.flag", { id: memory.id, kind: pick.value, note: note || undefined });
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.edit",
      withErrors(async (node: unknown) => {
        const memory = (node as TreeNode | undefined)?.memory;
        if (!memory) {
          return;
        }
        const text = await vscode.window.showInputBox({ prompt: "Corrected memory", value: memory.content });
        if (!text || text === memory.content) {
          return;
        }
        // An edit is a correction: the new text supersedes the old memory.
        await run("engram.remember", { text, type: memory.type, file: memory.files[0], supersedes: memory.id });
        await run("engram.flag", { id: memory.id, kind: "incorrect", note: "edited in VS Code" });
        await refresh();
      }),
    ),
    vscode.commands.registerCommand("engram.ui.showLog", () => output.show()),
  );

  client.onDidChangeState((event) => {
    if (event.newState === State.Running) {
      void refresh();
    }
  });
  await client.start();
  const timer = setInterval(() => void refresh(), 60_000);
  context.subscriptions.push({ dispose: () => clearInterval(timer) });
  context.subscriptions.push(vscode.workspace.onDidSaveTextDocument(() => void refresh()));
}

export async function deactivate(): Promise<void> {
  if (client) {
    await client.stop();
  }
}

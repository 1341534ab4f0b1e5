/**
 * Engram for VS Code: starts `engram serve` (the `engram.serverPath` executable or an
 * interpreter with the engram package, see python.ts) in workspaces that use Engram, and adds
 * the Memory and Impact views, a status bar item and the teach / review / search commands on
 * top of the language client. Server commands (engram.search, engram.remember, …) are registered by
 * vscode-languageclient from the server's executeCommandProvider; the extension's own
 * commands use the distinct `engram.ui.*` ids, so no id is registered twice.
 */

import { execFile } from "node:child_process";
import { existsSync, promises as fs } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
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
  diagnosticMemoryId,
  hoverWithout,
  parseMemoryList,
  parseStats,
  plainText,
  rememberedText,
  shareText,
  Stats,
  statusText,
  summaryText,
  syncText,
  MemorySummary,
} from "./model";
import { buildImpactTree, ImpactNode } from "./impact";
import {
  describe,
  missingServerMessage,
  ProbeFailure,
  PythonExtensionApi,
  pythonExtensionInterpreter,
  ServerCandidate,
  serverCandidates,
} from "./python";
import { buildProbeCommand, buildServerCommand, LogLevel } from "./serverCommand";
import { launchSettingsChanged, toServerSettings, SettingsObject } from "./settings";
import { buildTree, notSetUpTree, TreeNode } from "./tree";
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
  /** The folder whose memories the view lists: their files open there. */
  folder: vscode.WorkspaceFolder | undefined;

  update(
    stats: Stats | undefined,
    memories: MemorySummary[],
    review: MemorySummary[],
    folder: vscode.WorkspaceFolder | undefined,
  ): void {
    this.show(buildTree(stats, memories, review), folder);
  }

  show(roots: TreeNode[], folder: vscode.WorkspaceFolder | undefined): void {
    this.roots = roots;
    this.folder = folder;
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
    if (node.command) {
      item.command = { command: node.command, title: node.label };
    }
    if (node.memory && node.memory.files.length > 0) {
      const folder = this.folder ?? vscode.workspace.workspaceFolders?.[0];
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

class ImpactTreeProvider implements vscode.TreeDataProvider<ImpactNode> {
  private readonly changed = new vscode.EventEmitter<ImpactNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private roots: ImpactNode[] = [];
  /** The folder of the file whose impact is shown: the report's paths are relative to it. */
  private folder: vscode.WorkspaceFolder | undefined;

  update(roots: ImpactNode[], folder: vscode.WorkspaceFolder | undefined): void {
    this.roots = roots;
    this.folder = folder;
    this.changed.fire(undefined);
  }

  getChildren(element?: ImpactNode): ImpactNode[] {
    return element ? (element.children ?? []) : this.roots;
  }

  getTreeItem(node: ImpactNode): vscode.TreeItem {
    const collapsible = node.children
      ? node.children.length <= 12
        ? vscode.TreeItemCollapsibleState.Expanded
        : vscode.TreeItemCollapsibleState.Collapsed
      : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(node.label, collapsible);
    item.description = node.description;
    item.tooltip = node.tooltip;
    const folder = this.folder ?? vscode.workspace.workspaceFolders?.[0];
    if (node.file && folder) {
      const line = Math.max(0, (node.line ?? 1) - 1);
      item.command = {
        command: "vscode.open",
        title: "Open",
        arguments: [vscode.Uri.joinPath(folder.uri, node.file), { selection: new vscode.Range(line, 0, line, 0) }],
      };
    }
    return item;
  }
}

/** Read-only documents for "Show Context" (no unsaved Untitled buffer to dismiss). */
class ContextDocuments implements vscode.TextDocumentContentProvider {
  static readonly scheme = "engram-context";
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly texts = new Map<string, string>();
  private readonly files = new Map<string, vscode.Uri>();

  /** Show ``text`` as ``name``; ``about``: the file it is the context of. */
  show(name: string, text: string, about?: vscode.Uri): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: ContextDocuments.scheme, path: `/${name}.md` });
    this.texts.set(uri.toString(), text);
    if (about) {
      this.files.set(uri.toString(), about);
    }
    this.changed.fire(uri);
    return uri;
  }

  /** The file a context document is about, if it is one of these. */
  about(uri: vscode.Uri): vscode.Uri | undefined {
    return uri.scheme === ContextDocuments.scheme ? this.files.get(uri.toString()) : undefined;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }
}

function probe(candidate: ServerCandidate): Promise<{ ok: boolean; stderr: string }> {
  const cmd = buildProbeCommand(candidate);
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

/** Whether this folder already uses Engram: its store or a team folder is there. */
function engramApplies(folder: vscode.WorkspaceFolder | undefined): boolean {
  if (!folder) {
    return false;
  }
  return [".engram", ".engram-team"].some((name) => existsSync(path.join(folder.uri.fsPath, name)));
}

/**
 * Whether any folder of the window uses Engram (the server serves those). Asked of the
 * first folder only, a window whose second folder had `.engram/` activated the extension
 * (workspaceContains looks in every folder) and then started nothing.
 */
function engramAppliesAnywhere(): boolean {
  return (vscode.workspace.workspaceFolders ?? []).some((f) => engramApplies(f));
}

/**
 * The folders of the window nobody set Engram up in. The server leaves them out (nothing
 * written, no engine: docs/lsp.md "Which folders are served"); it made `.engram/` in each
 * and started a workspace engine (~250 MB) for it, and VS Code then activated Engram
 * there on its own.
 */
function leftOut(): vscode.WorkspaceFolder[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => !engramApplies(f));
}

let client: LanguageClient | undefined;

/** Notifications, whose text may quote what a repository wrote: never a link ({@link plainText}). */
function info(text: string, ...items: string[]): Thenable<string | undefined> {
  return vscode.window.showInformationMessage(plainText(text), ...items);
}

function failure(text: string, ...items: string[]): Thenable<string | undefined> {
  return vscode.window.showErrorMessage(plainText(text), ...items);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("Engram", { log: true });
  context.subscriptions.push(output);
  const folder = vscode.workspace.workspaceFolders?.[0];
  const config = () => vscode.workspace.getConfiguration("engram");
  /** What the server gets for `scope`: the user's settings and the workspace's tuning only. */
  const serverSettings = (scope?: vscode.Uri): SettingsObject => {
    const levels = vscode.workspace.getConfiguration(undefined, scope).inspect?.("engram");
    return toServerSettings(vscode.workspace.getConfiguration("engram", scope) as unknown as SettingsObject, levels);
  };
  let starting: Promise<boolean> | undefined;

  /** Find a working server, start the language client; false (with one message) if none. */
  const startServer = async (): Promise<boolean> => {
    const settings = config();
    const candidates = serverCandidates(
      { serverPath: settings.get<string>("serverPath"), python: settings.get<string>("python"), home: os.homedir() },
      pythonExtensionInterpreter(await pythonApi(), folder?.uri),
    );
    const failures: ProbeFailure[] = [];
    let chosen: ServerCandidate | undefined;
    for (const candidate of candidates) {
      const check = await probe(candidate);
      if (check.ok) {
        chosen = candidate;
        break;
      }
      output.info(`not usable: ${describe(candidate)}: ${check.stderr.split("\n")[0]}`);
      failures.push({ candidate, stderr: check.stderr });
    }
    if (!chosen) {
      const message = missingServerMessage(failures);
      output.error(message);
      void failure(message, "Open Settings", "Show Log").then(async (pick) => {
        if (pick === "Open Settings") {
          await vscode.commands.executeCommand("workbench.action.openSettings", "engram.serverPath");
        } else if (pick === "Show Log") {
          output.show();
        }
      });
      return false;
    }
    output.info(`server: ${describe(chosen)}`);
    const server = buildServerCommand(
      chosen,
      folder?.uri.fsPath,
      settings.get<string[]>("serverArgs") ?? [],
      settings.get<LogLevel>("server.logLevel") ?? "warning",
    );
    const serverOptions: ServerOptions = {
      command: server.command,
      args: server.args,
      options: { cwd: server.cwd },
      transport: TransportKind.stdio,
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      outputChannel: output,
      initializationOptions: serverSettings(),
      synchronize: { configurationSection: "engram" },
      middleware: {
        workspace: {
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            return Array.isArray(result)
              ? result.map((r, i) => {
                  const item = params.items[i];
                  return item?.section === "engram" ? serverSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined) : r;
                })
              : result;
          },
        },
        // the server's "show impact" action returns JSON that VS Code would drop: show it
        provideCodeActions: async (document, range, ctx, token, next) => {
          const actions = await next(document, range, ctx, token);
          return actions?.map((action) => routeToUi(action));
        },
        // a server command run by a quick fix that fails: one message with the server's line.
        // Through vscode-languageclient it was two toasts, "engram.confirm: no memory with
        // id m-…" and "Request workspace/executeCommand failed. Message: … Code: -32602".
        // One that succeeds (confirm, flag, pin) changes the counts: the Memory view and the
        // status bar showed the old ones until the next minute's refresh or a save.
        executeCommand: async (command, args) => {
          try {
            const result = await client?.sendRequest("workspace/executeCommand", { command, arguments: args });
            void refresh();
            return result;
          } catch (err) {
            void failure(`Engram: ${commandFailure(err)}`);
            return undefined;
          }
        },
        // VS Code shows the diagnostics under the cursor in the hover already: Engram's
        // hover leaves out the memories they show (docs/vscode.md, "What you see")
        provideHover: async (document, position, token, next) => {
          const hover = await next(document, position, token);
          if (!hover) {
            return hover;
          }
          const shown = new Set(
            vscode.languages
              .getDiagnostics(document.uri)
              .filter((d) => d.source === "engram" && d.range.contains(position))
              .map((d) => diagnosticMemoryId(d.message))
              .filter((id): id is string => id !== undefined),
          );
          if (shown.size === 0) {
            return hover;
          }
          const contents: (vscode.MarkdownString | vscode.MarkedString)[] = [];
          for (const part of hover.contents) {
            if (!(part instanceof vscode.MarkdownString)) {
              contents.push(part);
              continue;
            }
            const value = hoverWithout(part.value, shown);
            if (value !== undefined) {
              const kept = new vscode.MarkdownString(value, part.supportThemeIcons);
              kept.isTrusted = part.isTrusted;
              kept.supportHtml = part.supportHtml;
              kept.baseUri = part.baseUri;
              contents.push(kept);
            }
          }
          return contents.length > 0 ? new vscode.Hover(contents, hover.range) : undefined;
        },
      },
    };
    client = new LanguageClient("engram", "Engram", serverOptions, clientOptions);
    client.onDidChangeState((event) => {
      if (event.newState === State.Running) {
        void refresh();
      }
    });
    await client.start();
    await vscode.commands.executeCommand("setContext", "engram.active", true);
    return true;
  };

  const ensureStarted = async (): Promise<boolean> => {
    if (client) {
      return true;
    }
    starting ??= startServer().finally(() => {
      if (!client) {
        starting = undefined;
      }
    });
    return starting;
  };
  /**
   * A change to a setting that chooses or starts the server (serverPath, python, serverArgs,
   * server.logLevel) takes effect at once: the running client stops and a new one starts, or a
   * server that could not start is tried again. So fixing the setting that the "could not
   * start" message names is enough; no window reload. Relaunches run one at a time.
   */
  let relaunching: Promise<void> = Promise.resolve();
  const relaunch = (): Promise<void> => {
    relaunching = relaunching.then(async () => {
      if (starting) {
        await starting.catch(() => false);
      }
      const running = client;
      if (running) {
        client = undefined;
        starting = undefined;
        await vscode.commands.executeCommand("setContext", "engram.active", false);
        try {
          await running.stop();
        } catch (err) {
          output.warn(`stopping the old server failed: ${String(err)}`);
        }
      } else if (!config().get<boolean>("enable", true) || !engramAppliesAnywhere()) {
        return;
      }
      output.info("a server setting changed: starting the server again");
      await ensureStarted();
    });
    return relaunching;
  };
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (launchSettingsChanged((section) => event.affectsConfiguration(section))) {
        void relaunch();
      }
    }),
  );

  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  status.command = "engram.ui.review";
  status.text = statusText(undefined, undefined);
  status.show();
  context.subscriptions.push(status);

  const tree = new MemoryTreeProvider();
  context.subscriptions.push(vscode.window.registerTreeDataProvider("engram.memory", tree));

  const impactTree = new ImpactTreeProvider();
  context.subscriptions.push(vscode.window.registerTreeDataProvider("engram.impact", impactTree));
  const contextDocs = new ContextDocuments();
  context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(ContextDocuments.scheme, contextDocs));

  const statusCommand = (command: string, tooltip: string | undefined): void => {
    status.command = command;
    status.tooltip = tooltip;
  };
  /** One line naming the folders left out and how to set one up (tooltip, message). */
  const leftOutText = (folders: readonly vscode.WorkspaceFolder[]): string =>
    `Engram is not set up in ${folders.map((f) => f.name).join(", ")}: nothing is written there. ` +
    `To use it there, open a file of the folder and run "Engram: Set Up This Folder".`;

  const run = async (command: string, args: unknown): Promise<unknown> => {
    if (!client) {
      if (!config().get<boolean>("enable", true)) {
        throw new Error('Engram is turned off for this workspace ("engram.enable")');
      }
      if (!engramAppliesAnywhere()) {
        throw new Error('Engram is not set up in this workspace: run "Engram: Set Up This Folder"');
      }
      if (!(await ensureStarted())) {
        throw new Error("the Engram server could not start (see Engram: Show Server Log)");
      }
    }
    if (!client || client.state !== State.Running) {
      throw new Error("Engram server is not running (see Engram: Show Server Log)");
    }
    return client.sendRequest("workspace/executeCommand", { command, arguments: [args] });
  };

  /*
   * Multi-root windows. One server serves every folder: a command with a file goes to that
   * file's folder, one about a memory to the folder holding it, and one about "the
   * workspace" (search, review, the views, report, team, upkeep) to the folder this picks,
   * sent as `workspaceFolder` (docs/commands.md). They all went to the first folder: in a
   * window with click and cobra, searching from a cobra file searched click's memories.
   */
  const folders = (): readonly vscode.WorkspaceFolder[] => vscode.workspace.workspaceFolders ?? [];
  /** The workspace folder of the file in the active editor, if it is in one. */
  const editorFolder = (): vscode.WorkspaceFolder | undefined => {
    const uri = vscode.window.activeTextEditor?.document.uri;
    return uri && uri.scheme === "file" ? vscode.workspace.getWorkspaceFolder(uri) : undefined;
  };
  /** The folder a workspace command acts on: the active file's, else the user picks one. */
  const commandFolder = async (): Promise<vscode.WorkspaceFolder | undefined> => {
    const all = folders();
    if (all.length <= 1) {
      return all[0];
    }
    return editorFolder() ?? (await vscode.window.showWorkspaceFolderPick({ placeHolder: "Which folder's Engram memory?" }));
  };
  /**
   * Refuse, before asking anything, a command for a folder left out (nobody set it up):
   * the server refused it only after the user had typed the memory or the query.
   */
  const mustBeSetUp = (target: vscode.WorkspaceFolder | undefined): void => {
    if (target && client && !engramApplies(target)) {
      throw new Error(`Engram is not set up in ${target.name}: run "Engram: Set Up This Folder" there first`);
    }
  };
  /** ``args`` routed to ``target`` (only a multi-root window needs it). */
  const inFolder = (args: Record<string, unknown>, target: vscode.WorkspaceFolder | undefined): Record<string, unknown> =>
    target && folders().length > 1 ? { ...args, workspaceFolder: target.uri.fsPath } : args;
  /** The folder the Memory view and the status bar show: the active file's, else the last one. */
  let viewFolder: vscode.WorkspaceFolder | undefined;

  let reportPanel: WebviewLike | undefined;
  let learnedSeen = 0;
  const refresh = async (): Promise<void> => {
    if (!client) {
      return;
    }
    try {
      const shown = editorFolder() ?? viewFolder ?? folders()[0];
      viewFolder = shown;
      if (shown && !engramApplies(shown)) {
        // left out: the server has nothing for it (asking every minute logged a failure)
        status.text = `$(circle-slash) Engram: not set up` + (folders().length > 1 ? ` (${shown.name})` : "");
        statusCommand("engram.ui.start", leftOutText([shown]));
        tree.show(notSetUpTree(shown.name), shown);
        return;
      }
      const others = leftOut();
      statusCommand("engram.ui.review", others.length ? leftOutText(others) : undefined);
      const [statsRaw, listRaw, reviewRaw] = await Promise.all([
        run("engram.stats", inFolder({}, shown)),
        run("engram.list", inFolder({ limit: 500 }, shown)).catch(() => []),
        run("engram.review", inFolder({}, shown)),
      ]);
      const stats = parseStats(statsRaw);
      status.text = statusText(stats, stats.indexing) + (shown && folders().length > 1 ? ` (${shown.name})` : "");
      tree.update(stats, parseMemoryList(listRaw), parseMemoryList(reviewRaw), shown);
      if (stats.sessionLearned > learnedSeen) {
        // the session summary, as soon as the session has learned something new
        learnedSeen = stats.sessionLearned;
        const summary = summaryText(await run("engram.sessionSummary", inFolder({}, shown)));
        void info(summary, "Review").then((pick) => {
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
        void failure(`Engram: ${err instanceof Error ? err.message : String(err)}`);
      }
    };

  const relPath = (uri: vscode.Uri): string => vscode.workspace.asRelativePath(uri, false);
  /**
   * The file the active editor shows, or the file of the Show Context document it shows:
   * *Show Impact* right after *Show Context* said "open a file first" with the file open
   * one tab away (the context document had become the active editor).
   */
  const activeFile = (): vscode.Uri | undefined => {
    const uri = vscode.window.activeTextEditor?.document.uri;
    return uri && uri.scheme === "file" ? uri : uri && contextDocs.about(uri);
  };
  /**
   * A file as the server is told it: its absolute path, which the server maps to the
   * workspace folder holding it. The path relative to its own folder went to the first
   * folder of a multi-root window: a file of the second was "not found" there, or one with
   * the same name in the first got the memory.
   */
  const serverFile = (uri: vscode.Uri): string => uri.fsPath;

  context.subscriptions.push(
    vscode.commands.registerCommand(
      "engram.ui.teach",
      withErrors(async () => {
        const editor = vscode.window.activeTextEditor;
        if (!editor) {
          throw new Error("open a file and select the code the memory is about");
        }
        if (editor.document.uri.scheme !== "file") {
          // an Untitled buffer, a git diff's old side, Engram's own context view: the server
          // took their names for workspace paths ("Untitled-1 does not exist (--allow-missing
          // anchors a file you are about to create)", "/Engram context.md is outside the workspace")
          throw new Error(
            `a memory is anchored to a saved file of the workspace, and ${path.posix.basename(editor.document.uri.path) || "this editor"} is not one`,
          );
        }
        mustBeSetUp(vscode.workspace.getWorkspaceFolder(editor.document.uri));
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
          file: serverFile(editor.document.uri),
          start_line: editor.selection.start.line,
          end_line: editor.selection.end.line,
        });
        void info(rememberedText(result));
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.search",
      withErrors(async () => {
        const target = await commandFolder();
        if (!target && folders().length > 1) {
          return;
        }
        mustBeSetUp(target);
        const query = await vscode.window.showInputBox({
          prompt: folders().length > 1 && target ? `Search Engram's memories of ${target.name}` : "Search Engram's memories",
        });
        if (!query) {
          return;
        }
        const hits = parseMemoryList(await run("engram.search", inFolder({ query, k: 20 }, target)));
        const pick = await vscode.window.showQuickPick(
          hits.map((m) => ({ label: m.content.split("\n")[0], description: `${m.type} · ${m.files[0] ?? ""}`, memory: m })),
          { placeHolder: hits.length ? "Memories" : "No memory matches" },
        );
        const holder = target ?? folders()[0];
        if (pick && pick.memory.files[0] && holder) {
          await vscode.window.showTextDocument(vscode.Uri.joinPath(holder.uri, pick.memory.files[0]));
        }
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.context",
      withErrors(async () => {
        const about = activeFile();
        const file = about ? relPath(about) : undefined;
        const args = about ? { file: serverFile(about) } : { query: "project overview" };
        const pack = (await run("engram.context", args)) as { text?: string };
        const name = file ? `Engram context - ${file.replace(/\//g, "_")}` : "Engram context";
        const uri = contextDocs.show(name, pack.text ?? JSON.stringify(pack, null, 2), about);
        const doc = await vscode.workspace.openTextDocument(uri);
        await vscode.window.showTextDocument(doc, { preview: true });
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.impact",
      withErrors(async (target?: unknown) => {
        // from the palette: the active file; from the server's code action: {file, symbol}
        const given = target as { file?: string; symbol?: string } | undefined;
        let args: { file: string; symbol?: string };
        let holder = editorFolder();
        if (given && typeof given.file === "string") {
          args = { file: given.file, symbol: given.symbol };
          if (path.isAbsolute(given.file)) {
            holder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(given.file)) ?? holder;
          }
        } else {
          const file = activeFile();
          if (!file) {
            throw new Error("open a file first");
          }
          args = { file: serverFile(file) };
        }
        const report = await run("engram.impact", args);
        impactTree.update(buildImpactTree(report), holder);
        await vscode.commands.executeCommand("engram.impact.focus");
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.review",
      withErrors(async () => {
        const target = await commandFolder();
        if (!target && folders().length > 1) {
          return;
        }
        viewFolder = target;
        await vscode.commands.executeCommand("engram.memory.focus");
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.sessionSummary",
      withErrors(async () => {
        const target = await commandFolder();
        if (!target && folders().length > 1) {
          return;
        }
        void info(summaryText(await run("engram.sessionSummary", inFolder({}, target))));
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.reindex",
      withErrors(async () => {
        const target = await commandFolder();
        if (!target && folders().length > 1) {
          return;
        }
        await run("engram.reindex", inFolder({}, target));
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.shareTeam",
      withErrors(async () => {
        const target = await commandFolder();
        if (!target && folders().length > 1) {
          return;
        }
        void info(shareText(await run("engram.share", inFolder({}, target))));
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.syncTeam",
      withErrors(async () => {
        const target = await commandFolder();
        if (!target && folders().length > 1) {
          return;
        }
        void info(syncText(await run("engram.syncTeam", inFolder({}, target))));
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.consolidate",
      withErrors(async () => {
        const target = await commandFolder();
        if (!target && folders().length > 1) {
          return;
        }
        void info(consolidateText(await run("engram.consolidate", inFolder({}, target))));
        await refresh();
      }),
    ),
    vscode.commands.registerCommand(
      "engram.ui.openReport",
      withErrors(async () => {
        const target = await commandFolder();
        if (!target && folders().length > 1) {
          return;
        }
        reportPanel = await openReport(
          {
            run: (command, args) => run(command, inFolder(args as Record<string, unknown>, target)),
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
        const holder = tree.folder;
        const file = memory.files[0] && holder ? path.join(holder.uri.fsPath, memory.files[0]) : memory.files[0];
        await run("engram.remember", { text, type: memory.type, file, supersedes: memory.id });
        await run("engram.flag", { id: memory.id, kind: "incorrect", note: "edited in VS Code" });
        await refresh();
      }),
    ),
    vscode.commands.registerCommand("engram.ui.showLog", () => output.show()),
    vscode.commands.registerCommand(
      "engram.ui.start",
      withErrors(async () => {
        const all = folders();
        if (!all.length) {
          // the server would take the extension host's working directory for the
          // workspace (code-server's launch folder, often $HOME) and make .engram/ there
          throw new Error("open a folder first: Engram keeps its memory in the folder's .engram/");
        }
        // the folder: the active file's, the only one, the only one left out, or picked
        const notSetUp = leftOut();
        const target =
          editorFolder() ??
          (all.length === 1 ? all[0] : notSetUp.length === 1 ? notSetUp[0] : undefined) ??
          (await vscode.window.showWorkspaceFolderPick({ placeHolder: "Set up Engram in which folder?" }));
        if (!target) {
          return;
        }
        const where = all.length > 1 ? ` in ${target.name}` : " in this workspace";
        if (engramApplies(target) && client) {
          void info(`Engram is already running${where}.`);
          return;
        }
        if (!(await ensureStarted())) {
          return;
        }
        if (engramApplies(target)) {
          void info(`Engram started${where}.`);
          return;
        }
        // The server makes the folder's .engram/ (with its .gitignore), serves it and runs
        // its first index with progress: impact, hover and anchors need the code graph.
        const answer = (await run("engram.setUp", { workspaceFolder: target.uri.fsPath })) as { error?: string | null };
        if (answer?.error) {
          throw new Error(answer.error);
        }
        void info(
          `Engram set up${where}: its memory for this folder is in ${path.join(target.name, ".engram")}/.`,
        );
        await refresh();
      }),
    ),
  );

  const timer = setInterval(() => void refresh(), 60_000);
  context.subscriptions.push({ dispose: () => clearInterval(timer) });
  context.subscriptions.push(vscode.workspace.onDidSaveTextDocument(() => void refresh()));
  context.subscriptions.push(
    vscode.window.onDidChangeActiveTextEditor(() => {
      const now = editorFolder();
      if (now && viewFolder && now.uri.fsPath !== viewFolder.uri.fsPath) {
        void refresh(); // the Memory view and status bar follow the folder of the file
      }
    }),
  );

  // Start only where Engram applies (issue 16): activation events are workspaceContains
  // .engram / .engram-team and the commands; "engram.enable": false turns it off here.
  if (!config().get<boolean>("enable", true)) {
    output.info('Engram is turned off for this workspace ("engram.enable": false)');
    return;
  }
  if (engramAppliesAnywhere()) {
    const others = leftOut();
    if (others.length) {
      // once per window, in the output and the status bar's tooltip; no toast at each start
      output.info(leftOutText(others));
      statusCommand("engram.ui.review", leftOutText(others));
    }
    await ensureStarted();
  } else {
    output.info('no .engram/ here: run "Engram: Set Up This Folder" to use Engram in this folder');
  }
}

/** The one line a failed server command says (a JSON-RPC error's message, without its code). */
export function commandFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : typeof err === "object" && err !== null && "message" in err ? String((err as { message: unknown }).message) : String(err);
  return message.split("\n")[0];
}

/** A server action whose result VS Code would drop, routed to the command that shows it. */
function routeToUi(action: vscode.Command | vscode.CodeAction): vscode.Command | vscode.CodeAction {
  const command = "command" in action && typeof action.command === "object" ? action.command : undefined;
  if (command?.command === "engram.impact") {
    command.command = "engram.ui.impact";
  }
  return action;
}

export async function deactivate(): Promise<void> {
  if (client) {
    await client.stop();
  }
}

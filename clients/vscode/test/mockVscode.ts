/**
 * A recording stand-in for the `vscode` module and for vscode-languageclient, installed
 * through Node's module loader so `src/extension.ts` runs unchanged under `node --test`.
 */

import Module from "node:module";

export interface Recorder {
  commands: Map<string, (...args: unknown[]) => unknown>;
  errors: string[];
  infos: string[];
  clients: {
    id: string;
    serverOptions: Record<string, unknown>;
    clientOptions: Record<string, unknown>;
    started: boolean;
    stopped: boolean;
  }[];
  /** The workspace/executeCommand requests sent, by command name, and their arguments. */
  requests: string[];
  requestArgs: unknown[];
  settings: Record<string, unknown>;
  treeProviders: string[];
  contexts: Record<string, unknown>;
  /** The editor the commands act on (set by a test). */
  window: { activeTextEditor?: unknown };
  /** The message every request fails with, when set (a server error). */
  failWith?: string;
  /** Quick pick and input box answers, taken in order (set by a test). */
  answers: unknown[];
  /** What `vscode.languages.getDiagnostics` returns (set by a test). */
  diagnostics: unknown[];
  /** The status bar item the extension made (its text, tooltip and command). */
  status?: { text: string; tooltip?: string; command?: string; show(): void; dispose(): void };
  /** Change settings as the user would and tell the extension's configuration listeners. */
  changeSettings(changed: Record<string, unknown>): void;
}

/** ``folder`` null: a window with no folder open; ``more``: the other folders of a multi-root window. */
export function installMocks(
  settings: Record<string, unknown> = {},
  folder: string | null = "/tmp/engram-ws",
  more: string[] = [],
): Recorder {
  const folders = folder === null ? [] : [folder, ...more];
  const configListeners: ((event: { affectsConfiguration(section: string): boolean }) => void)[] = [];
  const rec: Recorder = {
    commands: new Map(),
    errors: [],
    infos: [],
    clients: [],
    requests: [],
    requestArgs: [],
    settings,
    treeProviders: [],
    contexts: {},
    window: {},
    answers: [],
    diagnostics: [],
    changeSettings(changed) {
      Object.assign(rec.settings, changed);
      const keys = Object.keys(changed).map((k) => `engram.${k}`);
      const event = {
        affectsConfiguration: (section: string) => keys.some((k) => k === section || k.startsWith(`${section}.`)),
      };
      configListeners.forEach((listener) => listener(event));
    },
  };
  class EventEmitter {
    private listeners: ((v: unknown) => void)[] = [];
    event = (listener: (v: unknown) => void) => {
      this.listeners.push(listener);
      return { dispose() {} };
    };
    fire(value: unknown) {
      this.listeners.forEach((l) => l(value));
    }
  }
  const disposable = { dispose() {} };
  const workspaceFolders = folders.map((f) => ({ uri: { fsPath: f }, name: f.split("/").pop() ?? f }));
  class MarkdownString {
    isTrusted?: boolean;
    supportHtml?: boolean;
    baseUri?: unknown;
    constructor(
      public value = "",
      public supportThemeIcons?: boolean,
    ) {}
  }
  class Hover {
    constructor(
      public contents: unknown[],
      public range?: unknown,
    ) {}
  }
  const vscode = {
    EventEmitter,
    MarkdownString,
    Hover,
    languages: { getDiagnostics: () => rec.diagnostics },
    TreeItem: class {
      constructor(
        public label: string,
        public collapsibleState: number,
      ) {}
    },
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    StatusBarAlignment: { Left: 1, Right: 2 },
    Uri: {
      joinPath: (base: { fsPath: string }, p: string) => ({ fsPath: `${base.fsPath}/${p}` }),
      file: (p: string) => ({ scheme: "file", path: p, fsPath: p }),
      from: (parts: { scheme: string; path: string }) => ({ ...parts, toString: () => `${parts.scheme}:${parts.path}` }),
    },
    Range: class {
      constructor(...args: number[]) {
        Object.assign(this, { args });
      }
    },
    window: {
      get activeTextEditor() {
        return rec.window.activeTextEditor;
      },
      showQuickPick: async () => rec.answers.shift(),
      // answered with a folder's path (set by a test): the folder VS Code would return
      showWorkspaceFolderPick: async () => {
        const answer = rec.answers.shift();
        return workspaceFolders.find((f) => f.uri.fsPath === answer);
      },
      onDidChangeActiveTextEditor: () => disposable,
      showInputBox: async () => rec.answers.shift(),
      createOutputChannel: () => ({ info() {}, warn() {}, error() {}, show() {}, dispose() {} }),
      createStatusBarItem: () => (rec.status = { text: "", show() {}, dispose() {} }),
      registerTreeDataProvider: (id: string) => {
        rec.treeProviders.push(id);
        return disposable;
      },
      showErrorMessage: async (message: string) => {
        rec.errors.push(message);
        return undefined;
      },
      showInformationMessage: async (message: string) => {
        rec.infos.push(message);
        return undefined;
      },
    },
    workspace: {
      workspaceFolders: folder === null ? undefined : workspaceFolders,
      getWorkspaceFolder: (uri: { fsPath: string }) =>
        workspaceFolders.find((f) => uri.fsPath === f.uri.fsPath || uri.fsPath.startsWith(`${f.uri.fsPath}/`)),
      getConfiguration: () => ({
        get: (key: string, fallback?: unknown) => rec.settings[key] ?? fallback,
        ...rec.settings,
      }),
      registerTextDocumentContentProvider: () => disposable,
      onDidSaveTextDocument: () => disposable,
      onDidChangeConfiguration: (listener: (event: { affectsConfiguration(section: string): boolean }) => void) => {
        configListeners.push(listener);
        return disposable;
      },
      // as VS Code does: relative to the folder that holds the file
      asRelativePath: (uri: { fsPath: string }) => {
        const holder = folders.find((f) => uri.fsPath.startsWith(`${f}/`));
        return holder ? uri.fsPath.slice(holder.length + 1) : uri.fsPath;
      },
    },
    extensions: { getExtension: () => undefined },
    commands: {
      registerCommand: (id: string, fn: (...args: unknown[]) => unknown) => {
        if (rec.commands.has(id)) {
          throw new Error(`command ${id} registered twice`);
        }
        rec.commands.set(id, fn);
        return disposable;
      },
      executeCommand: async (id: string, ...args: unknown[]) => {
        if (id === "setContext") {
          rec.contexts[String(args[0])] = args[1];
        } else if (rec.commands.has(id)) {
          return rec.commands.get(id)?.(...args);
        }
        return undefined;
      },
    },
  };
  const languageclient = {
    State: { Stopped: 1, Starting: 3, Running: 2 },
    TransportKind: { stdio: 0 },
    LanguageClient: class {
      state = 1;
      private readonly index: number;
      constructor(id: string, _name: string, serverOptions: Record<string, unknown>, clientOptions: Record<string, unknown>) {
        this.index = rec.clients.push({ id, serverOptions, clientOptions, started: false, stopped: false }) - 1;
      }
      onDidChangeState() {
        return disposable;
      }
      async start() {
        rec.clients[this.index].started = true;
        this.state = 2;
      }
      async stop() {
        rec.clients[this.index].stopped = true;
      }
      async sendRequest(_method: string, params?: { command?: string; arguments?: unknown[] }) {
        rec.requests.push(String(params?.command));
        rec.requestArgs.push(params?.arguments?.[0]);
        if (rec.failWith !== undefined) {
          throw new Error(rec.failWith); // as a JSON-RPC ResponseError: its message
        }
        return {};
      }
    },
  };
  const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const original = loader._load;
  loader._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") return vscode;
    if (request === "vscode-languageclient/node") return languageclient;
    return original.call(this, request, ...rest);
  };
  return rec;
}

/**
 * VS Code settings -> the `engram` configuration section the server reads.
 *
 * VS Code flattens `engram.diagnostics.trustLevel` into nested objects already; we drop
 * client-only keys so the server does not warn about them, and every value a workspace set
 * that it may not set (below).
 *
 * The server takes what the editor sends as the user's own settings, which always apply
 * (docs/security.md, "Workspace trust"). VS Code's merged section is not only the user's:
 * it holds the workspace's `.vscode/settings.json` too, which comes with `git clone`, and
 * VS Code returns undeclared keys from it as readily as declared ones. A clone's
 * `{"engram.observer.plugins": ["tools/x.py:X"]}` ran `tools/x.py` in the language server
 * the moment a file was opened, and `engram.llm` / `engram.team` / `engram.store` could
 * name an LLM endpoint with `api_key_env: "GITHUB_TOKEN"`, trust every teammate's file, or
 * point the store at another machine, all past `engram trust`. So a value set by the
 * workspace or its folder reaches the server only for the settings in
 * {@link WORKSPACE_SETTABLE} (the declared tuning settings); for any other key the server
 * gets the user's own value, or nothing.
 */

const CLIENT_ONLY_KEYS = new Set(["python", "serverArgs", "serverPath", "enable", "server", "trace"]);

/**
 * The `engram.*` settings (without the prefix) a workspace's `.vscode/settings.json` may set:
 * every setting package.json declares that is neither machine-scoped nor client-only, all of
 * them tuning (tests/pure.test.ts checks this list against the manifest).
 */
export const WORKSPACE_SETTABLE: readonly string[] = [
  "diagnostics.trustLevel",
  "diagnostics.maxPerFile",
  "diagnostics.severity",
  "diagnostics.debounceMs",
  "index.indexOnStart",
  "retrieval.defaultBudgetTokens",
  "mcp.maxConnections",
  "observer.enabled",
];

/**
 * The numeric settings of {@link WORKSPACE_SETTABLE} and which side of the manifest's default
 * widens what Engram shows or spends (the server's `config.WORKSPACE_LIMITS`): a workspace
 * may narrow them, never widen them (stop 32: a clone's `.vscode/settings.json` with
 * `"engram.retrieval.defaultBudgetTokens": 1000000` passed as the user's own). A wider
 * value is replaced by the user's own, as an undeclared key is; tests/pure.test.ts checks
 * the defaults against the manifest.
 */
export const WORKSPACE_LIMITS: Readonly<Record<string, readonly ["at_most" | "at_least", number]>> = {
  "diagnostics.trustLevel": ["at_most", 2],
  "diagnostics.maxPerFile": ["at_most", 20],
  "diagnostics.debounceMs": ["at_least", 300],
  "retrieval.defaultBudgetTokens": ["at_most", 2000],
  "mcp.maxConnections": ["at_most", 10],
};

function widens(path: string, value: unknown): boolean {
  const limit = WORKSPACE_LIMITS[path];
  if (!limit || typeof value !== "number") {
    return false;
  }
  return limit[0] === "at_most" ? value > limit[1] : value < limit[1];
}

export type SettingsObject = { [key: string]: unknown };

/** What VS Code's `inspect("engram")` says: the section as each level set it. */
export interface SettingLevels {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

function isObject(value: unknown): value is SettingsObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Dotted paths of the leaves of `tree` (an array or a scalar is a leaf). */
function leaves(tree: SettingsObject, prefix = ""): string[] {
  return Object.entries(tree).flatMap(([key, value]) =>
    isObject(value) && Object.keys(value).length > 0 ? leaves(value, `${prefix}${key}.`) : [`${prefix}${key}`],
  );
}

function settable(path: string): boolean {
  return WORKSPACE_SETTABLE.some((key) => path === key || path.startsWith(`${key}.`));
}

function lookup(tree: unknown, path: string[]): unknown {
  return path.reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), tree);
}

/** `tree` with `path` set to `value` (deleted when `value` is undefined), in place. */
function assign(tree: SettingsObject, path: string[], value: unknown): void {
  const [key, ...rest] = path;
  if (rest.length === 0) {
    if (value === undefined) {
      delete tree[key];
    } else {
      tree[key] = value;
    }
    return;
  }
  const child = tree[key];
  if (!isObject(child)) {
    if (value !== undefined) {
      tree[key] = {};
      assign(tree[key] as SettingsObject, rest, value);
    }
    return;
  }
  tree[key] = { ...child };
  assign(tree[key] as SettingsObject, rest, value);
  if (Object.keys(tree[key] as SettingsObject).length === 0) {
    delete tree[key];
  }
}

/**
 * The server's settings from VS Code's merged `engram` section; `levels` (VS Code's
 * `inspect("engram")`) tells which values a workspace or a folder set: those outside
 * {@link WORKSPACE_SETTABLE}, or wider than {@link WORKSPACE_LIMITS} allow, are replaced by
 * the user's own value, or dropped.
 */
export function toServerSettings(section: SettingsObject | undefined | null, levels?: SettingLevels): SettingsObject {
  let result: SettingsObject = {};
  if (!section) {
    return result;
  }
  for (const [key, value] of Object.entries(section)) {
    if (CLIENT_ONLY_KEYS.has(key) || typeof value === "function") {
      continue;
    }
    result[key] = value;
  }
  result = JSON.parse(JSON.stringify(result)) as SettingsObject;
  for (const layer of [levels?.workspaceValue, levels?.workspaceFolderValue]) {
    if (!isObject(layer)) {
      continue;
    }
    for (const path of leaves(layer)) {
      const wider = widens(path, lookup(layer, path.split(".")));
      if ((!settable(path) || wider) && !CLIENT_ONLY_KEYS.has(path.split(".")[0])) {
        assign(result, path.split("."), lookup(levels?.globalValue, path.split(".")));
      }
    }
  }
  return result;
}

/**
 * Settings that choose or start the server process: a change to one of them needs a new
 * process (the others reach the running server through workspace/didChangeConfiguration).
 */
export const LAUNCH_KEYS = ["engram.serverPath", "engram.python", "engram.serverArgs", "engram.server.logLevel"];

/** Whether a configuration change touches how the server is launched. */
export function launchSettingsChanged(affects: (section: string) => boolean): boolean {
  return LAUNCH_KEYS.some((key) => affects(key));
}

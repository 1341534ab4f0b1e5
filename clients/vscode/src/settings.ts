/**
 * VS Code settings -> the `engram` configuration section the server reads.
 *
 * VS Code flattens `engram.diagnostics.trustLevel` into nested objects already; we only
 * drop client-only keys so the server does not warn about them.
 */

const CLIENT_ONLY_KEYS = new Set(["python", "serverArgs", "serverPath", "enable", "server", "trace"]);

export type SettingsObject = { [key: string]: unknown };

export function toServerSettings(section: SettingsObject | undefined | null): SettingsObject {
  const result: SettingsObject = {};
  if (!section) {
    return result;
  }
  for (const [key, value] of Object.entries(section)) {
    if (CLIENT_ONLY_KEYS.has(key) || typeof value === "function") {
      continue;
    }
    result[key] = value;
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

/**
 * Finding the Engram server to start, and saying what to do when there is none.
 *
 * A project's own virtualenv usually does not have Engram in it, so the Python extension's
 * interpreter cannot simply win (issue 16). Order:
 *   1. `engram.serverPath`: an `engram` executable (for example what `pipx install` or
 *      `uv tool install` put in ~/.local/bin) — only that, when set;
 *   2. `engram.python`: an interpreter with the engram package — only that, when set;
 *   3. otherwise the first that works of: the Python extension's interpreter, `engram` on
 *      PATH, ~/.local/bin/engram, python3.
 * Kept free of the `vscode` module so it is unit-testable.
 */

export type CandidateSource = "serverPath" | "python" | "python-extension" | "path" | "user-bin" | "default";

export interface ServerCandidate {
  /** `executable`: run `<command> serve`; `python`: run `<command> -P -m engram serve`. */
  kind: "executable" | "python";
  command: string;
  source: CandidateSource;
}

/** Kept for callers that only need an interpreter (the Python extension's API shape). */
export interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: unknown): { path: string } | undefined;
  };
  settings?: {
    getExecutionDetails(resource?: unknown): { execCommand: string[] | undefined };
  };
}

export interface LocateSettings {
  serverPath?: string;
  python?: string;
  /** The user's home directory, for ~ in settings and ~/.local/bin. */
  home?: string;
  platform?: string;
}

function expandHome(value: string, home: string | undefined): string {
  return home && (value === "~" || value.startsWith("~/")) ? home + value.slice(1) : value;
}

export function pythonExtensionInterpreter(api: PythonExtensionApi | undefined, resource?: unknown): string | undefined {
  const active = api?.environments?.getActiveEnvironmentPath(resource)?.path;
  if (active && active.trim()) {
    return active;
  }
  const exec = api?.settings?.getExecutionDetails(resource)?.execCommand;
  return exec && exec.length > 0 && exec[0] ? exec[0] : undefined;
}

/** The candidates to probe, in order; an explicit setting is the only candidate. */
export function serverCandidates(settings: LocateSettings, pythonExtension: string | undefined): ServerCandidate[] {
  const serverPath = (settings.serverPath ?? "").trim();
  if (serverPath) {
    return [{ kind: "executable", command: expandHome(serverPath, settings.home), source: "serverPath" }];
  }
  const python = (settings.python ?? "").trim();
  if (python) {
    return [{ kind: "python", command: expandHome(python, settings.home), source: "python" }];
  }
  const windows = (settings.platform ?? process.platform) === "win32";
  const found: ServerCandidate[] = [];
  if (pythonExtension) {
    found.push({ kind: "python", command: pythonExtension, source: "python-extension" });
  }
  found.push({ kind: "executable", command: "engram", source: "path" });
  if (settings.home && !windows) {
    found.push({ kind: "executable", command: `${settings.home}/.local/bin/engram`, source: "user-bin" });
  }
  found.push({ kind: "python", command: windows ? "python" : "python3", source: "default" });
  return found;
}

export function describe(candidate: ServerCandidate): string {
  switch (candidate.source) {
    case "serverPath":
      return `"engram.serverPath" (${candidate.command})`;
    case "python":
      return `the interpreter in "engram.python" (${candidate.command})`;
    case "python-extension":
      return `the Python extension's interpreter (${candidate.command})`;
    case "path":
      return "`engram` on PATH";
    case "user-bin":
      return candidate.command;
    default:
      return `${candidate.command} on PATH`;
  }
}

export interface ProbeFailure {
  candidate: ServerCandidate;
  stderr: string;
}

/** How Engram is installed so that an editor can start it (docs/install.md). */
export const INSTALL_HINT = "install it once with `pipx install <path to the Engram repository>` (or `uv tool install <path>`)";

/**
 * The one message shown when no candidate starts: what was tried, why it failed, the fix.
 * A missing program and a program without the engram package get different fixes.
 */
export function missingServerMessage(failures: ProbeFailure[]): string {
  if (failures.length === 0) {
    return `Engram could not start: nothing to run. Fix: ${INSTALL_HINT} and set "engram.serverPath" to the engram it installed.`;
  }
  const explicit = failures.length === 1 && ["serverPath", "python"].includes(failures[0].candidate.source);
  if (explicit) {
    const { candidate, stderr } = failures[0];
    const setting = candidate.source === "serverPath" ? "engram.serverPath" : "engram.python";
    if (notFound(stderr)) {
      return `Engram could not start: ${describe(candidate)} was not found. Fix: set "${setting}" to an existing file, or ${INSTALL_HINT}.`;
    }
    if (candidate.kind === "python") {
      return (
        `Engram could not start: the engram package is not installed for ${describe(candidate)}. ` +
        `Fix: ${INSTALL_HINT} and set "engram.serverPath" to its engram, or \`${candidate.command} -m pip install <path to the Engram repository>\`.`
      );
    }
    return `Engram could not start: ${describe(candidate)} failed (${firstLine(stderr)}). Fix: ${INSTALL_HINT} and point "engram.serverPath" at it.`;
  }
  const tried = failures
    .map((f) => `${describe(f.candidate)} ${notFound(f.stderr) ? "was not found" : f.candidate.kind === "python" ? "lacks the engram package" : "failed"}`)
    .join("; ");
  return `Engram could not start: ${tried}. Fix: ${INSTALL_HINT}, then set "engram.serverPath" to the engram it installed (for example ~/.local/bin/engram).`;
}

function notFound(stderr: string): boolean {
  return /ENOENT|not found|No such file|command not found/i.test(stderr) && !/No module named/i.test(stderr);
}

function firstLine(text: string): string {
  return (text.split("\n").find((l) => l.trim()) ?? "no output").trim().slice(0, 160);
}

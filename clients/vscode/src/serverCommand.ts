/**
 * The exact command line the extension uses to start the server.
 *
 * vscode-languageclient appends `--stdio` to it (TransportKind.stdio); `engram serve`
 * accepts that flag. The Node smoke test (`scripts/smoke.mjs`) imports these functions and
 * appends `--stdio` the same way, and `tests/clients/test_vscode_e2e.py` runs the packaged
 * extension in a real VS Code, so what CI starts is what users get.
 */

import type { ServerCandidate } from "./python";

export interface ServerCommand {
  command: string;
  args: string[];
  cwd?: string;
}

export type LogLevel = "error" | "warning" | "info" | "debug";

export function buildServerCommand(
  server: ServerCandidate | string,
  workspaceFolder: string | undefined,
  extraArgs: readonly string[] = [],
  logLevel: LogLevel = "warning",
): ServerCommand {
  const candidate: ServerCandidate = typeof server === "string" ? { kind: "python", command: server, source: "python" } : server;
  // -P: the server starts in the workspace folder, and `-m` would put it first on sys.path,
  // so an `engram/` folder in a cloned repository would run instead (docs/security.md,
  // "Python children")
  const args = candidate.kind === "python" ? ["-P", "-m", "engram", "serve"] : ["serve"];
  if (workspaceFolder) {
    args.push("--workspace", workspaceFolder);
  }
  if (logLevel !== "warning") {
    args.push("--log-level", logLevel);
  }
  args.push(...extraArgs);
  return { command: candidate.command, args, cwd: workspaceFolder };
}

/** The check run before starting: exits 0 only when this candidate can run Engram. */
export function buildProbeCommand(server: ServerCandidate | string): ServerCommand {
  const candidate: ServerCandidate = typeof server === "string" ? { kind: "python", command: server, source: "python" } : server;
  if (candidate.kind === "executable") {
    return { command: candidate.command, args: ["--version"] };
  }
  return { command: candidate.command, args: ["-P", "-c", "import engram, sys; sys.stdout.write(engram.__version__)"] };
}

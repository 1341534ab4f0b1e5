/**
 * The exact command line the extension uses to start the server.
 *
 * The Node smoke test (`scripts/smoke.mjs`) imports this same function, so what CI
 * starts is what users get.
 */

export interface ServerCommand {
  command: string;
  args: string[];
  cwd?: string;
}

export function buildServerCommand(
  python: string,
  workspaceFolder: string | undefined,
  extraArgs: readonly string[] = [],
): ServerCommand {
  const args = ["-m", "engram", "serve"];
  if (workspaceFolder) {
    args.push("--workspace", workspaceFolder);
  }
  args.push(...extraArgs);
  return { command: python, args, cwd: workspaceFolder };
}

/** The check run before starting: exits 0 only when `import engram` works. */
export function buildProbeCommand(python: string): ServerCommand {
  return { command: python, args: ["-c", "import engram, sys; sys.stdout.write(engram.__version__)"] };
}

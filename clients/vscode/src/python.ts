/**
 * Finding the Python interpreter that runs `engram serve`.
 *
 * Order (issue 7): the `engram.python` setting, then the Python extension's active
 * interpreter if that extension is installed, then `python3`. Kept free of the `vscode`
 * module so it is unit-testable.
 */

export interface PythonChoice {
  command: string;
  source: "setting" | "python-extension" | "default";
}

/** The subset of the Python extension's API we use (ms-python.python, `exports.environments`). */
export interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: unknown): { path: string } | undefined;
  };
  settings?: {
    getExecutionDetails(resource?: unknown): { execCommand: string[] | undefined };
  };
}

export function choosePython(
  setting: string | undefined,
  pythonApi: PythonExtensionApi | undefined,
  resource?: unknown,
): PythonChoice {
  const configured = (setting ?? "").trim();
  if (configured) {
    return { command: configured, source: "setting" };
  }
  const active = pythonApi?.environments?.getActiveEnvironmentPath(resource)?.path;
  if (active && active.trim()) {
    return { command: active, source: "python-extension" };
  }
  const exec = pythonApi?.settings?.getExecutionDetails(resource)?.execCommand;
  if (exec && exec.length > 0 && exec[0]) {
    return { command: exec[0], source: "python-extension" };
  }
  return { command: process.platform === "win32" ? "python" : "python3", source: "default" };
}

/** The one-line explanation and fix shown when Python or the package is missing. */
export function missingServerMessage(choice: PythonChoice, stderr: string): string {
  const where =
    choice.source === "setting"
      ? `the interpreter in the "engram.python" setting (${choice.command})`
      : choice.source === "python-extension"
        ? `the Python extension's active interpreter (${choice.command})`
        : `${choice.command} on PATH`;
  if (/ENOENT|not found|No such file/i.test(stderr)) {
    return `Engram could not start: ${where} was not found. Install Python 3.11+ or set "engram.python" to an interpreter.`;
  }
  return (
    `Engram could not start: the engram package is not installed for ${where}. ` +
    `Fix: run \`${choice.command} -m pip install engram\` (or \`pip install -e .\` in the Engram repository), ` +
    `or set "engram.python" to an interpreter that has it.`
  );
}

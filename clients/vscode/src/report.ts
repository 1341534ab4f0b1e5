/**
 * "Engram: Open Report": the server writes the self-contained HTML report
 * (`engram.report`, docs/report.md) and the extension shows it in a webview.
 *
 * The page carries its own Content-Security-Policy (no load from outside the file) and
 * plotly.js inline, so the webview needs scripts enabled and nothing else: no local
 * resource roots, no network.
 */

export interface ReportResult {
  path: string;
  module?: string | null;
}

export interface WebviewLike {
  webview: { html: string };
  reveal(): void;
}

export interface ReportDeps {
  run(command: string, args: unknown): Promise<unknown>;
  readFile(path: string): Promise<string>;
  createPanel(title: string): WebviewLike;
}

/** The title of the report tab, naming the module whose impact graph it draws. */
export function reportTitle(result: ReportResult): string {
  return result.module ? `Engram Report (${result.module.split("/").pop()})` : "Engram Report";
}

/** Ask the server for the report and show it; returns the panel (reused when given). */
export async function openReport(deps: ReportDeps, panel?: WebviewLike): Promise<WebviewLike> {
  const result = (await deps.run("engram.report", {})) as ReportResult;
  if (!result || typeof result.path !== "string") {
    throw new Error("the Engram server did not return a report path");
  }
  const html = await deps.readFile(result.path);
  const target = panel ?? deps.createPanel(reportTitle(result));
  target.webview.html = html;
  target.reveal();
  return target;
}

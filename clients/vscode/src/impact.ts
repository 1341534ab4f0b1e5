/**
 * "Show Impact" as a tree (the Impact view) instead of raw JSON: what a change to a file or
 * symbol may break, from the server's `engram.impact` result (docs/commands.md). Pure, so it
 * is unit-tested without `vscode`.
 */

export interface ImpactNode {
  label: string;
  description?: string;
  tooltip?: string;
  /** Workspace-relative file to open, and the 1-based line when known. */
  file?: string;
  line?: number;
  children?: ImpactNode[];
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
}

function asList(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.map(asRecord) : [];
}

function asStrings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

function group(label: string, children: ImpactNode[], empty?: string): ImpactNode[] {
  if (children.length === 0) {
    return empty ? [{ label, description: empty }] : [];
  }
  return [{ label, description: String(children.length), children }];
}

/** The Impact view's roots for one `engram.impact` result. */
export function buildImpactTree(raw: unknown): ImpactNode[] {
  const rec = asRecord(raw);
  const target = str(rec["target"]);
  if (!target) {
    return [{ label: "No impact report", description: "run Engram: Show Impact of This File" }];
  }
  const symbol = str(rec["symbol"]);
  const summary = str(rec["summary"]);
  const head: ImpactNode = {
    label: symbol ? `${target}: ${symbol}` : target,
    description: summary || undefined,
    tooltip: summary || undefined,
    file: target,
  };
  const dependents = [...asList(rec["direct_dependents"]), ...asList(rec["transitive_dependents"])]
    .filter((d) => str(d["file"]))
    .map((d): ImpactNode => {
      const depth = num(d["depth"]);
      const path = asStrings(d["path"]);
      const via = depth > 1 && path.length > 2 ? `via ${path.slice(1, -1).join(" → ")}` : "imports it";
      return { label: str(d["file"]), description: depth > 1 ? `${via}` : "direct", tooltip: path.join(" → "), file: str(d["file"]) };
    });
  const references = asList(rec["symbol_references"])
    .filter((r) => str(r["file"]))
    .map((r): ImpactNode => ({
      label: `${str(r["file"])}:${num(r["line"])}`,
      description: str(r["kind"]),
      file: str(r["file"]),
      line: num(r["line"]) || undefined,
    }));
  const cochange = asList(rec["cochange"])
    .filter((c) => str(c["file"]))
    .map((c): ImpactNode => ({
      label: str(c["file"]),
      description: `${Math.round(num(c["confidence"]) * 100)}% of its commits (${num(c["support"])})`,
      file: str(c["file"]),
    }));
  const tests = asStrings(rec["tests"]).map((t): ImpactNode => ({ label: t, file: t }));
  const dependencies = asStrings(rec["dependencies"]).map((d): ImpactNode => ({ label: d, file: d }));
  const ranked = asList(rec["ranked_files"])
    .filter((r) => str(r["file"]))
    .slice(0, 20)
    .map((r): ImpactNode => ({
      label: str(r["file"]),
      description: `${num(r["score"]).toFixed(2)} · ${asStrings(r["reasons"]).join(", ")}`,
      file: str(r["file"]),
    }));
  const notes = asStrings(rec["notes"]).map((n): ImpactNode => ({ label: n }));
  return [
    head,
    ...group("Dependents", dependents, "none found"),
    ...group("References", references),
    ...group("Usually changes with", cochange),
    ...group("Tests to run", tests),
    ...group("Most likely affected", ranked),
    ...group("Depends on", dependencies),
    ...group("Notes", notes),
  ];
}

/**
 * Shapes of the server's executeCommand results (docs/commands.md), read defensively:
 * an older or newer server must never break the view.
 */

export interface MemorySummary {
  id: string;
  type: string;
  content: string;
  confidence: number;
  source: string;
  files: string[];
  needsReview: boolean;
  stale: boolean;
  citation: string;
}

export interface Stats {
  /** Memories shown anywhere: not deprecated (flagged incorrect or retired). */
  shown: number;
  /** The trust state "active" (docs/trust.md): shown, not in review, not stale. */
  active: number;
  /** Memories never shown or injected (flagged, deprecated, retired, forgotten), kept for their history. */
  retired: number;
  total: number;
  needsReview: number;
  stale: number;
  byType: Record<string, number>;
  indexing?: string;
  /** Memories learned in this server session (remembered here or promoted by the observer). */
  sessionLearned: number;
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
}

function asNumber(value: unknown, fallback = 0): number {
  return typeof value === "number" && Number.isFinite(value) ? value : fallback;
}

function asStringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

export function parseMemory(raw: unknown): MemorySummary | undefined {
  const rec = asRecord(raw);
  const inner = rec["memory"] !== undefined ? asRecord(rec["memory"]) : rec;
  const id = inner["id"];
  if (typeof id !== "string") {
    return undefined;
  }
  const anchors = Array.isArray(inner["anchors"]) ? inner["anchors"] : [];
  const anchorFiles = anchors.map((a) => asRecord(a)["file"]).filter((f): f is string => typeof f === "string");
  const files = [...new Set([...anchorFiles, ...asStringArray(inner["related_files"])])];
  const content = typeof inner["content"] === "string" ? inner["content"] : "";
  // a result's record carries its chip (`citation`) beside the hit's fields or in `memory`
  const chip = [rec["citation"], inner["citation"]].find((c): c is string => typeof c === "string");
  return {
    id,
    type: typeof inner["type"] === "string" ? inner["type"] : "memory",
    content,
    confidence: asNumber(inner["confidence"], 0),
    source: typeof inner["source"] === "string" ? inner["source"] : "",
    files,
    needsReview: inner["needs_review"] === true,
    stale: rec["stale"] === true || (inner["stale_at"] !== null && inner["stale_at"] !== undefined),
    citation: chip ?? `[Memory ${id}: ${content.slice(0, 40)}]`,
  };
}

/** A list result may be a bare array or an object with `memories`, `items`, `hits` or `results`. */
export function parseMemoryList(raw: unknown): MemorySummary[] {
  let list: unknown = raw;
  if (!Array.isArray(raw)) {
    const rec = asRecord(raw);
    list = rec["memories"] ?? rec["items"] ?? rec["hits"] ?? rec["results"] ?? [];
  }
  return Array.isArray(list) ? list.map(parseMemory).filter((m): m is MemorySummary => m !== undefined) : [];
}

export function parseStats(raw: unknown): Stats {
  const rec = asRecord(raw);
  const memories = asRecord(rec["memories"]);
  const byTypeRaw = asRecord(rec["by_type"] ?? memories["by_type"]);
  const byType: Record<string, number> = {};
  for (const [key, value] of Object.entries(byTypeRaw)) {
    byType[key] = asNumber(value);
  }
  const total = asNumber(rec["total"] ?? memories["total"]);
  const retired = asNumber(rec["deprecated"] ?? memories["deprecated"]);
  return {
    shown: asNumber(rec["shown"] ?? memories["shown"], total - retired),
    active: asNumber(rec["active"] ?? memories["active"], total - retired),
    retired,
    total,
    needsReview: asNumber(rec["needs_review"] ?? memories["needs_review"]),
    stale: asNumber(rec["stale"] ?? memories["stale"]),
    byType,
    indexing: typeof rec["indexing"] === "string" ? rec["indexing"] : undefined,
    sessionLearned: asNumber(asRecord(rec["session"])["learned"]),
  };
}

export function moduleOf(file: string): string {
  const parts = file.split("/");
  return parts.length > 1 ? parts.slice(0, -1).join("/") : "(root)";
}

/** "1 memory", "2 memories": counts read as English in the status bar and messages. */
export function plural(count: number, one: string, many: string = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

export function statusText(stats: Stats | undefined, progress: string | undefined): string {
  if (progress) {
    return `$(sync~spin) Engram: ${progress}`;
  }
  if (!stats) {
    return "$(book) Engram: starting…";
  }
  const review = stats.needsReview > 0 ? ` · ${stats.needsReview} to review` : "";
  return `$(book) Engram: ${plural(stats.shown, "memory", "memories")}${review}`;
}

export function summaryText(raw: unknown): string {
  const rec = asRecord(raw);
  const applied = Array.isArray(rec["applied"]) ? rec["applied"].length : asNumber(rec["applied"]);
  const learned = Array.isArray(rec["learned"]) ? rec["learned"].length : asNumber(rec["learned"]);
  const review = Array.isArray(rec["needs_review"]) ? rec["needs_review"].length : asNumber(rec["needs_review"]);
  return `Engram session: ${plural(applied, "memory", "memories")} applied, ${learned} learned, ${review} to review.`;
}

/** The message after "Share Confirmed Memories with the Team" (engram.share). */
export function shareText(raw: unknown): string {
  const rec = asRecord(raw);
  const written = asStringArray(rec["written"]);
  const unchanged = asStringArray(rec["unchanged"]);
  const folder = typeof rec["folder"] === "string" ? rec["folder"] : ".engram-team";
  const committed = typeof rec["committed"] === "string" ? rec["committed"].slice(0, 10) : undefined;
  if (written.length === 0) {
    return unchanged.length > 0
      ? `Engram: nothing new to share; ${plural(unchanged.length, "memory", "memories")} already in ${folder}/.`
      : "Engram: nothing to share yet. Confirm a memory first, then share.";
  }
  const next = committed ? `committed as ${committed}; push it with your code` : `commit ${folder}/ and push it`;
  return `Engram: shared ${plural(written.length, "memory", "memories")} in ${folder}/ (${next}).`;
}

/** The message after "Sync Team Memories" (engram.syncTeam). */
export function syncText(raw: unknown): string {
  const rec = asRecord(raw);
  const skipped = asStringArray(rec["skipped"]);
  const parts = [
    `${asNumber(rec["added"])} added`,
    `${asNumber(rec["updated"])} updated`,
    `${asNumber(rec["retired"])} retired`,
  ];
  const tail = skipped.length > 0 ? `; ${plural(skipped.length, "file")} skipped (see the log)` : "";
  return `Engram team memories: ${parts.join(", ")}${tail}.`;
}

/** The message after "Merge Duplicates and Find Contradictions" (engram.consolidate). */
export function consolidateText(raw: unknown): string {
  const rec = asRecord(raw);
  const merged = asStringArray(rec["merged"]).length;
  const conflicts = asStringArray(rec["conflicts"]).length;
  const review = conflicts > 0 ? " They are in the review queue." : "";
  return `Engram: merged ${plural(merged, "near-duplicate")}, found ${plural(conflicts, "contradiction")}.${review}`;
}

/** The message after teaching a memory (engram.remember): what was kept, merged or redacted. */
export function rememberedText(raw: unknown): string {
  const rec = asRecord(raw);
  const memory = parseMemory(rec["memory"] !== undefined ? { memory: rec["memory"] } : raw);
  const id = memory?.id ?? (typeof rec["id"] === "string" ? rec["id"] : "?");
  const text = (memory?.content ?? "").split("\n")[0].slice(0, 80);
  const head = rec["merged"] === true ? `Engram merged it into ${id}` : `Engram remembered ${id}`;
  const redacted = asStringArray(rec["redactions"]);
  const conflicts = asStringArray(rec["conflicts"]);
  const notes = [
    redacted.length > 0 ? `redacted: ${redacted.join(", ")} (rotate it)` : "",
    conflicts.length > 0 ? `contradicts ${plural(conflicts.length, "memory", "memories")}: in the review queue` : "",
  ].filter(Boolean);
  return `${head}${text ? `: "${text}"` : ""}${notes.length ? ` (${notes.join("; ")})` : ""}`;
}

/**
 * Text for a notification. VS Code draws `[label](target)` in one as a link and follows it on
 * a click, `command:` targets included (a command with arguments of the link's choosing);
 * a repository's file names and settings reach Engram's messages, so the link form is
 * broken: `](` becomes `] (` (docs/security.md, "Origin is always visible").
 */
export function plainText(text: string): string {
  return text.replace(/\]\s*\(/g, "] (");
}

/**
 * The memory an Engram diagnostic shows: its message ends with the line
 * `m-… · user_taught · today · …` (server/engram/lsp/diagnostics.py, `diagnostic_message`).
 */
export function diagnosticMemoryId(message: string): string | undefined {
  return /^(m-[0-9a-f]+) · /m.exec(message)?.[1];
}

/**
 * Engram's hover markdown without the memories `shown` already names. VS Code draws the
 * diagnostics under the cursor in the same hover, so each memory read twice there: once as
 * the Problems text, once as Engram's section (stop 32's and 33's walks). The server's
 * sections are joined by a rule (`---`, server/engram/lsp/hover.py; a memory's own text is
 * escaped, so it never holds one) and each memory's ends with its citation
 * `` `[Memory m-…: …]` ``. Undefined when nothing is left.
 */
export function hoverWithout(markdown: string, shown: ReadonlySet<string>): string | undefined {
  if (shown.size === 0) {
    return markdown;
  }
  const sections = markdown.split("\n\n---\n\n");
  const kept = sections.filter((section) => {
    const cited = /`\[Memory (m-[0-9a-f]+):/.exec(section)?.[1];
    return cited === undefined || !shown.has(cited);
  });
  return kept.length > 0 ? kept.join("\n\n---\n\n") : undefined;
}

/**
 * The Memory view's structure, computed from server data without touching `vscode`
 * (so it is unit-tested): health, browse by type, browse by module, review queue.
 */

import { MemorySummary, Stats, moduleOf } from "./model";

export interface TreeNode {
  label: string;
  description?: string;
  tooltip?: string;
  kind: "group" | "memory" | "info";
  memory?: MemorySummary;
  children?: TreeNode[];
  /** The command a click on the node runs (an `engram.ui.*` id). */
  command?: string;
}

/**
 * The Memory view of a folder nobody set Engram up in: the server leaves it out, so there
 * is nothing to list; it said "Health: Server not ready", as if Engram were starting.
 */
export function notSetUpTree(folderName: string): TreeNode[] {
  return [
    {
      label: `Engram is not set up in ${folderName}`,
      description: "click to set it up",
      tooltip: "No .engram/ nor .engram-team/ here: nothing is written and no engine runs for it. Click (or run Engram: Set Up This Folder) to set it up.",
      kind: "info",
      command: "engram.ui.start",
    },
  ];
}

function memoryNode(memory: MemorySummary): TreeNode {
  const flags = [memory.needsReview ? "needs review" : "", memory.stale ? "stale" : ""].filter(Boolean).join(", ");
  return {
    label: memory.content.split("\n")[0].slice(0, 80),
    description: `${memory.type} · ${memory.confidence.toFixed(2)}${flags ? " · " + flags : ""}`,
    tooltip: `${memory.citation}\nsource: ${memory.source}\nfiles: ${memory.files.join(", ") || "—"}\n\n${memory.content}`,
    kind: "memory",
    memory,
  };
}

function groupBy(memories: MemorySummary[], key: (m: MemorySummary) => string[]): TreeNode[] {
  const groups = new Map<string, MemorySummary[]>();
  for (const memory of memories) {
    for (const k of key(memory)) {
      const list = groups.get(k) ?? [];
      list.push(memory);
      groups.set(k, list);
    }
  }
  return [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([label, items]) => ({
      label,
      description: String(items.length),
      kind: "group" as const,
      children: items.map(memoryNode),
    }));
}

export function buildTree(stats: Stats | undefined, memories: MemorySummary[], review: MemorySummary[]): TreeNode[] {
  const health: TreeNode = {
    label: "Health",
    kind: "group",
    children: stats
      ? [
          { label: "Active", description: String(stats.active), kind: "info" },
          { label: "Needs review", description: String(stats.needsReview), kind: "info" },
          { label: "Stale", description: String(stats.stale), kind: "info" },
          { label: "Retired", description: String(stats.retired), tooltip: "flagged, deprecated, retired or forgotten: never shown", kind: "info" },
        ]
      : [{ label: "Server not ready", kind: "info" }],
  };
  return [
    health,
    { label: "By type", kind: "group", children: groupBy(memories, (m) => [m.type]) },
    {
      label: "By module",
      kind: "group",
      children: groupBy(memories, (m) => (m.files.length ? [...new Set(m.files.map(moduleOf))] : ["(global)"])),
    },
    {
      label: "Review queue",
      description: String(review.length),
      kind: "group",
      children: review.map(memoryNode),
    },
  ];
}

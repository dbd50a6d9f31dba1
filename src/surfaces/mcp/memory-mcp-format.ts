import type { Memory } from '../../memory/memory.js';
import type { RankedMemory } from '../../recall/ranking.js';
import { supersededNote } from '../../recall/memory-context-format.js';

/** The fields of a memory a model needs to choose among many, without its content. */
export function memorySummary(memory: Memory): Record<string, unknown> {
  return {
    id: memory.id,
    scope: memory.scope,
    type: memory.type,
    name: memory.name,
    description: memory.description,
    importance: memory.importance,
    updatedAt: memory.updatedAt,
    archived: memory.archived,
    invalidAt: memory.invalidAt,
  };
}

/** One memory in full, as Markdown a model reads easily. */
export function formatMemory(memory: Memory): string {
  return [
    `## ${memory.name} (\`${memory.id}\`)`,
    metadataLine(memory),
    `> ${memory.description}`,
    '',
    memory.content,
  ].join('\n');
}

/** One list line: id, name, type, scope and description. */
export function formatMemoryLine(memory: Memory): string {
  const flags = [memory.archived ? 'archived' : '', memory.invalidAt ? 'invalid' : ''].filter(Boolean).join(', ');
  return `- \`${memory.id}\` **${memory.name}** (${memory.type}, ${memory.scope}${flags ? `, ${flags}` : ''}) — ${memory.description}`;
}

/** One search hit with its rank and score. */
export function formatRankedMemory(entry: RankedMemory, rank: number): string {
  const { memory, parts } = entry;
  return [
    `### ${rank}. ${memory.name} (\`${memory.id}\`) — score ${parts.score.toFixed(2)}`,
    metadataLine(memory),
    ...(parts.signals?.disagrees ? [`Note: ${supersededNote(`\`${parts.signals.disagrees.newer}\``)}.`] : []),
    '',
    memory.content,
    '',
  ].join('\n');
}

function metadataLine(memory: Memory): string {
  const parts = [
    `type: ${memory.type}`,
    `scope: ${memory.scope}`,
    `importance: ${memory.importance}`,
    `updated: ${memory.updatedAt.slice(0, 10)}`,
  ];
  if (memory.archived) parts.push('archived');
  if (memory.invalidAt)
    parts.push(
      `invalid since ${memory.invalidAt.slice(0, 10)}${memory.supersededBy ? ` (superseded by \`${memory.supersededBy}\`)` : ''}`,
    );
  return parts.join(' · ');
}

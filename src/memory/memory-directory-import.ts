import type { Memory, MemoryPatch, NewMemory } from './memory.js';

/**
 * How a memory directory (Claude Code's auto memory, or any folder of topic files) is imported so
 * that importing it again adds nothing: its topic files carry no engram id, so each is matched
 * with the memories already in its scope, by content and by name. Pure: the caller lists the
 * memories there and applies the plan.
 */

/** One topic file read for import. */
export interface DirectoryImportFile {
  /** The file's name inside the directory, for notes. */
  file: string;
  memory: NewMemory;
  /** The file carried its own engram id (an engram export): it goes through the id-based import as before. */
  hasOwnId: boolean;
}

export interface DirectoryImportPlan {
  /** Memories no existing one matches: to create. */
  create: NewMemory[];
  /** Existing memories the directory changed: an edited file (same name), or a renamed one (same content). */
  update: Array<{ id: string; patch: MemoryPatch; file: string; why: 'edited' | 'renamed' }>;
  /** Files whose memory is already there as it is. */
  unchanged: string[];
  /** What the plan decided that the user may want to know (a file imported once for two names). */
  notes: string[];
}

/**
 * Matches each file without an id to the existing memories of its scope: the same content (spaces
 * and case aside) is the same memory (a renamed file renames it, unless a file of the old name is
 * still there); else the same name is the same memory, edited (its content, description and type
 * are updated); else it is new. A file whose content another file of this import already has is
 * imported once. Each existing memory is matched at most once.
 */
export function planDirectoryImport(
  files: readonly DirectoryImportFile[],
  existing: readonly Memory[],
): DirectoryImportPlan {
  const plan: DirectoryImportPlan = { create: [], update: [], unchanged: [], notes: [] };
  const byContent = new Map<string, Memory>();
  const byName = new Map<string, Memory>();
  // The newest memory wins a key several share (existing duplicates are dedupe's business).
  for (const memory of [...existing].sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : 1))) {
    byContent.set(contentKey(memory.scope, memory.content), memory);
    if (memory.name) byName.set(nameKey(memory.scope, memory.name), memory);
  }
  const namesInImport = new Set(
    files.flatMap((entry) => (entry.memory.name ? [nameKey(entry.memory.scope, entry.memory.name)] : [])),
  );
  const claimed = new Set<string>();
  const contentSeen = new Map<string, string>();
  for (const entry of files) {
    const { memory, file } = entry;
    if (entry.hasOwnId) {
      plan.create.push(memory);
      continue;
    }
    const content = contentKey(memory.scope, memory.content);
    const earlier = contentSeen.get(content);
    if (earlier !== undefined) {
      plan.notes.push(`${file} has the same content as ${earlier}: imported once.`);
      plan.unchanged.push(file);
      continue;
    }
    contentSeen.set(content, file);
    const sameContent = byContent.get(content);
    if (sameContent) {
      if (claimed.has(sameContent.id)) {
        plan.unchanged.push(file);
        continue;
      }
      claimed.add(sameContent.id);
      const oldNameStays = sameContent.name ? namesInImport.has(nameKey(sameContent.scope, sameContent.name)) : true;
      const renamed = memory.name !== undefined && memory.name !== sameContent.name && !oldNameStays;
      const patch = { ...(renamed && { name: memory.name }), ...fieldChanges(memory, sameContent) };
      if (Object.keys(patch).length > 0)
        plan.update.push({ id: sameContent.id, patch, file, why: renamed ? 'renamed' : 'edited' });
      else plan.unchanged.push(file);
      continue;
    }
    const sameName = memory.name ? byName.get(nameKey(memory.scope, memory.name)) : undefined;
    if (sameName && !claimed.has(sameName.id)) {
      claimed.add(sameName.id);
      plan.update.push({
        id: sameName.id,
        patch: { content: memory.content, ...fieldChanges(memory, sameName) },
        file,
        why: 'edited',
      });
      continue;
    }
    plan.create.push(memory);
  }
  return plan;
}

/** The description and type a file states that differ from the memory's. */
function fieldChanges(file: NewMemory, memory: Memory): MemoryPatch {
  return {
    ...(file.description !== undefined && file.description !== memory.description && { description: file.description }),
    ...(file.type !== undefined && file.type !== memory.type && { type: file.type }),
  };
}

function contentKey(scope: string, content: string): string {
  return `${scope}\u0000${content.replace(/\s+/g, ' ').trim().toLowerCase()}`;
}

function nameKey(scope: string, name: string): string {
  return `${scope}\u0000${name.trim().toLowerCase()}`;
}

import type { ToolDefinition } from './language-model.js';

/** The tool's name: Anthropic requires exactly `memory` for the native tool. */
export const MEMORY_TOOL_NAME = 'memory';

/** The commands of Anthropic's memory tool protocol (`memory_20250818`). */
export const MEMORY_TOOL_COMMANDS = ['view', 'create', 'str_replace', 'insert', 'delete', 'rename'] as const;
export type MemoryToolCommandName = (typeof MEMORY_TOOL_COMMANDS)[number];

/** The entry an Anthropic Messages request lists in `tools` for the native memory tool (no input schema). */
export const ANTHROPIC_MEMORY_TOOL: Readonly<{ type: 'memory_20250818'; name: 'memory' }> = Object.freeze({
  type: 'memory_20250818',
  name: 'memory',
});

/** One memory-tool call, checked: the shape of Anthropic's `BetaMemoryTool20250818Command`. */
export type MemoryToolCommand =
  | { command: 'view'; path: string; view_range?: [number, number] }
  | { command: 'create'; path: string; file_text: string }
  | { command: 'str_replace'; path: string; old_str: string; new_str?: string }
  /** `insert_line` is checked against the file's length by the command itself, hence unknown here. */
  | { command: 'insert'; path: string; insert_line: unknown; insert_text: string }
  | { command: 'delete'; path: string }
  | { command: 'rename'; old_path: string; new_path: string };

const DESCRIPTION =
  'Long-term memory kept across conversations, shown as Markdown files with YAML frontmatter under /memories. ' +
  'Always view /memories first to see what is already remembered, and update an existing file rather than adding a near-duplicate. ' +
  'Commands: view (a folder listing, or a file with line numbers; view_range [start, end] reads part of a file, end -1 = to the end), ' +
  'create (path, file_text: creates or overwrites one memory; optional frontmatter: description, metadata.type user|feedback|project|reference|procedure, metadata.importance 0..1), ' +
  'str_replace (path, old_str that occurs exactly once, new_str; omit new_str to delete), insert (path, insert_line: insert after this line, 0 = top; insert_text), ' +
  'delete (path: forgets the memory; it stays in history), rename (old_path, new_path: renames a memory within its folder). ' +
  'One fact per file, written to read on its own; never store secrets. MEMORY.md files are generated indexes and read-only.';

// Definitions this module made, with the layout sentence they carry, so a model adapter can swap
// in the provider's native tool entry and still tell the model where each scope's files are.
const madeHere = new WeakMap<ToolDefinition, string>();

/**
 * The memory tool as a `ToolDefinition` with a JSON Schema, for models without a native memory
 * tool. `layout` (see `MemoryTool.instructions`) is appended to say where each scope's files are.
 */
export function memoryToolDefinition(layout?: string): ToolDefinition {
  const definition: ToolDefinition = {
    name: MEMORY_TOOL_NAME,
    description: layout ? `${DESCRIPTION} ${layout}` : DESCRIPTION,
    inputSchema: {
      type: 'object',
      properties: {
        command: { type: 'string', enum: [...MEMORY_TOOL_COMMANDS], description: 'The operation to run.' },
        path: {
          type: 'string',
          description:
            'For view, create, str_replace, insert and delete: a path under /memories, e.g. /memories/user-preferences.md.',
        },
        view_range: {
          type: 'array',
          items: { type: 'integer' },
          minItems: 2,
          maxItems: 2,
          description: 'For view of a file: [first line, last line], 1-based; last -1 reads to the end.',
        },
        file_text: {
          type: 'string',
          description: 'For create: the whole file (optional frontmatter, then the memory in Markdown).',
        },
        old_str: { type: 'string', description: 'For str_replace: text that occurs exactly once in the file.' },
        new_str: { type: 'string', description: 'For str_replace: the replacement; omit to delete old_str.' },
        insert_line: {
          type: 'integer',
          minimum: 0,
          description: 'For insert: the line after which to insert; 0 inserts at the top.',
        },
        insert_text: { type: 'string', description: 'For insert: the text to insert.' },
        old_path: { type: 'string', description: 'For rename: the file to rename.' },
        new_path: { type: 'string', description: 'For rename: its new path, in the same folder.' },
      },
      required: ['command'],
      additionalProperties: false,
    },
  };
  madeHere.set(definition, layout ?? '');
  return definition;
}

/**
 * The Anthropic native tool entry standing for a definition, when it is the memory tool (made by
 * `memoryToolDefinition`); undefined for any other tool. The Anthropic adapter sends this entry
 * instead of the JSON Schema, and the API then adds its own memory instructions to the prompt.
 */
export function anthropicNativeTool(definition: ToolDefinition): typeof ANTHROPIC_MEMORY_TOOL | undefined {
  return madeHere.has(definition) ? ANTHROPIC_MEMORY_TOOL : undefined;
}

/**
 * The layout sentence a memory-tool definition carries in its description (where each scope's
 * files are; see `MemoryTool.instructions`), or undefined. The native entry has no description,
 * so an adapter that sends it puts this sentence in the system prompt instead.
 */
export function memoryToolLayoutText(definition: ToolDefinition): string | undefined {
  const layout = madeHere.get(definition);
  return layout === undefined || layout === '' ? undefined : layout;
}

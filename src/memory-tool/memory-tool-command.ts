import {
  MEMORY_TOOL_COMMANDS,
  type MemoryToolCommand,
  type MemoryToolCommandName,
} from '../contracts/memory-tool-definition.js';
import { memoryToolError } from './memory-tool-paths.js';

/** Checks the input of one call: an object with a known command and its parameters of the right types. */
export function parseMemoryToolCommand(input: unknown, maxTextBytes: number): MemoryToolCommand {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw memoryToolError('INVALID_INPUT', 'Error: The memory tool takes an object with a "command" field.');
  }
  const fields = input as Record<string, unknown>;
  const command = fields.command;
  if (typeof command !== 'string' || !(MEMORY_TOOL_COMMANDS as readonly string[]).includes(command)) {
    const shown = typeof command === 'string' ? JSON.stringify(command.slice(0, 40)) : String(command);
    throw memoryToolError(
      'INVALID_INPUT',
      `Error: Unknown command ${shown}: use one of ${MEMORY_TOOL_COMMANDS.join(', ')}.`,
    );
  }
  const text = (name: string, optional = false): string | undefined => {
    const value = fields[name];
    if (value === undefined || value === null) {
      if (optional) return undefined;
      throw memoryToolError(
        'INVALID_INPUT',
        `Error: Missing required parameter \`${name}\` for command \`${command}\`.`,
      );
    }
    if (typeof value !== 'string')
      throw memoryToolError('INVALID_INPUT', `Error: Parameter \`${name}\` must be a string.`);
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > maxTextBytes) {
      throw memoryToolError(
        'PAYLOAD_TOO_LARGE',
        `Error: Parameter \`${name}\` is ${bytes} bytes; a memory file holds at most ${maxTextBytes} bytes. Keep one fact per file.`,
      );
    }
    return value;
  };
  switch (command as MemoryToolCommandName) {
    case 'view': {
      const viewRange = fields.view_range;
      return {
        command: 'view',
        path: text('path')!,
        ...(viewRange !== undefined && viewRange !== null && { view_range: parseViewRange(viewRange) }),
      };
    }
    case 'create':
      return { command: 'create', path: text('path')!, file_text: text('file_text')! };
    case 'str_replace': {
      const newString = text('new_str', true);
      return {
        command: 'str_replace',
        path: text('path')!,
        old_str: text('old_str')!,
        ...(newString !== undefined && { new_str: newString }),
      };
    }
    case 'insert':
      if (fields.insert_line === undefined || fields.insert_line === null) {
        throw memoryToolError('INVALID_INPUT', 'Error: Missing required parameter `insert_line` for command `insert`.');
      }
      return {
        command: 'insert',
        path: text('path')!,
        insert_line: lenientInteger(fields.insert_line),
        insert_text: text('insert_text')!,
      };
    case 'delete':
      return { command: 'delete', path: text('path')! };
    case 'rename':
      return { command: 'rename', old_path: text('old_path')!, new_path: text('new_path')! };
  }
}

function parseViewRange(value: unknown): [number, number] {
  const range = Array.isArray(value) ? value.map(lenientInteger) : undefined;
  if (
    !range ||
    range.length !== 2 ||
    !range.every((item): item is number => typeof item === 'number' && Number.isSafeInteger(item))
  ) {
    throw memoryToolError(
      'INVALID_INPUT',
      `Error: Invalid \`view_range\` parameter: ${shortJson(value)}. It should be a list of two integers [start, end]; end -1 reads to the end of the file.`,
    );
  }
  return [range[0]!, range[1]!];
}

// Models sometimes send numbers as strings ("3"); anything else is passed on for the command to refuse.
function lenientInteger(value: unknown): unknown {
  return typeof value === 'string' && /^-?\d{1,9}$/.test(value.trim()) ? Number(value.trim()) : value;
}

function shortJson(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

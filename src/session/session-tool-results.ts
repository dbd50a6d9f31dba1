import { EngramError, isEngramError } from '../kernel/errors.js';
import type { ToolResultBlock, ToolUseBlock } from '../contracts/language-model.js';
import { cutToBytes } from './session-input.js';
import type { ToolResultInput } from './session-options.js';
import type { ToolResultStore } from './tool-result-store.js';

/** The tool_result blocks of one message, and the results that went to disk. */
export interface PreparedToolResults {
  blocks: ToolResultBlock[];
  persisted: Array<{ toolUseId: string; path: string; bytes: number }>;
}

/**
 * Layer 1 for one message of tool results, in the tool_use order: a result over the threshold is
 * stored whole and replaced by its frozen preview (or, with no storage, cut at the threshold). Every
 * result is stored before the caller adds the message, so a failing disk changes nothing; a Node
 * error of the disk becomes STORE_ERROR naming the call (EngramErrors, e.g. CONFLICT, pass as they are).
 */
export async function prepareToolResults(options: {
  pending: readonly ToolUseBlock[];
  results: ReadonlyMap<string, ToolResultInput>;
  storage: ToolResultStore | undefined;
  thresholdBytes: number;
}): Promise<PreparedToolResults> {
  const prepared: PreparedToolResults = { blocks: [], persisted: [] };
  for (const use of options.pending) {
    const result = options.results.get(use.id)!;
    let content = result.content;
    if (options.storage) {
      const stored = await store(options.storage, use.id, result.content);
      content = stored.content;
      if (stored.persisted) prepared.persisted.push({ toolUseId: use.id, ...stored.persisted });
    } else if (Buffer.byteLength(content) > options.thresholdBytes) {
      content = cutToBytes(content, options.thresholdBytes);
    }
    prepared.blocks.push({
      type: 'tool_result',
      toolUseId: use.id,
      content,
      ...(result.isError === true && { isError: true }),
    });
  }
  return prepared;
}

async function store(
  storage: ToolResultStore,
  toolUseId: string,
  content: string,
): ReturnType<ToolResultStore['store']> {
  try {
    return await storage.store(toolUseId, content);
  } catch (error) {
    if (isEngramError(error)) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    throw new EngramError(
      'STORE_ERROR',
      `The tool result of ${toolUseId} could not be stored in ${storage.directory} (${code}); nothing was added. Check that the folder is writable.`,
      { cause: error },
    );
  }
}

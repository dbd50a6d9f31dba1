import { Extractor, type ExtractorOptions } from '../extraction/extractor.js';
import { openSandbox } from '../sandbox/node/sandbox.js';

/**
 * An Extractor whose agent-mode helper reads the project through the sandbox (read, list, search,
 * read-only shell), as every surface on Node wants it.
 * @example
 * const extractor = createExtractor({ engram, model, projectRoot: process.cwd() });
 */
export function createExtractor(options: ExtractorOptions): Extractor {
  return new Extractor({ openSandbox, ...options });
}

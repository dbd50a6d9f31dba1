import { z } from 'zod';
import { MEMORY_TYPES } from '../../../memory/memory.js';

/** Input fields more than one memory tool takes. */
export const memoryType = z.enum(MEMORY_TYPES);

export const memoryId = z
  .string()
  .min(1)
  .max(200)
  .describe('The memory id, as returned by memory_save, memory_search or memory_list.');

export const scopeField = z.string().max(400);

import { isEngramError } from '../kernel/errors.js';
import type { MemoryLimits } from '../memory/memory.js';
import type { Settings } from '../kernel/settings.js';
import type { LanguageModel, LanguageModelUsage } from '../contracts/language-model.js';
import {
  cheapExtractionRequest,
  cheapExtractionUserMessage,
  formatConversation,
  splitIntoTurnGroups,
  type KnownMemoryLine,
} from './cheap-extraction-prompt.js';
import type { ConversationMessage } from '../contracts/conversation.js';
import {
  parseExtractionOutput,
  type DroppedItem,
  type ExtractedCandidate,
  type WriteScopes,
} from './extraction-output.js';
import type { KnownTexts } from './recalled-memories.js';
import { addUsage } from './extraction-report.js';
import { redactModelAnswer } from './model-answer-redaction.js';

/** Everything one cheap extraction needs. */
export interface CheapExtractionInput {
  model: LanguageModel;
  settings: Pick<Settings, 'extraction' | 'dedupe'>;
  limits: MemoryLimits;
  messages: readonly ConversationMessage[];
  /** Shown to the model as already known. */
  knownLines: readonly KnownMemoryLine[];
  /** Compared with the answers: repeats are dropped. */
  known: KnownTexts;
  scopes: WriteScopes;
  /** The day the conversation is read (YYYY-MM-DD), for absolute dates. */
  today: string;
  /** Answers already given for groups (by the group's last message id): a retry reuses them instead of asking again. */
  answers?: Readonly<Record<string, string>>;
  /** Told after each group of turns is read (answered or reused): messages read so far of all. */
  onRead?: (progress: { messagesRead: number; messages: number }) => void;
  /** Called with each new answer before it is used, so the caller can keep it. */
  onAnswer?: (groupLastId: string, answer: string) => Promise<void>;
  signal?: AbortSignal;
}

/** What cheap mode produced. */
export interface CheapExtractionResult {
  /** Memories to save, each with the last message of the turns it was read from. */
  candidates: Array<ExtractedCandidate & { turnId: string }>;
  dropped: DroppedItem[];
  repairs: string[];
  modelCalls: number;
  /** Answers reused from `answers` (no call made for those turns). */
  reusedAnswers: number;
  usage: Required<LanguageModelUsage>;
  /** Bytes of the system prompt and of everything sent, for the cache share. */
  sentBytes: { system: number; total: number };
}

/**
 * Cheap mode (claude-mem): one call per group of turns (one group unless the span is larger than
 * `extraction.maxInputTokens`), each with the fixed cached system prompt and a strict JSON answer,
 * at most `extraction.maxMemoriesPerTurn` memories a group. A model error rejects (the job retries);
 * an answer that is not what was asked for is repaired or dropped, never fatal.
 */
export async function extractCheap(input: CheapExtractionInput): Promise<CheapExtractionResult> {
  const { settings } = input;
  const result: CheapExtractionResult = {
    candidates: [],
    dropped: [],
    repairs: [],
    modelCalls: 0,
    reusedAnswers: 0,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
    sentBytes: { system: 0, total: 0 },
  };
  const groups = splitIntoTurnGroups(input.messages, settings.extraction.maxInputTokens);
  const messages = groups.reduce((sum, group) => sum + group.length, 0);
  let messagesRead = 0;
  for (const group of groups) {
    const conversation = formatConversation(group);
    messagesRead += group.length;
    if (conversation.trim() === '') {
      input.onRead?.({ messagesRead, messages });
      continue;
    }
    const lastId = group.at(-1)!.id;
    let answer = input.answers?.[lastId];
    if (answer !== undefined) result.reusedAnswers += 1;
    else {
      const request = cheapExtractionRequest({
        maxMemories: settings.extraction.maxMemoriesPerTurn,
        maxOutputTokens: settings.extraction.maxOutputTokens,
        timeoutMs: settings.extraction.timeoutMs,
        userMessage: cheapExtractionUserMessage({
          today: input.today,
          known: input.knownLines,
          knownMaxTokens: settings.extraction.knownMaxTokens,
          conversation,
        }),
        ...(input.signal && { signal: input.signal }),
      });
      const system = request.system as ReadonlyArray<{ text: string }>;
      const systemBytes = Buffer.byteLength(system.map((block) => block.text).join(''), 'utf8');
      result.sentBytes.system += systemBytes;
      result.sentBytes.total += systemBytes + Buffer.byteLength(request.messages[0]!.content as string, 'utf8');
      result.modelCalls += 1;
      // Parsed first, then each field redacted: kept with the job until it is done, so what the model
      // echoed of a secret is not stored even there, and the JSON stays whole.
      const redacted = redactModelAnswer(await ask(input.model, request, result));
      answer = redacted.text;
      if (redacted.reading !== undefined && redacted.reading !== 'as-is') result.repairs.push(redacted.reading);
      await input.onAnswer?.(lastId, answer);
    }
    const parsed = parseExtractionOutput(answer, {
      scopes: input.scopes,
      maxMemories: settings.extraction.maxMemoriesPerTurn,
      limits: input.limits,
      known: input.known,
      threshold: settings.dedupe.lexicalThreshold,
    });
    result.candidates.push(...parsed.candidates.map((candidate) => ({ ...candidate, turnId: lastId })));
    result.dropped.push(...parsed.dropped);
    result.repairs.push(...parsed.repairs);
    input.onRead?.({ messagesRead, messages });
  }
  return result;
}

/** Sends one request; an answer the provider could not read as JSON is still returned as text, for repair. */
async function ask(
  model: LanguageModel,
  request: Parameters<LanguageModel['generate']>[0],
  result: CheapExtractionResult,
): Promise<string> {
  try {
    const response = await model.generate(request);
    addUsage(result.usage, response.usage);
    return typeof response.text === 'string' ? response.text : '';
  } catch (error) {
    // The provider refused its own reading of the JSON; the raw text is ours to repair or drop.
    const text = isEngramError(error) && error.code === 'MODEL_OUTPUT_INVALID' ? error.details?.text : undefined;
    if (typeof text === 'string') return text;
    throw error;
  }
}

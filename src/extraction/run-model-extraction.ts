import { isEngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import type { ConversationMessage } from '../contracts/conversation.js';
import { extractWithAgent, type AgentTool } from './agent-extraction.js';
import { agentManifest } from './agent-tools.js';
import { extractCheap } from './cheap-extraction.js';
import type { KnownMemoryLine } from './cheap-extraction-prompt.js';
import type { ExtractionJobPayload, TurnProgress } from './extraction-job-payload.js';
import type { WriteScopes } from './extraction-output.js';
import { addUsage, type ExtractionRunReport, type WrittenMemory } from './extraction-report.js';
import type { JobRun } from './extraction-run-dependencies.js';
import { saveProgress } from './job-coverage.js';
import { isMemoryWriteCall } from './memory-write-detection.js';
import { profileKnown } from './recalled-memories.js';

/** Recorded in history for memories the model extracted. */
export const EXTRACTION_ACTOR = 'extraction';

/** Cheap mode: the model reads the span in groups and answers candidates; each is saved through dedupe. */
export async function runCheap(
  dependencies: JobRun,
  payload: ExtractionJobPayload,
  span: readonly ConversationMessage[],
  known: ReadonlyArray<{ id: string; content?: string; name?: string; type?: string }>,
  scopes: WriteScopes,
  state: TurnProgress,
  report: ExtractionRunReport,
): Promise<void> {
  const { engram } = dependencies;
  const result = await extractCheap({
    model: dependencies.model!,
    settings: engram.settings,
    limits: engram.settings.memory,
    messages: span,
    knownLines: knownLines(known),
    known: profileKnown(known),
    scopes,
    today: dependencies.now().toISOString().slice(0, 10),
    answers: state.answers ?? {},
    ...(dependencies.onProgress && {
      onRead: (progress: { messagesRead: number; messages: number }) =>
        dependencies.onProgress!({ jobId: report.jobId, ...progress }),
    }),
    onAnswer: async (groupLastId, answer) => {
      state.answers = { ...state.answers, [groupLastId]: answer };
      await saveProgress(dependencies.store.checkpoints, report.key, state, report);
    },
    ...(dependencies.signal && { signal: dependencies.signal }),
  });
  report.modelCalls += result.modelCalls;
  report.reusedAnswers += result.reusedAnswers;
  addUsage(report.usage, result.usage);
  report.sentBytes.system += result.sentBytes.system;
  report.sentBytes.total += result.sentBytes.total;
  report.dropped.push(...result.dropped);
  report.repairs.push(
    ...result.repairs,
    ...result.candidates.flatMap((candidate) => candidate.repairs.map((repair) => `${candidate.name}: ${repair}`)),
  );
  for (const candidate of result.candidates) {
    try {
      const saved = await engram.save(
        {
          scope: candidate.scope,
          type: candidate.type,
          name: candidate.name,
          description: candidate.description,
          content: candidate.content,
          importance: candidate.importance,
          source: { sessionId: payload.sessionId, turnId: candidate.turnId, origin: EXTRACTION_ACTOR },
        },
        { actor: EXTRACTION_ACTOR },
      );
      report.written.push(describe(saved.memory, saved.action, candidate.turnId, 'extraction'));
    } catch (error) {
      // The store refused this one memory (its checks): drop it, keep the others.
      if (!isEngramError(error) || !['INVALID_INPUT', 'PAYLOAD_TOO_LARGE', 'INVALID_SCOPE'].includes(error.code))
        throw error;
      report.dropped.push({
        reason: 'invalid',
        detail: error.message,
        name: candidate.name,
        excerpt: candidate.content.slice(0, 160),
      });
    }
  }
}

/** Agent mode: a helper with the memory tool and sandboxed tools writes memory itself. */
export async function runAgent(
  dependencies: JobRun,
  payload: ExtractionJobPayload,
  span: readonly ConversationMessage[],
  known: ReadonlyArray<{ id: string; content?: string; name?: string; type?: string }>,
  state: TurnProgress,
  report: ExtractionRunReport,
): Promise<void> {
  const { engram } = dependencies;
  if (!dependencies.agentTools)
    throw new Error('Agent-mode extraction needs agentTools (the memory tool and the sandboxed tools).');
  const source = { sessionId: payload.sessionId, turnId: span.at(-1)!.id, origin: 'extraction-agent' };
  const given = await dependencies.agentTools({
    engram,
    scopes: payload.scopes,
    source,
    ...(payload.projectRoot !== undefined && { projectRoot: payload.projectRoot }),
  });
  // The helper's first successful memory write is kept with the job before the helper goes on: a
  // retry after a later failure must not write again what it wrote.
  const tools = given.map((tool): AgentTool => ({
    definition: tool.definition,
    run: async (input, signal) => {
      const outcome = await tool.run(input, signal);
      if (!outcome.isError && !state.agentWrote && isMemoryWriteCall({ id: '', name: tool.definition.name, input })) {
        state.agentWrote = true;
        await saveProgress(dependencies.store.checkpoints, report.key, state, report);
      }
      return outcome;
    },
  }));
  const manifest = await agentManifest({ engram, scopes: payload.scopes, max: engram.settings.extraction.manifestMax });
  const result = await extractWithAgent({
    model: dependencies.model!,
    settings: engram.settings,
    tools,
    manifest,
    messages: span,
    knownLines: knownLines(known),
    today: dependencies.now().toISOString().slice(0, 10),
    ...(dependencies.signal && { signal: dependencies.signal }),
  });
  report.modelCalls += result.modelCalls;
  addUsage(report.usage, result.usage);
  report.agent = { toolCalls: result.toolCalls, stoppedBy: result.stoppedBy };
  if (result.stoppedBy === 'turn-cap')
    report.warnings.push(
      `the helper was stopped after ${engram.settings.extraction.agentMaxTurns} turns (extraction.agentMaxTurns)`,
    );
}

function knownLines(known: ReadonlyArray<{ content?: string; name?: string; type?: string }>): KnownMemoryLine[] {
  return known
    .filter((memory) => typeof memory.content === 'string')
    .map((memory) => ({
      content: memory.content!,
      ...(memory.name && { name: memory.name }),
      ...(memory.type && { type: memory.type }),
    }));
}

function describe(
  memory: Memory,
  action: WrittenMemory['action'],
  turnId: string,
  origin: WrittenMemory['origin'],
): WrittenMemory {
  return { id: memory.id, name: memory.name, type: memory.type, scope: memory.scope, action, turnId, origin };
}

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The package's public surface, entry by entry: the run-time names (what `import * as m` holds) and
// the type names. A change to an entry must change this file too, so it is a deliberate diff. Run
// time names are read from the module itself; type names from the entry's `export type` lists.

interface PinnedEntry {
  /** The subpath in package.json "exports". */
  subpath: string;
  /** The entry's source, relative to the package root. */
  source: string;
  load: () => Promise<Record<string, unknown>>;
  values: readonly string[];
  types: readonly string[];
}

const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

const ENTRIES: readonly PinnedEntry[] = [
  {
    subpath: '.',
    source: 'src/index.ts',
    load: () => import('../src/index.js'),
    values: [
      'DEFAULT_SETTINGS',
      'Engram',
      'WARNING_CODES',
      'describeWarning',
      'isWarningCode',
      'EngramError',
      'MEMORY_TOOL_NAME',
      'MEMORY_TYPES',
      'MemoryTool',
      'MemoryTurn',
      'Session',
      'activeInstructions',
      'anthropicNativeTool',
      'formatInstructions',
      'isEngramError',
      'isScope',
      'makeScope',
      'messageText',
      'parseScope',
      'persistedSurfaced',
      'sessionStartMemories',
      'SESSION_START_MAX_MEMORIES',
      'queueDream',
      'redactSecrets',
      'runAgentTurn',
      'runDream',
      'stripPrivateContent',
      'todoWriteTool',
      'toolUses',
    ],
    types: [
      'AfterResponseOptions',
      'AgentTurnOptions',
      'AgentTurnResult',
      'BeforeRequestOptions',
      'ExtractionQueueResult',
      'MemoryAgentTurnOptions',
      'MemoryAgentTurnResult',
      'MemoryInjection',
      'MemoryTurnEngram',
      'MemoryTurnError',
      'MemoryTurnEvent',
      'MemoryTurnOptions',
      'NotesFiles',
      'AgingReport',
      'AppliedContextEdit',
      'ChangeAction',
      'ChangeContext',
      'ChangeOptions',
      'CheckpointRecord',
      'CompactBoundary',
      'CompactionResult',
      'Compactor',
      'ContentBlock',
      'ContextEditingRequest',
      'ContextUsage',
      'Conversation',
      'ConversationMessage',
      'ConversationRole',
      'ConversationToolCall',
      'ConversationToolResult',
      'DedupeChange',
      'DedupeGroupReport',
      'DedupeReport',
      'DreamDependencies',
      'DreamOptions',
      'DreamReport',
      'EmbedOptions',
      'Embedder',
      'EngramErrorCode',
      'PersistedSurfaced',
      'PersistedSurfacedOptions',
      'SessionStartOptions',
      'SessionStartEngram',
      'SupersedeChain',
      'SupersedeLink',
      'EngramJobs',
      'JobJson',
      'JobList',
      'JobListOptions',
      'JobRunOptions',
      'JobRunReport',
      'JobOutcomeJson',
      'JobCounts',
      'EngramChangeSets',
      'EngramDream',
      'ChangeSetDetail',
      'ChangeSetUndoJson',
      'DreamStatus',
      'EngramStorage',
      'ChangeSetRecord',
      'ChangeSetUndo',
      'EngramWarning',
      'WarningCode',
      'WarningDetails',
      'EngramOptions',
      'EngramSaveResult',
      'ExportPage',
      'FileReadCache',
      'FileReadStat',
      'ForgetOptions',
      'GatheredSession',
      'HistoryEntry',
      'ImportReport',
      'InstructionFile',
      'InstructionScope',
      'InstructionSet',
      'InvalidateOptions',
      'Job',
      'JobFilter',
      'JobState',
      'LanguageModel',
      'LanguageModelMessage',
      'LanguageModelRequest',
      'LanguageModelResponse',
      'LanguageModelResponseFormat',
      'LanguageModelRole',
      'LanguageModelStopReason',
      'LanguageModelUsage',
      'ListOptions',
      'Memory',
      'MemoryContext',
      'MemoryContextOptions',
      'MemoryFilter',
      'MemoryPatch',
      'MemorySource',
      'MemoryStore',
      'MemoryToolCommand',
      'MemoryToolCommandName',
      'MemoryToolOptions',
      'MemoryToolResult',
      'MemoryType',
      'NearDuplicate',
      'NewJob',
      'NewMemory',
      'PackedMemory',
      'ParsedScope',
      'PreCompactHook',
      'PrepareRequestOptions',
      'PurgeReport',
      'RankedMemory',
      'RecallOptions',
      'RecallResult',
      'RecalledMemory',
      'RedactionResult',
      'ReindexOptions',
      'ReindexReport',
      'RememberInput',
      'RestoreCounts',
      'RestoreReport',
      'ResumedSession',
      'SaveOptions',
      'SaveResult',
      'Scope',
      'ScopeKind',
      'ScoreParts',
      'SecretKind',
      'SessionEventListener',
      'SessionEventMap',
      'SessionEventName',
      'SessionMessage',
      'SessionMetadata',
      'SessionNotes',
      'SessionNotesConfig',
      'SessionOptions',
      'SessionStats',
      'SessionTool',
      'SessionToolContext',
      'SessionToolOutput',
      'SessionTranscriptEntry',
      'SessionTranscriptSink',
      'Settings',
      'StoreInfo',
      'StoreRecords',
      'StoreStats',
      'StripOptions',
      'StripResult',
      'SystemBlock',
      'TaskStatus',
      'TextBlock',
      'TextHit',
      'TextSearch',
      'TodoItem',
      'TodoStatus',
      'ToolChoice',
      'ToolDefinition',
      'ToolResultBlock',
      'ToolResultInput',
      'ToolResultStore',
      'ToolUseBlock',
      'UpdateOptions',
      'VectorCounts',
      'VectorEntry',
      'VectorHit',
      'VectorSearch',
      'VectorSpace',
      'WorkingMemory',
      'WorkingTask',
      'CheckpointFilter',
      'Checkpoints',
      'FinishedJobFilter',
      'JobQueue',
      'MemoryLedger',
      'RecordCopy',
      'StoreLocks',
      'StoreRole',
      'StoreRoles',
      'StoreWith',
      'VectorIndex',
    ],
  },
  {
    subpath: './node',
    source: 'src/node.ts',
    load: () => import('../src/node.js'),
    values: [
      'AnthropicLanguageModel',
      'ClaudeCodeLanguageModel',
      'ExtractionWorker',
      'Extractor',
      'OpenAiCompatibleEmbedder',
      'OpenAiCompatibleLanguageModel',
      'SqliteMemoryStore',
      'createEmbedder',
      'createExtractor',
      'createLanguageModel',
      'engramHome',
      'latestSession',
      'listSessions',
      'loadInstructions',
      'loadSettings',
      'memoryToolHandlers',
      'nodeNotesFiles',
      'openEngram',
      'openSandbox',
      'openSession',
      'openStore',
      'readTranscriptFile',
      'resolveProjectIdentity',
      'resumeSession',
      'runDreamWithFiles',
      'withMemory',
    ],
    types: [
      'AfterTurnOptions',
      'ClientMemoryHandle',
      'WithMemory',
      'WithMemoryEvent',
      'WithMemoryOptions',
      'AfterTurnResult',
      'AnthropicLanguageModelOptions',
      'ClaudeCodeLanguageModelOptions',
      'CreateEmbedderOptions',
      'CreateLanguageModelOptions',
      'DreamRunnerOptions',
      'ExtractionRunReport',
      'ExtractionWorkerOptions',
      'ExtractorOptions',
      'JobOutcome',
      'ListSessionsOptions',
      'LoadInstructionsOptions',
      'LoadSettingsOptions',
      'LoadedSettings',
      'OpenAiCompatibleEmbedderOptions',
      'OpenAiCompatibleLanguageModelOptions',
      'OpenEngramOptions',
      'OpenSessionOptions',
      'OpenStoreOptions',
      'OpenedEngram',
      'OpenedSession',
      'ParsedTranscript',
      'ProjectIdentity',
      'ReadTranscriptOptions',
      'Sandbox',
      'SandboxOptions',
      'SandboxToolResult',
      'SessionPaths',
      'SessionSummary',
      'SettingSource',
      'SettingSourceKind',
      'SqliteMemoryStoreOptions',
      'TranscriptFile',
      'TranscriptFormat',
      'WrittenMemory',
    ],
  },
  {
    subpath: './postgres',
    source: 'src/adapters/postgres/index.ts',
    load: () => import('../src/adapters/postgres/index.js'),
    values: ['PostgresMemoryStore'],
    types: ['PostgresMemoryStoreOptions'],
  },
  {
    subpath: './testing',
    source: 'src/testing/index.ts',
    load: () => import('../src/testing/index.js'),
    values: [
      'ScriptedLanguageModel',
      'embeddingsErrorBody',
      'embeddingsResponseBody',
      'hashedWordVector',
      'startAnthropicMessagesServer',
      'startEmbeddingsServer',
      'startGeminiGenerateContentServer',
      'startOpenAiChatCompletionsServer',
      'startOpenAiResponsesServer',
    ],
    types: [
      'AnthropicMessagesServerOptions',
      'EmbeddingsServer',
      'EmbeddingsServerOptions',
      'GeminiGenerateContentServerOptions',
      'LanguageModelServer',
      'ModelRequestSummary',
      'ModelServerReply',
      'ModelServerResponder',
      'OpenAiChatCompletionsServerOptions',
      'OpenAiResponsesServerOptions',
      'RecordedEmbeddingsRequest',
      'RecordedModelRequest',
      'ScriptedAnswer',
      'ScriptedEmbeddingsResponse',
      'ScriptedLanguageModelOptions',
      'ScriptedModelError',
      'ScriptedModelMessage',
      'ScriptedStreamBreak',
    ],
  },
  {
    subpath: './testing/suites',
    source: 'src/testing/suites.ts',
    load: () => import('../src/testing/suites.js'),
    values: ['runLanguageModelSuite', 'runMemoryStoreSuite'],
    types: [
      'LanguageModelCapabilities',
      'LanguageModelSuiteOptions',
      'MemoryStoreSuiteOptions',
      'MemoryStoreUnderTest',
      'SuiteModelOptions',
      'SuiteServerOptions',
    ],
  },
  {
    subpath: './ai-sdk',
    source: 'src/surfaces/sdk/index.ts',
    load: () => import('../src/surfaces/sdk/index.js'),
    values: ['engramMiddleware'],
    types: ['EngramMiddleware', 'EngramMiddlewareOptions'],
  },
];

/** The names an entry file lists, split by kind; refuses anything but named re-exports (no `export *`, no local code). */
function listedNames(source: string): { values: string[]; types: string[] } {
  const file = ts.createSourceFile(
    source,
    readFileSync(`${PACKAGE_ROOT}${source}`, 'utf8'),
    ts.ScriptTarget.ES2022,
    true,
  );
  const values: string[] = [];
  const types: string[] = [];
  for (const statement of file.statements) {
    const named =
      ts.isExportDeclaration(statement) &&
      statement.exportClause !== undefined &&
      ts.isNamedExports(statement.exportClause);
    if (!named)
      throw new Error(
        `${source}: only named re-exports belong in an entry, found: ${statement.getText().slice(0, 80)}`,
      );
    for (const element of (statement.exportClause as ts.NamedExports).elements)
      (statement.isTypeOnly || element.isTypeOnly ? types : values).push(element.name.text);
  }
  return { values: values.sort(), types: types.sort() };
}

describe('the public entries', () => {
  for (const entry of ENTRIES) {
    it(`${entry.subpath} exports exactly its pinned run-time names and types`, async () => {
      const module = await entry.load();
      expect(Object.keys(module).sort()).toEqual([...entry.values].sort());
      const listed = listedNames(entry.source);
      expect(listed.values).toEqual([...entry.values].sort());
      expect(listed.types).toEqual([...entry.types].sort());
    });
  }

  it('the root stays a deliberate list of what a user calls (at most 60 run-time names)', () => {
    const root = ENTRIES.find((entry) => entry.subpath === '.')!;
    expect(root.values.length).toBeLessThanOrEqual(60);
  });

  it('no name is exported by two entries, so there is one place to import each thing from', () => {
    const seen = new Map<string, string>();
    const twice: string[] = [];
    for (const entry of ENTRIES) {
      for (const name of [...entry.values, ...entry.types]) {
        if (seen.has(name)) twice.push(`${name} (${seen.get(name)} and ${entry.subpath})`);
        else seen.set(name, entry.subpath);
      }
    }
    expect(twice).toEqual([]);
  });

  it('package.json "exports" maps each subpath to its entry built in dist, and nothing else', () => {
    const manifest = JSON.parse(readFileSync(`${PACKAGE_ROOT}package.json`, 'utf8')) as {
      exports: Record<string, unknown>;
      files: string[];
    };
    const expected: Record<string, unknown> = { './package.json': './package.json' };
    for (const entry of ENTRIES) {
      const built = entry.source.replace(/^src\//, './dist/').replace(/\.ts$/, '');
      expected[entry.subpath] = { types: `${built}.d.ts`, default: `${built}.js` };
    }
    expect(manifest.exports).toEqual(expected);
    // `types` must come before `default`: resolvers take the first condition that matches.
    for (const entry of ENTRIES)
      expect(Object.keys(manifest.exports[entry.subpath] as object)).toEqual(['types', 'default']);
    expect(manifest.files).toEqual(['dist', 'README.md', 'docs', 'plugins', '.claude-plugin', 'src', 'LICENSE']);
  });
});

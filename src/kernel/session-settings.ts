import { flag, integer, number, numbers, text, type SettingGroups } from './setting-definition.js';

/**
 * Settings of an agent session: its context window, session notes and compaction, the tools it
 * offers (the memory tool, the sandbox) and the instruction files it loads.
 */

/** Rows of the settings table (settings.ts lists the groups in `engram config` order). */
export const SESSION_SETTING_ROWS = {
  session: {
    contextWindow: number(200_000, 'Context window in tokens'),
    outputReserve: number(20_000, 'Tokens reserved for the model output'),
    warnRatios: numbers([0.7, 0.85, 0.92], 'Context usage ratios that raise warnings', { maximum: 1 }),
    toolResultThresholdBytes: number(50_000, 'Tool results above this are stored on disk'),
    toolResultPreviewBytes: number(2_000, 'Preview kept in place of a stored tool result'),
    fileCacheEntries: number(100, 'File-read dedupe LRU entries'),
    fileCacheBytes: number(25 * 1024 * 1024, 'File-read dedupe LRU bytes'),
    microcompactIdleMinutes: number(60, 'Idle minutes after which old tool results are cleared'),
    microcompactKeepRecent: number(5, 'Recent tool results microcompaction keeps'),
    modelContextWindows: text(
      '',
      'Context window per model, overriding session.contextWindow: comma-separated <model>=<tokens> (k/m suffixes allowed), a trailing * matches a prefix, e.g. claude-sonnet-4-5=1m,gpt-4o*=128k',
      { env: 'ENGRAM_MODEL_CONTEXT_WINDOWS' },
    ),
    serverContextEditing: flag(
      false,
      "true: ask Anthropic models to clear old tool results server-side (context editing, clear_tool_uses) instead of clearing them in the session's messages",
    ),
    toolResultPageBytes: integer(
      20_000,
      'Bytes of a stored tool result one read_persisted_output call returns at most',
      { minimum: 1 },
    ),
    transcriptFlushMs: integer(
      100,
      'Milliseconds between writes of pending session transcript lines (a crash loses at most this much)',
      { maximum: 60_000 },
    ),
    listingTailBytes: integer(64 * 1024, 'Bytes read from the end of each session transcript to list sessions', {
      minimum: 4_096,
      maximum: 16 * 1024 * 1024,
    }),
    todoMaxItems: integer(200, 'Items a session todo list holds at most', { minimum: 1, maximum: 10_000 }),
    todoItemMaxChars: integer(2_000, 'Characters of one session todo item at most', { minimum: 10 }),
    planMaxChars: integer(20_000, 'Characters of the session plan at most (re-injected after each compaction)', {
      minimum: 100,
      maximum: 1_000_000,
    }),
    maxOutputTokens: integer(8_192, 'Output cap of each model request of an agent turn', { minimum: 1 }),
    maxToolRounds: integer(25, 'Model rounds ending in tool calls one agent turn may make', {
      minimum: 1,
      maximum: 1_000,
    }),
  },
  notes: {
    initThresholdTokens: number(40_000, 'Context size before session notes start'),
    minGrowthTokens: number(5_000, 'Token growth required between notes updates'),
    minToolCalls: number(3, 'Tool calls between notes updates'),
    sectionMaxTokens: number(2_000, 'Session notes per-section cap'),
    fileMaxTokens: number(12_000, 'Session notes whole-file cap'),
    templatePath: text(
      '',
      'Markdown file replacing the session notes template (one heading per section); empty for the default ten sections',
      { env: 'ENGRAM_NOTES_TEMPLATE' },
    ),
    promptPath: text(
      '',
      'Text file replacing the session notes update prompt ({{notes}}, {{sections}}, {{sectionMaxTokens}}, {{fileMaxTokens}} are filled in); empty for the default',
      { env: 'ENGRAM_NOTES_PROMPT' },
    ),
    updateMaxOutputTokens: integer(8_000, 'Output cap of one session notes update', { minimum: 1, maximum: 1_000_000 }),
    maxFileBytes: integer(1024 * 1024, 'Largest session notes, notes template or notes prompt file read', {
      minimum: 1_024,
    }),
  },
  compaction: {
    bufferTokens: number(13_000, 'Compaction fires at effective window minus this'),
    thresholdRatio: number(0.92, 'Compaction fires at this share of the window', { maximum: 1 }),
    maxRetries: integer(3, 'Retries of a too-long compaction request', { maximum: 20 }),
    circuitBreakerFailures: integer(3, 'Failed compactions in a row before giving up', { minimum: 1, maximum: 100 }),
    summaryMaxOutputTokens: integer(
      20_000,
      'Output cap of the summarizer request when compaction cannot use the session notes',
      { minimum: 256 },
    ),
    keepRecentMaxTokens: integer(
      40_000,
      'Most tokens of recent messages a compaction from session notes keeps verbatim after the summary',
    ),
    reinjectMaxFiles: integer(5, 'Most recently read files re-injected after a compaction', { maximum: 50 }),
    reinjectFileMaxTokens: integer(
      5_000,
      'Tokens of one re-injected file (longer files are cut; the model can read them again)',
    ),
    reinjectMaxTokens: integer(20_000, 'Tokens of all re-injected files together'),
    toolResultMaxChars: integer(
      10_000,
      'Characters of one tool result the summarizer is sent (longer ones keep their head and tail)',
      { minimum: 200 },
    ),
  },
  memoryTool: {
    viewMaxChars: integer(
      16_000,
      'Characters one memory-tool view returns; longer files are read in ranges (view_range)',
      { minimum: 1_000 },
    ),
    maxFileBytes: integer(
      128 * 1024,
      'Largest memory file (frontmatter and content) the memory tool creates or edits',
      { minimum: 1 },
    ),
    maxPathLength: integer(512, 'Longest path the memory tool accepts', { minimum: 32 }),
    maxLines: integer(999_999, 'Line limit past which the memory tool refuses to view a file', { minimum: 1 }),
  },
  sandbox: {
    timeoutMs: integer(10_000, 'How long a sandboxed shell command may run before it is killed', { minimum: 1 }),
    outputMaxBytes: integer(
      64 * 1024,
      'Output of a sandboxed command kept (the rest is cut, and the command stopped)',
      { minimum: 1 },
    ),
    readMaxBytes: integer(256 * 1024, 'Largest slice of a file the sandboxed read tool returns', { minimum: 1 }),
    listMaxEntries: integer(500, 'Entries the sandboxed directory listing shows', { minimum: 1 }),
    searchMaxMatches: integer(200, 'Matching lines the sandboxed search returns', { minimum: 1 }),
    searchMaxFiles: integer(5_000, 'Files the sandboxed search reads at most', { minimum: 1 }),
    searchMaxFileBytes: integer(1024 * 1024, 'Files larger than this are skipped by the sandboxed search', {
      minimum: 1,
    }),
    searchTimeoutMs: integer(5_000, 'Time budget of one sandboxed search, regular expressions included', {
      minimum: 1,
    }),
    maxPathLength: integer(1_024, 'Longest path the sandboxed tools accept', { minimum: 32 }),
    maxCommandLength: integer(4_096, 'Longest command line the sandboxed shell accepts', { minimum: 32 }),
  },
  instructions: {
    managedPath: text(
      '/etc/claude-code/CLAUDE.md',
      "Managed-policy instruction file loaded first (Claude Code's /etc/claude-code/CLAUDE.md); empty for none",
      { env: 'ENGRAM_MANAGED_INSTRUCTIONS' },
    ),
    allowImportsFrom: text(
      '',
      'Folders (":"-separated, absolute or ~/) that @imports may reach besides the defaults: the project and ~/.claude for project files, home for user files',
    ),
    maxImportDepth: integer(
      5,
      '@path imports followed at most this many levels deep (deeper ones are reported, not loaded)',
      { maximum: 20 },
    ),
    maxFileBytes: integer(4 * 1024 * 1024, 'Instruction files larger than this are skipped with a warning', {
      minimum: 1,
    }),
    maxTotalBytes: integer(
      32 * 1024 * 1024,
      'Bytes of instruction files loaded in all; later files are skipped with a warning',
      { minimum: 1 },
    ),
    maxFiles: integer(1_000, 'Instruction files (rules and imports included) loaded at most', { minimum: 1 }),
    maxRuleEntries: integer(10_000, 'Directory entries looked at under each .claude/rules folder at most', {
      minimum: 1,
    }),
    maxPathPatterns: integer(
      1_000,
      "Glob patterns one rule's paths: may expand to (braces included); the rest are dropped with a warning",
      { minimum: 1 },
    ),
  },
} satisfies SettingGroups;

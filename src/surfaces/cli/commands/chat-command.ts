import { homedir } from 'node:os';
import { EngramError, isEngramError } from '../../../kernel/errors.js';
import { stopOnSignals } from '../../../kernel/node/stop-signals.js';
import { noPositionals, stringOption, type CommandDefinition } from '../cli-command.js';
import { CLI_ACTOR, globalSettingFlags } from '../cli-engram.js';

/** What to set when no model is configured: the real setting names, both providers. */
export const CHAT_NEEDS_MODEL =
  'engram chat needs a language model, and none is configured. Set one of:\n' +
  '  ANTHROPIC_API_KEY=<key>                         Anthropic (ANTHROPIC_BASE_URL for another endpoint)\n' +
  '  OPENAI_API_KEY=<key>                            OpenAI\n' +
  '  OPENAI_BASE_URL=<url> ENGRAM_MODEL=<model id>   any OpenAI-compatible server, e.g. http://localhost:11434/v1 (Ollama)\n' +
  'ENGRAM_MODEL picks the model, ENGRAM_MODEL_PROVIDER (anthropic | openai-compatible) the provider; the same settings can live in ~/.engram/config.json (see "engram config").';

/**
 * The claude-code provider runs `claude -p` with no tools: enough for extraction, not for the chat,
 * whose model uses tools. Inside Claude Code, the plugin gives Claude Code itself the memory.
 */
export const CHAT_NEEDS_TOOL_MODEL =
  'engram chat needs a model that can use tools, and the claude-code provider cannot: it runs Claude Code ' +
  'headless with no tools, which is enough for extraction only. To chat with memory in Claude Code, use ' +
  'Claude Code itself with the engram plugin ("engram install claude-code"). For engram chat, set one of ' +
  'ANTHROPIC_API_KEY, OPENAI_API_KEY, or OPENAI_BASE_URL with ENGRAM_MODEL (and ENGRAM_MODEL_PROVIDER ' +
  'anthropic | openai-compatible if model.provider is claude-code).';

/** `engram chat`: the reference agent, an interactive terminal chat that uses every memory layer. */
export const chatCommand: CommandDefinition = {
  name: 'chat',
  summary: 'Chat with a model in this project, with memory, session notes, compaction and transcripts',
  usage: 'chat [--continue | --resume <id>] [--model <id>] [options]',
  options: {
    continue: { type: 'boolean', short: 'c', description: 'Continue the latest chat of this project' },
    resume: {
      type: 'string',
      valueName: 'id',
      description: 'Continue the chat with this session id (/resume in a chat lists them)',
    },
    model: {
      type: 'string',
      valueName: 'id',
      description: 'Model id for this chat (setting model.model, ENGRAM_MODEL)',
    },
  },
  details:
    'Tools: read_file, list_files, search_files inside the project, and write_file after you confirm. ' +
    'Commands in the chat: /memory, /compact [instructions], /notes, /resume [id], /forget <id|text>, /help, /exit. ' +
    'Ctrl-C stops a running answer; Ctrl-C twice, Ctrl-D or /exit quits. ' +
    "Piped input (printf 'question\\n' | engram chat) sends each line as a message, prints the answers and exits at its end; writes are declined there. Transcripts: <ENGRAM_HOME>/projects/<project>/<session>.jsonl.",
  async run(invocation) {
    const { values, global, io } = invocation;
    noPositionals(invocation);
    const resume = stringOption(values, 'resume');
    if (values.continue === true && resume !== undefined)
      throw new EngramError('INVALID_INPUT', 'Give --continue or --resume <id>, not both.');
    const flags = globalSettingFlags(global, { 'model.model': stringOption(values, 'model') });
    // The model is checked before anything opens: without one there is nothing to chat with.
    const [{ loadSettings }, { createLanguageModel, selectLanguageModel }] = await Promise.all([
      import('../../../node/load-settings.js'),
      import('../../../adapters/models/create-language-model.js'),
    ]);
    const loaded = loadSettings({ cwd: io.cwd, env: io.env, flags });
    const selection = selectLanguageModel(loaded.settings);
    if (selection.provider === 'none')
      throw new EngramError('MODEL_NOT_CONFIGURED', `${CHAT_NEEDS_MODEL}\n(${selection.reason})`);
    // The chat's model reads and writes project files through tools; Claude Code's headless mode runs with none.
    if (selection.provider === 'claude-code')
      throw new EngramError(
        'MODEL_NOT_CONFIGURED',
        `${CHAT_NEEDS_TOOL_MODEL}\n(the claude-code provider was chosen by ${selection.chosenBy})`,
      );
    const model = createLanguageModel(loaded.settings, { purpose: 'main' })!;
    const [{ openEngram }, { ChatAgent }, { ChatTerminal }] = await Promise.all([
      import('../../../node/open-engram.js'),
      import('../../chat/chat-agent.js'),
      import('../../chat/chat-terminal.js'),
    ]);
    const opened = await openEngram({ cwd: io.cwd, env: io.env, flags, actor: CLI_ACTOR });
    const terminal = new ChatTerminal({
      input: io.stdin,
      output: io.stdout,
      terminal: io.interactive && io.stdout.isTTY === true,
      piped: !io.interactive,
      color: io.color,
      settings: opened.engram.settings,
    });
    // Outside a terminal, Ctrl-C reaches the process as SIGINT: it interrupts like in one.
    const onSignal = (): void => terminal.interrupt();
    process.on('SIGINT', onSignal);
    // SIGTERM ends the chat as /exit does: the transcript is flushed and the store closed before the process exits.
    const stop = stopOnSignals({
      signals: ['SIGTERM'],
      graceMs: opened.engram.settings.server.stopGraceMs,
      log: (message) => io.stderr.write(`${message}\n`),
      onStop: () => terminal.stop(),
    });
    try {
      const agent = await ChatAgent.open({
        engram: opened.engram,
        model,
        cwd: io.cwd,
        engramHome: loaded.home,
        userHome: io.env.HOME ?? homedir(),
        confirm: (question) => terminal.confirm(question),
        onNotice: (notice) => terminal.notice(notice),
        ...(values.continue === true && { resume: { latest: true } as const }),
        ...(resume !== undefined && { resume: { sessionId: resume } }),
      });
      try {
        await terminal.run(agent);
      } finally {
        await agent.close();
        io.stdout.write(`Transcript: ${agent.transcriptPath}\n`);
      }
      // A script that piped its questions learns from the exit code that some got no answer.
      const { sent, failed } = terminal.turns;
      if (!io.interactive && failed.length > 0) {
        const last = failed.at(-1);
        throw new EngramError(
          isEngramError(last) ? last.code : 'INTERNAL',
          `${failed.length} of ${sent} piped messages got no answer; the last error: ${last instanceof Error ? last.message : String(last)}`,
          { cause: last },
        );
      }
    } finally {
      process.off('SIGINT', onSignal);
      await opened.close();
      stop.dispose();
    }
    return { data: null, text: '', printed: true };
  },
};

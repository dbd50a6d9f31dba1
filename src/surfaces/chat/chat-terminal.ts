import { createInterface, type Interface } from 'node:readline';
import type { ContextUsage } from '../../session/context-budget.js';
import { isEngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import type { ChatAgent } from './chat-agent.js';
import type { ChatNotice } from './chat-agent-types.js';
import { chatHelpText, parseChatLine } from './chat-commands.js';
import { formatForgetResult, formatMemoryReport, formatSessionList } from './chat-format.js';
import { CONTROL_CHARACTERS, clean, describeCall, shortTokenCount } from './chat-terminal-text.js';

/** The streams and facts a chat terminal runs over (the process's, or in-memory ones in tests). */
export interface ChatTerminalOptions {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** A real terminal: line editing, echo, and Ctrl-C read as an interrupt (readline's SIGINT). */
  terminal: boolean;
  /** ANSI colors for the status line and notices. */
  color: boolean;
  /**
   * The input is a pipe or a file, not a person (`printf 'question\n' | engram chat`): each line is
   * its own message (how lines arrive in chunks says nothing about a paste), no prompt is drawn, each
   * line is echoed before its answer, and the end of input ends the chat only after every line read
   * has had its turn (a person's Ctrl-D quits at once). Confirmations are answered no.
   */
  piped?: boolean;
  settings: Pick<Settings, 'chat'>;
}

const STYLES = { dim: '2', warning: '33' } as const;
const PROMPT = '> ';
// Drawn after a line ending in a backslash: the message goes on.
const CONTINUATION_PROMPT = '… ';
// A piped line is echoed up to this many characters (a pasted file need not be printed back whole).
const ECHO_MAX_CHARACTERS = 200;

/**
 * The REPL of `engram chat` over injected streams: lines typed become turns (answers streamed as
 * they come), `/commands` run, a status line shows context usage after each turn. Ctrl-C during a
 * turn aborts it and the session goes on; Ctrl-C twice in a row (or /exit, or end of input) quits.
 * Lines typed while a turn runs wait their turn; a pasted block (lines arriving together) is one
 * message, and so is a line ending in a backslash with the lines after it. write_file confirmations
 * read the next line. Piped input (`piped`) is read line by line to its end, each line (or
 * backslash-continued message) a turn.
 */
export class ChatTerminal {
  readonly #options: ChatTerminalOptions;
  #agent: ChatAgent | undefined;
  #readline: Interface | undefined;
  #running: AbortController | undefined;
  #confirming: ((answer: boolean) => void) | undefined;
  #batch: string[] = [];
  /** Lines of a message still going on (each ended in a backslash), without their backslash. */
  #continued: string[] = [];
  #queue: string[] = [];
  #busy = false;
  #armedToQuit = false;
  #quit: (() => void) | undefined;
  #quitting = false;
  #notices: ChatNotice[] = [];
  #midLine = false;
  #inputEnded = false;
  #firstLine = true;
  #failures: unknown[] = [];
  #turns = 0;

  constructor(options: ChatTerminalOptions) {
    this.#options = options;
  }

  /** Asks a yes/no question on the terminal; the next line answers it (only y or yes is yes; Ctrl-C is no). */
  confirm(question: string): Promise<boolean> {
    if (this.#quitting) return Promise.resolve(false);
    this.#ensureNewLine();
    this.#write(`${question} [y/N] `);
    // Piped lines were written before the question was asked, so none of them answers it; after the
    // end of input nothing can. Like every CLI confirmation, only a person at a terminal says yes.
    if (this.#options.piped === true || this.#inputEnded) {
      this.#write(`no (${this.#inputEnded ? 'end of input' : 'input is not a terminal'})\n`);
      return Promise.resolve(false);
    }
    return new Promise((resolve) => {
      this.#confirming = resolve;
    });
  }

  /** Shows what happened in the background; held back while an answer streams, shown after it. */
  notice(notice: ChatNotice): void {
    if (this.#busy) this.#notices.push(notice);
    else this.#printNotice(notice);
  }

  /** Messages sent to the model so far, and the errors of those that got no answer (an interruption is no failure). */
  get turns(): { sent: number; failed: readonly unknown[] } {
    return { sent: this.#turns, failed: [...this.#failures] };
  }

  /** Runs the chat until /exit, a second Ctrl-C or the end of input. */
  async run(agent: ChatAgent): Promise<void> {
    this.#agent = agent;
    const readline = createInterface({
      input: this.#options.input,
      output: this.#options.output,
      terminal: this.#options.terminal,
      prompt: PROMPT,
      // CR LF is one line end however the two bytes arrive (a pipe may split them across chunks).
      crlfDelay: Number.POSITIVE_INFINITY,
    });
    this.#readline = readline;
    const done = new Promise<void>((resolve) => {
      this.#quit = resolve;
    });
    // Stopped before the chat began (SIGTERM while the session opened).
    if (this.#quitting) this.#quit?.();
    readline.on('line', (line) => this.#onLine(line));
    readline.on('SIGINT', () => this.interrupt());
    readline.on('close', () => this.#onInputEnd());
    const resumed = agent.session.messages.length;
    this.#write(
      `engram chat · session ${agent.sessionId}${resumed > 0 ? ` (continued, ${resumed} messages)` : ''} · /help for commands\n`,
    );
    this.#status(agent.usage());
    this.#prompt();
    await done;
    readline.close();
  }

  /** Ends the chat now (SIGTERM): the running turn is aborted, a pending question declined, and `run` returns. */
  stop(): void {
    this.#requestQuit();
  }

  /** Ctrl-C: aborts the running turn (or declines a pending question); pressed again with nothing running, quits. */
  interrupt(): void {
    if (this.#confirming) {
      this.#answer(false);
      return;
    }
    if (this.#running) {
      this.#running.abort(new Error('interrupted by Ctrl-C'));
      this.#armedToQuit = true;
      return;
    }
    if (this.#armedToQuit) {
      this.#requestQuit();
      return;
    }
    this.#armedToQuit = true;
    this.#ensureNewLine();
    this.#write('(press Ctrl-C again to quit, or type /exit)\n');
    this.#prompt();
  }

  #onLine(raw: string): void {
    // A byte-order mark opens many saved files; it is no part of the first message.
    const line = this.#firstLine ? raw.replace(/^\uFEFF/, '') : raw;
    this.#firstLine = false;
    if (this.#confirming) {
      this.#answer(/^\s*y(es)?\s*$/i.test(line));
      return;
    }
    this.#armedToQuit = false;
    // A line ending in a backslash goes on on the next one: one message of several lines, typed or piped.
    if (line.endsWith('\\')) {
      this.#continued.push(line.slice(0, -1));
      if (this.#options.piped !== true) {
        this.#readline?.setPrompt(CONTINUATION_PROMPT);
        this.#readline?.prompt();
      }
      return;
    }
    if (this.#continued.length > 0) {
      this.#readline?.setPrompt(PROMPT);
      this.#accept([...this.#continued.splice(0), line].join('\n'));
    } else this.#accept(line);
  }

  /** Takes a whole line (or message of continued lines) in: piped, it waits its turn; typed, it may be part of a paste. */
  #accept(line: string): void {
    if (this.#options.piped === true) {
      this.#queue.push(line);
      void this.#drain();
      return;
    }
    // Lines that arrive together (a paste) are gathered and read as one message on the next turn of the event loop.
    this.#batch.push(line);
    if (this.#batch.length === 1) setImmediate(() => this.#flushBatch());
  }

  /** End of input: a person's Ctrl-D quits now; piped input first lets every line read have its turn. */
  #onInputEnd(): void {
    this.#inputEnded = true;
    if (this.#confirming) this.#answer(false);
    // Piped input that ends inside a continued message still sends what it holds.
    if (this.#options.piped === true && this.#continued.length > 0) this.#accept(this.#continued.splice(0).join('\n'));
    if (this.#options.piped !== true || (!this.#busy && this.#queue.length === 0 && this.#batch.length === 0))
      this.#requestQuit();
  }

  #flushBatch(): void {
    const lines = this.#batch;
    this.#batch = [];
    const first = parseChatLine(lines[0] ?? '');
    if (lines.length === 1 || first.kind === 'command' || first.kind === 'unknown-command') this.#queue.push(...lines);
    else this.#queue.push(lines.join('\n'));
    void this.#drain();
  }

  async #drain(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      while (this.#queue.length > 0 && !this.#quitting) await this.#handle(this.#queue.shift()!);
    } finally {
      this.#busy = false;
      for (const notice of this.#notices.splice(0)) this.#printNotice(notice);
    }
    if (this.#inputEnded && this.#queue.length === 0 && this.#batch.length === 0) this.#requestQuit();
    if (!this.#quitting) this.#prompt();
  }

  /** Draws the prompt for a person; piped input has no one to prompt. */
  #prompt(): void {
    if (this.#options.piped !== true) this.#readline?.prompt();
  }

  async #handle(raw: string): Promise<void> {
    const limit = this.#options.settings.chat.inputMaxBytes;
    const bytes = Buffer.byteLength(raw);
    if (bytes > limit) {
      this.#write(
        `That message is ${bytes} bytes; a message holds at most ${limit} (chat.inputMaxBytes). Save large content to a file in the project and ask me to read it.\n`,
      );
      return;
    }
    const parsed = parseChatLine(raw.replace(CONTROL_CHARACTERS, ''));
    const agent = this.#agent!;
    if (this.#options.piped === true && parsed.kind !== 'empty') this.#echo(raw);
    try {
      switch (parsed.kind) {
        case 'empty':
          return;
        case 'unknown-command':
          this.#write(`Unknown command /${parsed.name}. /help lists the commands.\n`);
          return;
        case 'message':
          await this.#turn(parsed.text);
          return;
        case 'command':
          break;
      }
      switch (parsed.name) {
        case 'help':
          this.#write(`${chatHelpText()}\n`);
          return;
        case 'exit':
          this.#requestQuit();
          return;
        case 'memory':
          this.#write(`${formatMemoryReport(agent.memoryReport())}\n`);
          return;
        case 'notes': {
          const notes = await agent.notes();
          this.#write(
            notes.trim() === ''
              ? '(No session notes yet: they are written in the background once the conversation grows.)\n'
              : `${notes.trimEnd()}\n`,
          );
          return;
        }
        case 'compact': {
          const result = await agent.compact(parsed.argument === '' ? undefined : parsed.argument);
          this.#flushNotices();
          this.#write(
            `Compacted (${result.boundary.method === 'notes' ? 'from the session notes' : 'summary'}); ${agent.session.messages.length} messages now.\n`,
          );
          this.#status(agent.usage());
          return;
        }
        case 'resume':
          if (parsed.argument === '') {
            this.#write(`${formatSessionList(await agent.listSessions(), agent.sessionId)}\n`);
          } else {
            await agent.switchTo(parsed.argument);
            this.#write(`Continuing session ${agent.sessionId} (${agent.session.messages.length} messages).\n`);
            this.#status(agent.usage());
          }
          return;
        case 'forget':
          this.#write(`${formatForgetResult(await agent.forget(parsed.argument))}\n`);
          return;
      }
    } catch (error) {
      this.#ensureNewLine();
      this.#write(`engram: ${isEngramError(error) || error instanceof Error ? error.message : String(error)}\n`);
    }
  }

  async #turn(text: string): Promise<void> {
    const agent = this.#agent!;
    const controller = new AbortController();
    this.#running = controller;
    this.#turns += 1;
    let streamed = false;
    try {
      const result = await agent.turn(text, {
        signal: controller.signal,
        onTextDelta: (delta) => {
          streamed = true;
          this.#write(delta);
        },
        onToolCall: (call) => {
          this.#ensureNewLine();
          this.#write(`⏺ ${describeCall(call)}\n`, 'dim');
        },
      });
      if (!streamed && result.text !== '') this.#write(result.text);
      this.#ensureNewLine();
      if (result.stopReason === 'max-tool-rounds')
        this.#write('(stopped: too many tool rounds in one turn; say "go on" to continue)\n', 'dim');
    } catch (error) {
      this.#ensureNewLine();
      if (controller.signal.aborted) this.#write('(interrupted)\n', 'dim');
      else {
        this.#failures.push(error);
        this.#write(`engram: ${error instanceof Error ? error.message : String(error)}\n`);
      }
    } finally {
      this.#running = undefined;
    }
    this.#flushNotices();
    this.#status(agent.usage());
  }

  /** Piped input shows each line it sends, as a person's terminal would, so each answer follows its question. */
  #echo(line: string): void {
    const shown = [...line];
    const echoed = shown.length > ECHO_MAX_CHARACTERS ? `${shown.slice(0, ECHO_MAX_CHARACTERS).join('')}…` : line;
    this.#ensureNewLine();
    // The lines of a continued message are shown as they would have been typed.
    this.#write(`${PROMPT}${echoed.replaceAll('\n', `\n${CONTINUATION_PROMPT}`)}\n`);
  }

  #answer(yes: boolean): void {
    const resolve = this.#confirming;
    this.#confirming = undefined;
    this.#write(yes ? 'yes\n' : 'no\n');
    resolve?.(yes);
  }

  #requestQuit(): void {
    if (this.#quitting) return;
    this.#quitting = true;
    this.#running?.abort(new Error('the chat is ending'));
    if (this.#confirming) this.#answer(false);
    this.#ensureNewLine();
    this.#quit?.();
  }

  #status(usage: ContextUsage): void {
    const percent = Math.round(usage.ratio * 100);
    const text = `[context ${shortTokenCount(usage.tokens)}/${shortTokenCount(usage.window)} tokens (${percent}%) · session ${this.#agent!.sessionId.slice(0, 8)}]`;
    this.#write(`${text}\n`, usage.level >= 2 ? 'warning' : 'dim');
  }

  #flushNotices(): void {
    for (const notice of this.#notices.splice(0)) this.#printNotice(notice);
  }

  #printNotice(notice: ChatNotice): void {
    this.#ensureNewLine();
    this.#write(`· ${notice.text}\n`, 'dim');
  }

  #ensureNewLine(): void {
    if (this.#midLine) this.#write('\n');
  }

  /**
   * The one way text reaches the terminal: cleaned of control characters whatever its source (model
   * output, memory names, transcript titles, file paths), then styled (the only escapes engram writes).
   */
  #write(text: string, style?: keyof typeof STYLES): void {
    const safe = clean(text);
    if (safe === '') return;
    const body = safe.endsWith('\n') ? safe.slice(0, -1) : safe;
    const styled =
      style && this.#options.color && body !== ''
        ? `\u001b[${STYLES[style]}m${body}\u001b[0m${safe.slice(body.length)}`
        : safe;
    this.#options.output.write(styled);
    this.#midLine = !safe.endsWith('\n');
  }
}

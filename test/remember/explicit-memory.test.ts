import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngramError } from '../../src/kernel/errors.js';
import { detectExplicitMemory, type RememberIntent } from '../../src/remember/explicit-memory.js';
import { toThirdPerson } from '../../src/remember/third-person.js';
import { assertDescription, assertName } from '../../src/memory/memory.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { Engram } from '../../src/engram.js';
import { applyExplicitMemory, findForgetTarget } from '../../src/remember/explicit-memory-writes.js';
import { openTemporaryStore, type TemporaryStore } from '../support/temporary-store.js';

const PROJECT = 'project:github.com/acme/app';
const OTHER = 'project:github.com/acme/other';

function remembered(message: string): Array<Pick<RememberIntent, 'type' | 'content'>> {
  return detectExplicitMemory(message).map((intent) => {
    if (intent.kind !== 'remember') throw new Error(`expected a remember intent, got forget(${intent.query})`);
    return { type: intent.type, content: intent.content };
  });
}

describe('statements that are captured', () => {
  it.each([
    ['Remember that I use tabs.', 'user', 'The user uses tabs.'],
    ['remember: the staging DB listens on port 5433', 'project', 'The staging DB listens on port 5433.'],
    ['Please remember I am on call this week.', 'user', 'The user is on call this week.'],
    ['Claude, remember that the API is versioned by date.', 'project', 'The API is versioned by date.'],
    ['Can you remember that I work in UTC?', 'user', 'The user works in UTC.'],
    ["Don't forget that the release freeze starts on Friday.", 'project', 'The release freeze starts on Friday.'],
    ['I want you to remember that we deploy on Tuesdays.', 'project', 'We deploy on Tuesdays.'],
    ['Keep in mind that my laptop runs Windows.', 'user', "The user's laptop runs Windows."],
    ['Remember that you should never force-push.', 'feedback', 'You should never force-push.'],
    ['From now on, answer in French.', 'feedback', 'Answer in French.'],
    ['Ok, also, from now on use British spelling.', 'feedback', 'Use British spelling.'],
    ['Use pnpm instead of npm from now on.', 'feedback', 'Use pnpm instead of npm.'],
    ['Going forward, the nightly build runs at 02:00 UTC.', 'project', 'The nightly build runs at 02:00 UTC.'],
    ['Always run the tests before committing.', 'feedback', 'Always run the tests before committing.'],
    ['Never push directly to main.', 'feedback', 'Never push directly to main.'],
    ['Please always ask me before deleting files.', 'feedback', 'Always ask the user before deleting files.'],
    [
      'You should never mock the database in integration tests.',
      'feedback',
      'Never mock the database in integration tests.',
    ],
    ['When writing tests, never mock the database.', 'feedback', 'When writing tests, never mock the database.'],
    ['- always pass --frozen-lockfile in CI', 'feedback', 'Always pass --frozen-lockfile in CI.'],
    ['I prefer tabs over spaces.', 'user', 'The user prefers tabs over spaces.'],
    ["I'd rather you didn't use emojis.", 'user', "The user would rather you didn't use emojis."],
    ["I don't like emojis in commit messages.", 'user', "The user doesn't like emojis in commit messages."],
    ['i really like short answers', 'user', 'The user likes short answers.'],
    ['I love `vitest` for its watch mode.', 'user', 'The user loves `vitest` for its watch mode.'],
    ['My name is Ada.', 'user', "The user's name is Ada."],
    ['my preferred editor is Neovim', 'user', "The user's preferred editor is Neovim."],
    ['My timezone is Europe/Berlin.', 'user', "The user's timezone is Europe/Berlin."],
    ['Call me Ada.', 'user', 'The user wants to be called Ada.'],
  ])('%j', (message, type, content) => {
    expect(remembered(message)).toEqual([{ type, content }]);
  });

  it.each([
    ['Forget that I use tabs.', 'I use tabs'],
    ['Please forget about the staging database.', 'the staging database'],
    ["Don't remember that my sister visited.", 'my sister visited'],
    ['You can forget what I said about the Friday deploys.', 'the Friday deploys'],
  ])('forget: %j', (message, query) => {
    expect(detectExplicitMemory(message)).toEqual([{ kind: 'forget', query, trigger: 'forget' }]);
  });

  it('gives each intent a valid slug, a one-line description and the explicit importance', () => {
    const intents = detectExplicitMemory(
      "Remember that I use tabs. From now on, never commit to main. I don't like long answers. My name is Ada.",
    );
    expect(intents).toHaveLength(4);
    for (const intent of intents) {
      if (intent.kind !== 'remember') throw new Error('remember expected');
      expect(assertName(intent.name)).toBe(intent.name);
      expect(assertDescription(intent.description)).toBe(intent.description);
      expect(intent.importance).toBe(DEFAULT_SETTINGS.explicitMemory.importance);
    }
    expect(intents.map((intent) => intent.kind === 'remember' && intent.name)).toEqual([
      'user-uses-tabs',
      'never-commit-to-main',
      'user-doesnt-like-long-answers',
      'user-name-is-ada',
    ]);
  });

  it('takes several statements of one message in order, each once, at most maxIntentsPerMessage', () => {
    expect(remembered('Always run the linter before pushing. Always run the linter before pushing!')).toHaveLength(1);
    const many = Array.from(
      { length: 9 },
      (_, index) => `Remember that service ${index} listens on port ${8000 + index}.`,
    ).join(' ');
    expect(detectExplicitMemory(many)).toHaveLength(DEFAULT_SETTINGS.explicitMemory.maxIntentsPerMessage);
    const settings = {
      explicitMemory: { ...DEFAULT_SETTINGS.explicitMemory, maxIntentsPerMessage: 2, importance: 0.9 },
    };
    const intents = detectExplicitMemory(many, { settings });
    expect(intents).toHaveLength(2);
    expect(intents[0]).toMatchObject({ importance: 0.9 });
  });
});

describe('statements that are not', () => {
  it.each([
    // questions
    'Do you remember what I said about tabs?',
    'Did I tell you to always use tabs?',
    'Remember that thing we discussed?',
    'Should I always use tabs?',
    'Why do you never run the tests?',
    // descriptions, not instructions
    'It always fails on CI.',
    'Always fails when I run it twice.',
    'The deploy never finishes before noon.',
    'You always forget the semicolons.',
    'Never mind.',
    'Never heard of it.',
    'Always the same problem.',
    'Always been like that.',
    'Never again.',
    'I never said that.',
    'Things will be different from now on.',
    "It's going to be harder from now on.",
    // hypotheticals and negations
    'If I always use tabs, will the linter complain?',
    'What if we always used tabs?',
    'Maybe remember that I like tea?',
    'Would you remember that if I told you twice?',
    'Suppose I prefer spaces; what changes?',
    "I don't remember where I put it.",
    'I forgot about the meeting.',
    "I don't want you to remember this conversation.",
    // quoted, reported and code
    'He said "remember that I use tabs" yesterday.',
    'The README says “always run make first”.',
    'Run `remember that x` in the shell.',
    '> remember that I use tabs',
    '```\nremember that I use tabs\nalways run the tests\n```',
    // about this conversation, not a lasting fact
    'I like it.',
    'I like how you did that.',
    'I love your idea.',
    "I'd like a summary.",
    'I would like you to refactor this.',
    'I hate to say it, but the build is red.',
    'I prefer not to say.',
    'My code is broken.',
    'My name is not important.',
    'My manager is out this week.',
    'Call me when it is done.',
    "Don't forget to run the tests.",
    "Forget it, let's move on.",
    'Forget about it.',
    'Forget everything.',
    // private
    'Remember that <private>my therapist is Dr. Who</private>',
    'Always <private>take the blue pill</private>',
  ])('%j', (message) => {
    expect(detectExplicitMemory(message)).toEqual([]);
  });

  it('never stores private text that sits inside an otherwise valid statement', () => {
    expect(remembered('Remember that I live in <private>4 Elm St,</private> Springfield.')).toEqual([
      { type: 'user', content: 'The user lives in Springfield.' },
    ]);
  });
});

describe('first person becomes the user', () => {
  it.each([
    ['I use tabs', 'the user uses tabs'],
    ['I always push on Fridays', 'the user always pushes on Fridays'],
    [
      "I'm a backend engineer and my team owns billing",
      "the user is a backend engineer and the user's team owns billing",
    ],
    ["I've moved to Lisbon", 'the user has moved to Lisbon'],
    ["I don't drink coffee", "the user doesn't drink coffee"],
    ['I can read Go but I try to avoid it', 'the user can read Go but the user tries to avoid it'],
    ['ask me before you delete anything of mine', "ask the user before you delete anything of the user's"],
    ['the `I` in `let I = 1` stays', 'the `I` in `let I = 1` stays'],
    ['i.e. nothing changes', 'i.e. nothing changes'],
  ])('%j → %j', (input, expected) => {
    expect(toThirdPerson(input)).toBe(expected);
  });
});

describe('bad input', () => {
  it('refuses what is not text, and messages over the limit, with clear errors', () => {
    for (const value of [undefined, null, 3, {}, ['remember that x']]) {
      expect(() => detectExplicitMemory(value as unknown as string)).toThrow(EngramError);
    }
    const tooLong = `Remember that I use tabs. ${'x'.repeat(DEFAULT_SETTINGS.explicitMemory.maxMessageChars)}`;
    expect(() => detectExplicitMemory(tooLong)).toThrow(expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE' }));
  });

  it('answers hostile input without capturing noise', () => {
    const size = 64 * 1024;
    expect(detectExplicitMemory('remember that '.repeat(size / 14))).toEqual([]);
    expect(detectExplicitMemory('```\n'.repeat(size / 4))).toEqual([]);
    expect(detectExplicitMemory('"'.repeat(size))).toEqual([]);
    expect(detectExplicitMemory(`Remember that ${'a '.repeat(2_000)}.`)).toEqual([]); // longer than maxStatementChars
    expect(detectExplicitMemory('')).toEqual([]);
  });
});

describe('applied through the library over a real store', () => {
  let temporary: TemporaryStore;
  let engram: Engram;
  const warnings: string[] = [];

  beforeEach(async () => {
    temporary = await openTemporaryStore(Date.parse('2025-03-01T12:00:00.000Z'));
    engram = new Engram({
      store: temporary.store,
      defaultScope: PROJECT,
      now: () => new Date(temporary.clock.now),
      onWarning: (warning) => warnings.push(warning),
    });
    warnings.length = 0;
  });

  afterEach(async () => {
    await temporary.close();
  });

  async function active(scope = PROJECT): Promise<string[]> {
    return (await engram.list({ scopes: [scope] })).map((memory) => memory.content).sort();
  }

  it('writes what was asked at once, typed and important, and dedupes a restatement', async () => {
    const first = await applyExplicitMemory(engram, 'Remember that I use tabs. From now on, never push to main.', {
      source: { sessionId: 's1', turnId: 't1' },
    });
    expect(first.outcomes.map((outcome) => outcome.action)).toEqual(['created', 'created']);
    const [tabs, push] = first.outcomes.map((outcome) => ('memory' in outcome ? outcome.memory! : undefined));
    expect(tabs).toMatchObject({
      scope: PROJECT,
      type: 'user',
      content: 'The user uses tabs.',
      importance: 0.8,
      source: { origin: 'explicit', sessionId: 's1', turnId: 't1' },
    });
    expect(push).toMatchObject({ type: 'feedback', content: 'Never push to main.' });
    expect((await engram.history(tabs!.id))[0]).toMatchObject({ action: 'create', actor: 'explicit-memory' });

    const again = await applyExplicitMemory(engram, 'Please remember that I use tabs!');
    expect(again.outcomes).toMatchObject([{ action: 'merged', memory: { id: tabs!.id } }]);
    expect(await active()).toEqual(['Never push to main.', 'The user uses tabs.']);
  });

  it('archives the one memory a "forget" clearly points at, and it leaves recall', async () => {
    await applyExplicitMemory(engram, 'Remember that I use tabs. Remember that the staging DB listens on port 5433.');
    const result = await applyExplicitMemory(engram, 'Forget that I use tabs.', { actor: 'chat' });
    expect(result.outcomes).toMatchObject([
      { action: 'archived', memory: { content: 'The user uses tabs.', archived: true } },
    ]);
    expect(await active()).toEqual(['The staging DB listens on port 5433.']);
    expect((await engram.recall('tabs')).memories).toEqual([]);
    const archivedId = (result.outcomes[0] as { memory: { id: string } }).memory.id;
    expect((await engram.history(archivedId)).at(-1)).toMatchObject({ action: 'archive', actor: 'chat' });
  });

  it('archives nothing when two memories match about as well (ambiguous) or none does (no-match)', async () => {
    await engram.remember({ content: 'The user uses tabs in Go files.' });
    await engram.remember({ content: 'The user uses tabs in Makefiles.' });
    const before = await active();
    const ambiguous = await applyExplicitMemory(engram, 'Forget that I use tabs.');
    expect(ambiguous.outcomes).toMatchObject([{ action: 'ambiguous' }]);
    expect((ambiguous.outcomes[0] as { candidates: unknown[] }).candidates.length).toBeGreaterThanOrEqual(2);
    const none = await applyExplicitMemory(engram, 'Please forget about the staging database.');
    expect(none.outcomes).toMatchObject([{ action: 'no-match' }]);
    expect(await active()).toEqual(before);
  });

  it('picks the close match over a memory that merely mentions the words', async () => {
    await engram.remember({ content: 'The user uses tabs.' });
    await engram.remember({
      content: 'The user uses tabs in Go, spaces in YAML, and two-space indents in JSON fixtures.',
    });
    const target = await findForgetTarget(engram, 'I use tabs', PROJECT);
    expect(target.status).toBe('match');
    expect(target.status === 'match' && target.memory.content).toBe('The user uses tabs.');
  });

  it('forgets only inside the write scope', async () => {
    await engram.remember({ content: 'The user uses tabs.', scope: OTHER });
    const result = await applyExplicitMemory(engram, 'Forget that I use tabs.');
    expect(result.outcomes).toMatchObject([{ action: 'no-match' }]);
    expect(await active(OTHER)).toEqual(['The user uses tabs.']);
  });

  it('reports without writing in a dry run', async () => {
    await engram.remember({ content: 'The user uses tabs.' });
    const result = await applyExplicitMemory(engram, 'Always run the tests first. Forget that I use tabs.', {
      dryRun: true,
    });
    expect(result.outcomes.map((outcome) => outcome.action)).toEqual(['would-save', 'would-archive']);
    expect(await active()).toEqual(['The user uses tabs.']);
  });

  it('redacts a secret stated explicitly, and says so without repeating it', async () => {
    const key = `sk-proj-${'Ab3De'.repeat(8)}Zq9`;
    const result = await applyExplicitMemory(engram, `Remember that my OpenAI key is ${key}.`);
    expect(result.outcomes).toMatchObject([{ action: 'created', warnings: ['secrets-redacted'] }]);
    const stored = (result.outcomes[0] as { memory: { content: string } }).memory.content;
    expect(stored).toBe("The user's OpenAI key is [REDACTED:openai-api-key].");
    expect(JSON.stringify(await engram.list())).not.toContain(key);
    expect(warnings.join('\n')).toContain('openai-api-key');
    expect(warnings.join('\n')).not.toContain(key);
  });

  it('refuses bad options and bad messages with clear errors, changing nothing', async () => {
    await expect(applyExplicitMemory(engram, 42 as unknown as string)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(
      applyExplicitMemory(engram, 'Remember that I use tabs.', { scope: 'nowhere' as never }),
    ).rejects.toMatchObject({ code: 'INVALID_SCOPE' });
    await expect(applyExplicitMemory(engram, 'Remember that I use tabs.', { actor: '' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    await expect(applyExplicitMemory(engram, 'x', null as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(findForgetTarget(engram, '   ', PROJECT)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(await engram.count()).toBe(0);
  });
});

import { describe, expect, it } from 'vitest';
import { groupDuplicatePairs, lexicalDuplicatePairs } from '../../src/maintenance/duplicate-groups.js';
import { normalizeNewMemory, type Memory } from '../../src/memory/memory.js';
import {
  compareByCosine,
  compareLexically,
  lexicalProfile,
  lexicalSimilarity,
  mergePatch,
} from '../../src/remember/near-duplicate.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';

const THRESHOLD = DEFAULT_SETTINGS.dedupe.lexicalThreshold;

// A hand-made set of restatements (should merge) and near-misses (must not): the figures below are
// the Jaccard indexes measured on it, so a change to the tokenizer or the rules shows up here.
const DUPLICATES: Array<[string, string, number]> = [
  ['The user prefers tabs over spaces.', 'The user prefers tabs over spaces', 1],
  [
    'Integration tests use the real database, no mocks.',
    'Integration tests must use the real database, no mocks.',
    0.857,
  ],
  [
    'The project database is PostgreSQL 15 on a private server.',
    "The project's database is PostgreSQL 15, on a private server.",
    1,
  ],
  ['Pipeline bugs are tracked in Linear project INGEST.', 'Pipeline bugs are tracked in the Linear project INGEST.', 1],
  ["The user's name is Alice.", "The user's name is Alice", 1],
  ['Always run the linter before committing.', 'Always run the linter before committing changes.', 0.833],
  ['The user prefers dark mode in every editor.', 'The user prefers dark mode in every editor they use.', 0.857],
  ['The user writes tests before writing code.', 'The user writes the tests before writing the code.', 1],
  ['Use pnpm, not npm, for installing packages.', 'Use pnpm (not npm) to install packages.', 1],
  ['Staging runs on Kubernetes in eu-west-1.', 'In eu-west-1, staging runs on Kubernetes.', 1],
  ["The user doesn't want emoji in commit messages.", 'The user does not want emoji in commit messages.', 1],
];

const NOT_DUPLICATES: Array<[string, string, number, string]> = [
  ['Alice reports to Bob.', 'Bob reports to Alice.', 1, 'order-differs'],
  ['The user prefers tabs over spaces.', 'The user prefers spaces over tabs.', 1, 'order-differs'],
  ['The API server calls the billing service.', 'The billing service calls the API server.', 1, 'order-differs'],
  ['The user prefers tabs.', 'The user prefers spaces.', 0.5, 'words-substituted'],
  [
    'The user prefers tabs for indentation in TypeScript, JavaScript, Go and Rust files.',
    'The user prefers spaces for indentation in TypeScript, JavaScript, Go and Rust files.',
    0.8,
    'words-substituted',
  ],
  ['The project database is PostgreSQL 15.', 'The project database is PostgreSQL 16.', 0.6, 'values-differ'],
  [
    'Integration tests use the real database.',
    'Integration tests do not use the real database.',
    1,
    'negation-differs',
  ],
  [
    'Run database migrations before deploying the API server to production.',
    'Run database migrations after deploying the API server to production.',
    0.778,
    'words-substituted',
  ],
  [
    'The feature flag for the new checkout flow is on in staging and production.',
    'The feature flag for the new checkout flow is off in staging and production.',
    0.778,
    'words-substituted',
  ],
  ['Bugs are tracked in Linear.', 'Bugs are tracked in Jira.', 0.5, 'words-substituted'],
  [
    'The user prefers TypeScript for backend services.',
    'The user prefers Python for data analysis scripts.',
    0.222,
    'words-substituted',
  ],
  ['Deploys happen every Friday at 17:00.', 'Deploys happen every Friday at 16:00.', 0.714, 'values-differ'],
  ['The user always wants short answers.', 'The user never wants short answers.', 0.8, 'negation-differs'],
  [
    'Node 20 is the minimum supported version.',
    'Node 20 or 22 is the minimum supported version.',
    0.714,
    'values-differ',
  ],
  ['Use tabs.', 'Use tabs except in YAML files.', 0.4, 'below-threshold'],
  [
    'The API rate limit is enforced per user.',
    'The API rate limit is enforced per user and per IP address.',
    0.75,
    'below-threshold',
  ],
  [
    "The user's editor is Neovim with the LazyVim distribution and a custom colour scheme.",
    "The user's editor is Helix with the LazyVim distribution and a custom colour scheme.",
    0.778,
    'words-substituted',
  ],
];

let sequence = 0;
function memory(content: string, fields: Partial<Memory> = {}): Memory {
  sequence += 1;
  const created = new Date(Date.UTC(2025, 0, 1, 0, 0, sequence)).toISOString();
  return {
    ...normalizeNewMemory(
      { scope: 'global', content },
      { now: created, id: `mem-${String(sequence).padStart(4, '0')}` },
    ),
    ...fields,
  };
}

describe('lexical near-duplicates', () => {
  it.each(DUPLICATES)('merges the restatement %j ~ %j (Jaccard %d)', (a, b, jaccard) => {
    const verdict = compareLexically(lexicalProfile(a), lexicalProfile(b), THRESHOLD);
    expect(verdict.similarity).toBeCloseTo(jaccard, 3);
    expect(verdict).toMatchObject({ duplicate: true, method: 'lexical' });
    // Symmetric: which one came first does not matter.
    expect(compareLexically(lexicalProfile(b), lexicalProfile(a), THRESHOLD).duplicate).toBe(true);
  });

  it.each(NOT_DUPLICATES)('keeps %j apart from %j (Jaccard %d, %s)', (a, b, jaccard, reason) => {
    const verdict = compareLexically(lexicalProfile(a), lexicalProfile(b), THRESHOLD);
    expect(verdict.similarity).toBeCloseTo(jaccard, 3);
    expect(verdict).toMatchObject({ duplicate: false, reason });
    expect(compareLexically(lexicalProfile(b), lexicalProfile(a), THRESHOLD).duplicate).toBe(false);
  });

  it('would merge six of the near-misses on Jaccard ≥ 0.8 alone: the rules, not the threshold, keep them apart', () => {
    const naive = NOT_DUPLICATES.filter(
      ([a, b]) => lexicalSimilarity(lexicalProfile(a), lexicalProfile(b)) >= THRESHOLD,
    ).map(([, , , reason]) => reason);
    expect(naive.sort()).toEqual([
      'negation-differs',
      'negation-differs',
      'order-differs',
      'order-differs',
      'order-differs',
      'words-substituted',
    ]);
    // And the threshold separates what the rules let through: lowest restatement 0.833, highest near-miss below it 0.75.
    const lowestDuplicate = Math.min(
      ...DUPLICATES.map(([a, b]) => lexicalSimilarity(lexicalProfile(a), lexicalProfile(b))),
    );
    const highestAdditive = Math.max(
      ...NOT_DUPLICATES.filter(([, , , reason]) => reason === 'below-threshold').map(([a, b]) =>
        lexicalSimilarity(lexicalProfile(a), lexicalProfile(b)),
      ),
    );
    expect(lowestDuplicate).toBeGreaterThanOrEqual(THRESHOLD);
    expect(highestAdditive).toBeLessThan(THRESHOLD);
  });

  it('reads contractions, case, punctuation and inflection as the same words', () => {
    const profile = lexicalProfile("The user DOESN'T like Tabs; they're using spaces.");
    expect(profile.negated).toBe(true);
    expect([...profile.words].sort()).toEqual(['like', 'space', 'tab', 'us', 'user']);
  });

  it('compares texts of function words only by their words as written', () => {
    expect(lexicalSimilarity(lexicalProfile('It is what it is.'), lexicalProfile('it is what it is'))).toBe(1);
    expect(lexicalSimilarity(lexicalProfile('It is what it is.'), lexicalProfile('It was what it was.'))).toBe(0);
  });

  it('survives hostile text: emoji, NUL, query syntax, 100 KB', () => {
    const hostile = ['🙂🙂🙂', 'a\u0000b', 'NEAR(x y) AND "unbalanced', 'x'.repeat(100_000), ''];
    for (const text of hostile) {
      const profile = lexicalProfile(text);
      expect(compareLexically(profile, profile, THRESHOLD).duplicate).toBe(true);
    }
  });
});

describe('cosine near-duplicates', () => {
  const a = lexicalProfile('Integration tests use the real database.');
  it('merges at or above the threshold and not below', () => {
    const b = lexicalProfile('Integration tests talk to a real database instance.');
    expect(compareByCosine(0.85, a, b, 0.85).duplicate).toBe(true);
    expect(compareByCosine(0.8499, a, b, 0.85)).toMatchObject({ duplicate: false, reason: 'below-threshold' });
    expect(compareByCosine(Number.NaN, a, b, 0.85).duplicate).toBe(false);
  });
  it('never merges a mirror image (same words, two trading places), however close the vectors', () => {
    const verdict = compareByCosine(
      0.99,
      lexicalProfile('Alice reports to Bob.'),
      lexicalProfile('Bob reports to Alice.'),
      0.85,
    );
    expect(verdict).toMatchObject({ duplicate: false, reason: 'order-differs' });
    const moved = compareByCosine(
      0.99,
      lexicalProfile('Staging runs on Kubernetes in eu-west-1.'),
      lexicalProfile('In eu-west-1, staging runs on Kubernetes.'),
      0.85,
    );
    expect(moved.duplicate).toBe(true);
  });

  it('never merges a negation or a changed value, however close the vectors', () => {
    expect(
      compareByCosine(0.99, a, lexicalProfile('Integration tests do not use the real database.'), 0.85),
    ).toMatchObject({ reason: 'negation-differs' });
    expect(compareByCosine(0.99, lexicalProfile('Node 20'), lexicalProfile('Node 22'), 0.85)).toMatchObject({
      reason: 'values-differ',
    });
  });
});

describe('mergePatch', () => {
  it('takes the new wording, the higher importance and re-derives a derived description', () => {
    const existing = memory('Always run the linter before committing.', { importance: 0.9 });
    const patch = mergePatch(existing, {
      content: 'Always run the linter before committing changes.',
      importance: 0.5,
    });
    expect(patch).toEqual({
      content: 'Always run the linter before committing changes.',
      description: 'Always run the linter before committing changes.',
    });
    expect(mergePatch(existing, { content: existing.content, importance: 0.95 })).toEqual({ importance: 0.95 });
  });

  it('keeps the fuller old text when the new one says less, and a hand-written description', () => {
    const existing = memory('Always run the linter before committing changes.', { description: 'Lint before commits' });
    expect(mergePatch(existing, { content: 'Always run the linter before committing.' })).toEqual({});
    expect(mergePatch(existing, { content: 'Always run the linter before committing changes!' })).toEqual({
      content: 'Always run the linter before committing changes!',
    });
  });

  it('takes a type, name and description only when the new statement names them', () => {
    const existing = memory('The user prefers dark mode.', { type: 'user' });
    expect(
      mergePatch(existing, {
        content: existing.content,
        type: 'feedback',
        name: 'dark-mode',
        description: 'Dark mode',
      }),
    ).toEqual({
      type: 'feedback',
      name: 'dark-mode',
      description: 'Dark mode',
    });
  });
});

describe('duplicate groups', () => {
  it('finds exactly the pairs a comparison of every pair finds (prefix filtering loses none)', () => {
    const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
    let seed = 7;
    const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    const memories: Memory[] = [];
    for (let index = 0; index < 160; index += 1) {
      const length = 2 + Math.floor(random() * 6);
      memories.push(memory(Array.from({ length }, () => words[Math.floor(random() * words.length)]).join(' ')));
    }
    for (const threshold of [0.5, 0.8, 1]) {
      const fast = lexicalDuplicatePairs(memories, threshold).map(({ a, b }) => [a.id, b.id].sort().join('+'));
      const slow: string[] = [];
      for (let i = 0; i < memories.length; i += 1) {
        for (let j = i + 1; j < memories.length; j += 1) {
          if (
            compareLexically(lexicalProfile(memories[i]!.content), lexicalProfile(memories[j]!.content), threshold)
              .duplicate
          )
            slow.push([memories[i]!.id, memories[j]!.id].sort().join('+'));
        }
      }
      expect(slow.length).toBeGreaterThan(0);
      expect(fast.sort()).toEqual(slow.sort());
    }
  });

  it('keeps the oldest and never chains: a member must duplicate the keeper itself', () => {
    const oldest = memory('The user prefers dark mode in every editor.');
    const middle = memory('The user prefers dark mode in every editor they use.');
    const newest = memory('The user prefers dark mode in every editor they use daily.');
    const other = memory('Bugs are tracked in Linear.');
    const groups = groupDuplicatePairs(
      [newest, other, middle, oldest],
      lexicalDuplicatePairs([newest, other, middle, oldest], THRESHOLD),
    );
    expect(groups).toHaveLength(1);
    expect(groups[0]!.keeper.id).toBe(oldest.id);
    // newest ~ middle (0.875) but newest ~ oldest is 0.75: it stays out instead of joining through middle.
    expect(groups[0]!.duplicates.map(({ memory: member }) => member.id)).toEqual([middle.id]);
  });
});

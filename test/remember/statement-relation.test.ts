import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { compareLexically, lexicalProfile } from '../../src/remember/near-duplicate.js';
import {
  compareStatements,
  sharedSubject,
  statementProfile,
  type Likeness,
} from '../../src/remember/statement-relation.js';
import { distinctPairs, TRUE_UPDATES } from '../fixtures/distinct-facts-corpus.js';

const LEXICAL: Likeness = { method: 'lexical', threshold: DEFAULT_SETTINGS.dedupe.lexicalThreshold };

function relation(older: string, newer: string, likeness: Likeness = LEXICAL) {
  return compareStatements(statementProfile(older), statementProfile(newer), likeness);
}

describe('the shared statement comparison', () => {
  it.each(distinctPairs().map((pair) => [pair.category, pair.older, pair.newer] as const))(
    'never reads two %s facts as one overturned: %j / %j',
    (_category, older, newer) => {
      expect(['distinct', 'unsure']).toContain(relation(older, newer).relation);
      expect(['distinct', 'unsure']).toContain(relation(newer, older).relation);
    },
  );

  it('reads the true updates of the corpus as updates', () => {
    const missed = TRUE_UPDATES.filter((pair) => relation(pair.older, pair.newer).relation !== 'updated');
    expect(missed).toEqual([]);
  });

  it('says why: a changed value, a flipped negation, a change said in words, another subject, another thing', () => {
    expect(relation('The project uses PostgreSQL 15.', 'The project uses PostgreSQL 16.').reason).toBe('value-changed');
    expect(relation('The user likes Docker.', 'The user does not like Docker.').reason).toBe('negation-flipped');
    expect(relation("The user's editor is VS Code.", "The user's editor is now Helix.").reason).toBe('change-marked');
    expect(relation('The database runs Postgres 14.', 'We moved the database from Postgres 14 to 16.').reason).toBe(
      'changed-from-to',
    );
    expect(relation('Alice owns the billing service.', 'Bob owns the billing service.')).toMatchObject({
      relation: 'distinct',
      reason: 'subject-differs',
    });
    expect(relation('The plan covers customer 4411.', 'The plan covers customer 5822.')).toMatchObject({
      relation: 'distinct',
      reason: 'identifier-differs',
    });
    expect(relation('The backup ran on March 3.', 'The backup ran on March 10.')).toMatchObject({
      relation: 'distinct',
      reason: 'another-event',
    });
  });

  it('stays unsure where words cannot tell: swapped words, a substituted value, an added one', () => {
    expect(relation('The user prefers tabs over spaces.', 'The user prefers spaces over tabs.')).toMatchObject({
      relation: 'unsure',
      reason: 'order-differs',
    });
    expect(relation('The user prefers tabs.', 'The user prefers spaces.').relation).toBe('unsure');
    expect(relation('The user speaks German.', 'The user also speaks Portuguese.').relation).toBe('unsure');
    // A change said about another subject overturns nothing.
    expect(relation("Alice's editor is VS Code.", "Bob's editor is now Helix.").relation).toBe('distinct');
    // "now" with two slots changed ("VS Code for Python" / "Helix for Rust") is not one value replaced.
    expect(relation('The user uses VS Code for Python.', 'The user now uses Helix for Rust.').relation).toBe('unsure');
    // "from … to" whose old value the older does not hold.
    expect(
      relation('The database runs Postgres 12.', 'We moved the database from Postgres 14 to 16.').relation,
    ).not.toBe('updated');
  });

  it('is `same` exactly where dedupe merges, whatever the order of the two', () => {
    const pairs: Array<[string, string]> = [
      ['Integration tests use the real database, no mocks.', 'Integration tests must use the real database, no mocks.'],
      ['The user prefers tabs over spaces.', 'The user prefers spaces over tabs.'],
      ['The project database is PostgreSQL 15.', 'The project database is PostgreSQL 16.'],
    ];
    for (const [a, b] of pairs) {
      const dedupe = compareLexically(lexicalProfile(a), lexicalProfile(b), LEXICAL.threshold).duplicate;
      expect(relation(a, b).relation === 'same').toBe(dedupe);
      expect(relation(b, a).relation === 'same').toBe(dedupe);
    }
  });

  it("recall's token overlap: a near-copy only when nothing disagrees", () => {
    const overlap = (similarity: number): Likeness => ({ method: 'overlap', similarity, threshold: 0.8 });
    expect(relation('Tests run in parallel.', 'Tests run in parallel!', overlap(1)).relation).toBe('same');
    expect(
      relation('The user prefers tabs over spaces.', 'The user prefers spaces over tabs.', overlap(1)).relation,
    ).toBe('unsure');
    expect(relation('The user likes Docker.', "The user doesn't like Docker.", overlap(1)).relation).toBe('updated');
    expect(
      relation('The cluster has 3 nodes and 5 workers.', 'The cluster has 5 nodes and 3 workers.', overlap(1)).relation,
    ).toBe('updated');
  });
});

describe('dedupe no longer merges what tells two things apart', () => {
  // Each pair was a near-duplicate before issue 26: a function word inside a name, a label letter,
  // "non-", a negation that bears on another word, swapped numbers.
  const pairs: Array<[string, string, string]> = [
    ['api-eu.example.com serves the European customers.', 'api-us.example.com serves the European customers.', 'name'],
    ['The cache on redis-a expires keys after an hour.', 'The cache on redis-b expires keys after an hour.', 'name'],
    ['The EU cluster runs PostgreSQL 16.', 'The US cluster runs PostgreSQL 16.', 'acronym'],
    ['Test suite A takes 4 minutes.', 'Test suite B takes 4 minutes.', 'label'],
    ['Non-admin users see the read-only dashboard.', 'Admin users see the read-only dashboard.', 'non-'],
    [
      'Users without an admin role cannot delete projects.',
      'Users with an admin role can delete projects.',
      'negation',
    ],
    ['The cluster has 3 nodes and 5 workers.', 'The cluster has 5 nodes and 3 workers.', 'swapped numbers'],
  ];
  it.each(pairs)('%j / %j (%s)', (a, b) => {
    expect(compareLexically(lexicalProfile(a), lexicalProfile(b), LEXICAL.threshold).duplicate).toBe(false);
    expect(relation(a, b).relation).not.toBe('same');
  });

  it('still merges restatements whose capitals are emphasis or a sentence start', () => {
    const a = lexicalProfile("The user DOESN'T want emoji in commits.");
    const b = lexicalProfile('The user does not want emoji in commits.');
    expect(compareLexically(a, b, LEXICAL.threshold).duplicate).toBe(true);
    expect(
      compareLexically(lexicalProfile('A build takes 4 minutes.'), lexicalProfile('a build takes 4 minutes'), 0.8)
        .duplicate,
    ).toBe(true);
  });
});

describe('shared subjects (what a model may merge or invalidate)', () => {
  const shared = (a: string, b: string) => sharedSubject(statementProfile(a), statementProfile(b));
  it('joins paraphrases of one subject and refuses two subjects', () => {
    expect(shared('ArgoCD handles every deployment.', 'Deploys go out through ArgoCD from the gitops repo.')).toBe(
      true,
    );
    expect(shared('Tickets are tracked in Jira.', 'The team replaced Jira with Linear for ticket tracking.')).toBe(
      true,
    );
    expect(shared('Alice owns the billing service.', 'Bob owns the billing service.')).toBe(false);
    expect(shared('Customer 4411 is on the enterprise plan.', 'Customer 5822 is on the enterprise plan.')).toBe(false);
    expect(shared('The backup ran on March 3.', 'The backup ran on March 10.')).toBe(false);
    expect(shared('The user likes Go.', 'Deploys happen on Fridays.')).toBe(false);
  });
});

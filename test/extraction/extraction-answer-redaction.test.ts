import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AnthropicLanguageModel } from '../../src/adapters/models/anthropic-language-model.js';
import { extractCheap } from '../../src/extraction/cheap-extraction.js';
import { profileKnown } from '../../src/extraction/recalled-memories.js';
import { Extractor } from '../../src/extraction/extractor.js';
import type { JobOutcome } from '../../src/extraction/extraction-report.js';
import { readRecentExtractions } from '../../src/extraction/recent-extractions.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { SECRET_CASES } from '../fixtures/secrets-corpus.js';
import { PROJECT, useExtractionFixture } from '../support/extraction-support.js';

// Issue 26 item 12: extraction redacted the model's answer as raw text BEFORE parsing its JSON. A
// placeholder that swallowed a closing quote or the backslash of an escape broke the JSON (every
// memory of that answer dropped), and a secret spelled with JSON escapes was not seen, so the answer
// kept with the job held it. The answer is now parsed first and each field redacted.

const fixture = useExtractionFixture({ extraction: { maxMemoriesPerTurn: 5 } });
let server: LanguageModelServer;

beforeEach(async () => {
  server = await startAnthropicMessagesServer();
});
afterEach(async () => {
  await server.close();
});

function model(): AnthropicLanguageModel {
  return new AnthropicLanguageModel({
    model: 'claude-haiku-5-5',
    baseUrl: server.url,
    apiKey: 'sk-ant-test',
    maxRetries: 0,
  });
}

/** Every byte of every file in the fixture's folder (the store, its WAL), as latin1 text. */
function folderBytes(): string {
  return readdirSync(fixture.directory)
    .map((name) => {
      try {
        return readFileSync(join(fixture.directory, name)).toString('latin1');
      } catch {
        return '';
      }
    })
    .join('\n');
}

describe('the model answer is parsed before its fields are redacted', () => {
  it('keeps every memory of answers holding each secret of the corpus, and no secret anywhere', async () => {
    const extractor = new Extractor({ engram: fixture.engram, model: model(), autoStart: false, onWarning: () => {} });
    const outcomes: JobOutcome[] = [];
    // Five memories an answer, each holding one case: as the model writes them (JSON.stringify escapes line ends and quotes).
    for (let first = 0; first < SECRET_CASES.length; first += 5) {
      const cases = SECRET_CASES.slice(first, first + 5);
      server.script({
        message: {
          text: JSON.stringify({
            memories: cases.map((entry, offset) => ({
              type: 'project',
              name: `credential-note-${first + offset}`,
              description: `Where credential ${first + offset} is kept`,
              content: `Credential note ${first + offset} for the ops runbook: ${entry.text}`,
              importance: 0.6,
            })),
          }),
        },
      });
      await extractor.afterTurn({
        sessionId: `answer-${first}`,
        messages: [
          { id: 'u1', role: 'user', text: `Write down the credential notes ${first}.` },
          { id: 'a1', role: 'assistant', text: 'Written down.' },
        ],
      });
      outcomes.push(...(await extractor.drain()));
    }
    const notRead = outcomes.flatMap((outcome) =>
      outcome.state === 'done'
        ? outcome.report.dropped.filter((item) => item.reason === 'not-json').map(() => outcome.job.key)
        : [`${outcome.job.key}: ${outcome.state}`],
    );
    expect(notRead, 'answers whose JSON the redaction broke').toEqual([]);
    const written = outcomes.flatMap((outcome) => (outcome.state === 'done' ? outcome.report.written : []));
    const dropped = outcomes.flatMap((outcome) => (outcome.state === 'done' ? outcome.report.dropped : []));
    expect(dropped).toEqual([]);
    expect(written.filter((memory) => memory.origin === 'extraction')).toHaveLength(SECRET_CASES.length);

    const recent = JSON.stringify(await readRecentExtractions(fixture.store));
    const reports = JSON.stringify(outcomes);
    await fixture.store.close();
    const stored = folderBytes();
    for (const entry of SECRET_CASES) {
      for (const secret of entry.secrets) {
        expect(stored.includes(secret), `${entry.kind} in the store files: ${entry.text.slice(0, 50)}`).toBe(false);
        expect(recent.includes(secret), `${entry.kind} in the recent extractions`).toBe(false);
        expect(reports.includes(secret), `${entry.kind} in the run reports`).toBe(false);
      }
    }
    await fixture.store.open();
  });

  it('redacts secrets the answer spells with JSON escapes before the answer is kept', async () => {
    const key = 'sk-ant-api03-Zq8vR2mK9xLp4TnW7yBc3DfGh6JkMn1PqRs5TuVw8XyZa0bCdEfGh2IjKl';
    const pemLines = [
      'MIIEowIBAAKCAQEAx9Zq2vR8mK4LpTnW7yBc3DfGh6JkMn1PqRs5TuVw8XyZa0bC',
      'dEfGh2IjKl4MnOp6QrSt8UvWx0YzA1bC3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3x',
    ];
    const escapedKey = key.replaceAll('-', '\\u002d');
    const escapedPem = `-----BEGIN RSA PRIVATE KEY-----\\n${pemLines.map((line) => line.replaceAll('/', '\\/')).join('\\n')}\\n-----END RSA PRIVATE KEY-----`;
    const raw = `{"memories": [{"type": "reference", "name": "anthropic-key", "description": "The key the batch job uses", "content": "The batch job calls Claude with ${escapedKey}.", "importance": 0.5}, {"type": "reference", "name": "deploy-key", "description": "The deploy key", "content": "Deploy key:\\n${escapedPem}", "importance": 0.5}, {"type": "project", "name": "wifi", "description": "Office wifi", "content": "The office wifi password is \\"Blue-Falcon-378\\".", "importance": 0.5}]}`;
    expect(JSON.parse(raw).memories[0].content).toContain(key);
    server.script({ message: { text: raw } });
    const kept: string[] = [];
    const result = await extractCheap({
      model: model(),
      settings: fixture.settings,
      limits: fixture.settings.memory,
      messages: [
        { id: 'u1', role: 'user', text: 'Note the batch job key, the deploy key and the wifi.' },
        { id: 'a1', role: 'assistant', text: 'Noted.' },
      ],
      knownLines: [],
      known: profileKnown([]),
      scopes: { project: PROJECT },
      today: '2026-01-05',
      onAnswer: async (_, answer) => void kept.push(answer),
    });
    expect(result.dropped).toEqual([]);
    expect(result.candidates.map((candidate) => candidate.name)).toEqual(['anthropic-key', 'deploy-key', 'wifi']);
    expect(kept).toHaveLength(1);
    const secrets = [
      key,
      escapedKey,
      'Zq8vR2mK9xLp4TnW7yBc3D',
      ...pemLines,
      ...pemLines.map((line) => line.replaceAll('/', '\\/')),
      'Blue-Falcon-378',
    ];
    for (const text of [kept[0]!, JSON.stringify(result)])
      for (const secret of secrets) expect(text.includes(secret), secret).toBe(false);
    expect(result.candidates.map((candidate) => candidate.content)).toEqual([
      'The batch job calls Claude with [REDACTED:anthropic-api-key].',
      'Deploy key:\n[REDACTED:private-key]',
      'The office wifi password is "[REDACTED:password]".',
    ]);
  });

  it('keeps no secret in the error a failed job records', async () => {
    const token = 'ghp_Zq8vR2mK9xLp4TnW7yBc3DfGh6JkMn1PqRs5';
    server.script({ error: { kind: 'invalid_request', message: `The prompt echoed a credential: ${token}` } });
    const extractor = new Extractor({ engram: fixture.engram, model: model(), autoStart: false, onWarning: () => {} });
    await extractor.afterTurn({
      sessionId: 'failing',
      messages: [
        { id: 'u1', role: 'user', text: 'Keep the notes.' },
        { id: 'a1', role: 'assistant', text: 'Kept.' },
      ],
    });
    const outcomes = await extractor.drain();
    expect(outcomes.map((outcome) => outcome.state)).toEqual(['failed']);
    const jobs = await fixture.store.jobs.list({ queue: 'extraction' });
    expect(jobs[0]!.lastError).toContain('[REDACTED:github-token]');
    const recent = JSON.stringify(await readRecentExtractions(fixture.store));
    await fixture.store.close();
    for (const text of [JSON.stringify(outcomes), JSON.stringify(jobs), recent, folderBytes()])
      expect(text.includes(token)).toBe(false);
    await fixture.store.open();
  });
});

import { writeFile } from 'node:fs/promises';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { EngramError } from '../../../src/kernel/errors.js';
import { withMemory } from '../../../src/surfaces/sdk/with-memory.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';

import { DEPLOY_QUESTION, useMemoryWorld } from '../../support/with-memory-support.js';

// The clients an SDK derives from a wrapped one (`withOptions`, the only method of either SDK that
// builds a new client) and OpenAI's beta Responses route, against the loopback servers.
const world = useMemoryWorld('anthropic', 'chat', 'responses');

const ask = [{ role: 'user' as const, content: DEPLOY_QUESTION }];
const types = () => world.folder.events.map((event) => event.type);
/** `client` with memory over the test's folder, its memory closed after the test. */
const wrapped = <Client extends object>(client: Client) => world.keep(withMemory(client, world.folder.options()));

describe('withOptions on a wrapped client', () => {
  it('Anthropic: the derived client has the same memory, its own options, and derives again', async () => {
    const client = wrapped(new Anthropic({ apiKey: 'test-key', baseURL: world.anthropic.url, maxRetries: 0 }));
    const derived = client.withOptions({ timeout: 20_000, defaultHeaders: { 'x-team': 'ops' } });
    expect(derived).toBeInstanceOf(Anthropic);
    expect(derived.timeout).toBe(20_000);
    expect(derived.memory).toBe(client.memory);
    await derived.messages.create({ model: 'claude-test', max_tokens: 100, messages: ask });
    const again = derived.withOptions({ maxRetries: 1 });
    await again.beta.messages.create({
      model: 'claude-test',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Remember that the staging database runs Postgres 15.' }],
    });
    const [first, second] = world.anthropic.requests;
    expect(first!.headers['x-team']).toBe('ops');
    expect(JSON.stringify((first!.body as { system: unknown }).system)).toContain('Frankfurt');
    expect(JSON.stringify((second!.body as { system: unknown }).system)).toContain('<memory_context>');
    // One memory: the first client's flush waits for what the derived ones queued.
    await client.memory.flush();
    expect(await world.folder.contents()).toContain('The staging database runs Postgres 15.');
    expect(() => withMemory(again)).toThrow(EngramError);
  });

  it('OpenAI: chat and responses of the derived client have memory; a derived client may point elsewhere', async () => {
    const client = wrapped(new OpenAI({ apiKey: 'test-key', baseURL: world.chat.url, maxRetries: 0 }));
    const derived = client.withOptions({ timeout: 20_000 });
    expect(derived).toBeInstanceOf(OpenAI);
    expect(derived.memory).toBe(client.memory);
    await derived.chat.completions.create({ model: 'gpt-test', messages: ask });
    const elsewhere = client.withOptions({ baseURL: world.responses.url });
    await elsewhere.responses.create({ model: 'gpt-test', input: DEPLOY_QUESTION });
    expect(
      String((world.chat.requests[0]!.body as { messages: Array<{ content: unknown }> }).messages[0]!.content),
    ).toContain('Frankfurt');
    expect(String((world.responses.requests[0]!.body as { instructions?: unknown }).instructions)).toContain(
      'Frankfurt',
    );
    await client.memory.flush();
    expect(types().filter((type) => type === 'extraction-queued')).toHaveLength(2);
  });

  it('any method that returns a new client of its class returns it with memory (a subclass of the user, say)', async () => {
    class TeamAnthropic extends Anthropic {
      forTeam(team: string): this {
        return this.withOptions({ defaultHeaders: { 'x-team': team } }) as this;
      }
      self(): this {
        return this;
      }
    }
    const client = wrapped(new TeamAnthropic({ apiKey: 'test-key', baseURL: world.anthropic.url, maxRetries: 0 }));
    const team = client.forTeam('ops');
    expect(team).toBeInstanceOf(TeamAnthropic);
    expect(team.memory).toBe(client.memory);
    expect(client.constructor).toBe(TeamAnthropic);
    expect(client.self()).toBe(client);
    await team.messages.create({ model: 'claude-test', max_tokens: 100, messages: ask });
    expect(world.anthropic.requests[0]!.headers['x-team']).toBe('ops');
    expect(JSON.stringify((world.anthropic.requests[0]!.body as { system: unknown }).system)).toContain('Frankfurt');
  });

  it('fails open on a derived client too: a corrupt store, the call answers, one memory-unavailable', async () => {
    await writeFile(world.folder.store, 'not a database'.repeat(100));
    const client = wrapped(new OpenAI({ apiKey: 'test-key', baseURL: world.chat.url, maxRetries: 0 }));
    const completion = await client.withOptions({ timeout: 20_000 }).chat.completions.create({
      model: 'gpt-test',
      messages: ask,
    });
    expect(completion.choices[0]!.message.content).toBe('OK');
    expect(types()).toEqual(['memory-unavailable']);
    await client.chat.completions.create({ model: 'gpt-test', messages: ask });
    expect((world.chat.requests[0]!.body as { messages: unknown[] }).messages).toEqual(ask);
    expect(types().filter((type) => type === 'memory-unavailable')).toHaveLength(1);
  });
});

describe('withMemory over client.beta.responses (OpenAI)', () => {
  it('create puts the fact in instructions and queues the turn, as responses.create does', async () => {
    const client = wrapped(new OpenAI({ apiKey: 'test-key', baseURL: world.responses.url, maxRetries: 0 }));
    const response = await client.beta.responses.create({
      model: 'gpt-test',
      instructions: 'You are terse.',
      input: 'Remember that the staging database runs Postgres 15.',
    });
    expect(response.output).toHaveLength(1);
    expect(world.responses.requests[0]!.path).toContain('beta=true');
    const instructions = String((world.responses.requests[0]!.body as { instructions?: unknown }).instructions);
    expect(instructions.indexOf('# Long-term memory')).toBe(0);
    expect(instructions.endsWith('You are terse.')).toBe(true); // nothing recalled for it: no block after
    await client.memory.flush();
    expect(await world.folder.contents()).toContain('The staging database runs Postgres 15.');
  });

  it('create with stream: true streams event by event, the turn queued after the last one', async () => {
    const client = wrapped(new OpenAI({ apiKey: 'test-key', baseURL: world.responses.url, maxRetries: 0 }));
    world.responses.script({ message: { text: 'It deploys to Frankfurt, eu-central-1.' } });
    const stream = await client.beta.responses.create({ model: 'gpt-test', input: DEPLOY_QUESTION, stream: true });
    const deltas: string[] = [];
    for await (const event of stream) if (event.type === 'response.output_text.delta') deltas.push(event.delta);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe('It deploys to Frankfurt, eu-central-1.');
    expect(String((world.responses.requests[0]!.body as { instructions?: unknown }).instructions)).toContain(
      'Frankfurt',
    );
    await client.memory.flush();
    expect(types()).toContain('extraction-queued');
  });
});

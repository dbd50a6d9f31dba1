import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { useTemporaryFolder } from '../../support/per-test.js';

// `engram serve` as a real process (test/fixtures/serve-http.mjs runs the build's runServeCommand).

const directory = useTemporaryFolder('engram-shutdown-');

describe('graceful shutdown', () => {
  it('on SIGTERM finishes in-flight writes, keeps every write that got a 2xx, closes the store and exits 0', async () => {
    const home = join(directory(), 'serve-home');
    const fixture = fileURLToPath(new URL('../../fixtures/serve-http.mjs', import.meta.url));
    const child = spawn(process.execPath, [fixture], {
      cwd: directory(),
      env: {
        ...process.env,
        ENGRAM_HOME: home,
        ENGRAM_PORT: '0',
        ENGRAM_HOST: '127.0.0.1',
        ENGRAM_PROJECT: 'shutdown-test',
        ENGRAM_TOKEN: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;

    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL printed; stderr: ${stderr}`)), 20_000);
      const check = (): void => {
        const match = /listening on (http:\/\/\S+)/.exec(stdout);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        } else setTimeout(check, 20);
      };
      check();
    });

    const post = (content: string) =>
      fetch(`${url}/v1/memories`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content }),
      });

    // A write whose body is still arriving when the signal comes.
    let finishBody: () => void = () => undefined;
    const bodyDone = new Promise<void>((resolve) => (finishBody = resolve));
    const encoder = new TextEncoder();
    const slowBody = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(encoder.encode('{"content": "Written slowly, '));
        await bodyDone;
        controller.enqueue(encoder.encode('across the shutdown."}'));
        controller.close();
      },
    });
    const slowWrite = fetch(`${url}/v1/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: slowBody,
      duplex: 'half',
    } as RequestInit);

    // A steady stream of writes that runs until the server stops answering.
    const acknowledged: string[] = [];
    let attempts = 0;
    let stopWriting = false;
    const writer = (async () => {
      while (!stopWriting) {
        attempts += 1;
        try {
          const response = await post(`Steady write number ${attempts}.`);
          if (response.ok) acknowledged.push(((await response.json()) as any).memory.id);
          else await response.body?.cancel();
        } catch {
          break; // refused or reset: the server has stopped
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();

    while (acknowledged.length < 10) await new Promise((resolve) => setTimeout(resolve, 10));
    child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    finishBody();

    const slowResponse = await slowWrite;
    expect(slowResponse.status).toBe(201);
    const slowId = ((await slowResponse.json()) as any).memory.id as string;
    const [code, signal] = await exited;
    stopWriting = true;
    await writer;
    expect({ code, signal }, stderr).toEqual({ code: 0, signal: null });
    expect(stderr).toContain('SIGTERM');
    await expect(post('after shutdown')).rejects.toThrow();

    const reopened = new SqliteMemoryStore({ path: join(home, 'engram.db') });
    await reopened.open();
    try {
      for (const id of [...acknowledged, slowId]) expect(await reopened.get(id), id).toBeDefined();
      expect((await reopened.get(slowId))!.content).toBe('Written slowly, across the shutdown.');
    } finally {
      await reopened.close();
    }
  });
});

import { request } from 'node:http';
import { hookServerSocket } from './hook-server-paths.js';

/** What the hook server's `GET /status` answers. */
export interface HookServerStatus {
  pid: number;
  /** When it started (ISO time). */
  since: string;
  /** Hooks it answered. */
  requests: number;
}

/** The running hook server's status (for `engram status`), or undefined when none answers within `timeoutMs`. */
export function hookServerStatus(home: string, timeoutMs = 1_000): Promise<HookServerStatus | undefined> {
  return new Promise((resolve) => {
    const asked = request({ socketPath: hookServerSocket(home), path: '/status', timeout: timeoutMs }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        try {
          resolve(response.statusCode === 200 ? (JSON.parse(text) as HookServerStatus) : undefined);
        } catch {
          resolve(undefined);
        }
      });
    });
    asked.on('error', () => resolve(undefined));
    asked.on('timeout', () => {
      asked.destroy();
      resolve(undefined);
    });
    asked.end();
  });
}

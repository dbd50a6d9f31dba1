import { readFileSync } from 'node:fs';

/** engram's version from its package.json (three levels up from both src/kernel/node/ and dist/kernel/node/). */
export function packageVersion(): string {
  try {
    const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

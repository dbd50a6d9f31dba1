import { readFileSync } from 'node:fs';

// Set at build time in the plugin's release bundle (scripts/build-plugin-release.mjs), which has no
// engram package.json three levels up.
declare const ENGRAM_BUNDLED_VERSION: string | undefined;

/** engram's version from its package.json (three levels up from both src/kernel/node/ and dist/kernel/node/). */
export function packageVersion(): string {
  if (typeof ENGRAM_BUNDLED_VERSION === 'string') return ENGRAM_BUNDLED_VERSION;
  try {
    const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

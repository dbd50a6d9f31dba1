import { readdirSync, readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { HttpProblem } from '../http/http-errors.js';

// The viewer is static files: plain ES modules and one style sheet, shipped in the package beside
// this module (dist/surfaces/viewer/static, copied there by `npm run build`), read once and kept.

const STATIC_FOLDER = fileURLToPath(new URL('./static/', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * The page may load only its own scripts and style sheet and talk only to this service: no inline
 * script or style, no eval, no framing, no form posting anywhere, no other host.
 */
export const VIEWER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers every answer of the service carries, JSON included: nothing of it may be framed or sniffed. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

interface Asset {
  type: string;
  body: Buffer;
}

let assets: Map<string, Asset> | undefined;

function loadAssets(): Map<string, Asset> {
  const found = new Map<string, Asset>();
  let names: string[];
  try {
    names = readdirSync(STATIC_FOLDER);
  } catch {
    names = [];
  }
  for (const name of names) {
    const extension = name.slice(name.lastIndexOf('.'));
    const type = CONTENT_TYPES[extension];
    if (type === undefined || !/^[a-z0-9-]+\.[a-z]+$/.test(name)) continue;
    found.set(name, { type, body: readFileSync(`${STATIC_FOLDER}${name}`) });
  }
  return found;
}

/** Whether the viewer's files are present (a build that skipped copying them has none). */
export function viewerAvailable(): boolean {
  assets ??= loadAssets();
  return assets.has('index.html');
}

/**
 * Writes one of the viewer's files: `index.html` for `/`, the others by name under `/viewer/`.
 * Only names found in the static folder are served, so no path reaches anything else.
 */
export function sendViewerAsset(response: ServerResponse, name: string, options: { head?: boolean } = {}): void {
  assets ??= loadAssets();
  const asset = assets.get(name);
  if (!asset) {
    throw new HttpProblem(
      'ROUTE_NOT_FOUND',
      name === 'index.html'
        ? 'The viewer is not installed in this build (dist/surfaces/viewer/static is missing): run "npm run build".'
        : `No viewer file ${JSON.stringify(name.slice(0, 80))}.`,
    );
  }
  response.statusCode = 200;
  response.setHeader('content-type', asset.type);
  response.setHeader('content-length', asset.body.length);
  // The page is small and changes with the package: always revalidate, never serve a stale one.
  response.setHeader('cache-control', 'no-cache');
  response.setHeader('content-security-policy', VIEWER_CSP);
  for (const [header, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(header, value);
  response.end(options.head ? undefined : asset.body);
}

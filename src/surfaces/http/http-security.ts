import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { EngramError } from '../../kernel/errors.js';
import { HttpProblem } from './http-errors.js';

/** Whether an address or host name stays on this machine: 127.0.0.0/8, ::1 or localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) {
    if (bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
    return mapped !== null && mapped[1]!.startsWith('127.');
  }
  return false;
}

/** A token strong enough to guard a server others can reach: at least this long… */
export const MIN_TOKEN_LENGTH = 24;
/** …and at least this many bits by its characters' own frequencies (a random hex token of 24 has about 90). */
export const MIN_TOKEN_BITS = 80;

/**
 * Why a token is too weak to expose a server beyond loopback, or undefined when it is strong:
 * long enough, and not a few characters repeated (Shannon entropy of its characters × length).
 */
export function weakTokenReason(token: string): string | undefined {
  const characters = [...token];
  if (characters.length < MIN_TOKEN_LENGTH)
    return `it has ${characters.length} characters; use at least ${MIN_TOKEN_LENGTH}`;
  const counts = new Map<string, number>();
  for (const character of characters) counts.set(character, (counts.get(character) ?? 0) + 1);
  let perCharacter = 0;
  for (const count of counts.values()) {
    const share = count / characters.length;
    perCharacter -= share * Math.log2(share);
  }
  const bits = Math.floor(perCharacter * characters.length);
  if (bits < MIN_TOKEN_BITS) return `it repeats too few characters (about ${bits} bits; at least ${MIN_TOKEN_BITS})`;
  return undefined;
}

/** Refuses to start a server that others could reach without a strong token; loopback needs none. */
export function assertSafeBinding(host: string, token: string | undefined): void {
  if (isLoopbackHost(host)) return;
  if (token === undefined || token.length === 0) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Refusing to listen on ${JSON.stringify(host)} without a token: anyone who can reach it could read and change your memories. ` +
        'Set a token (ENGRAM_TOKEN or server.token) or bind to 127.0.0.1.',
    );
  }
  const weakness = weakTokenReason(token);
  if (weakness !== undefined) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Refusing to listen on ${JSON.stringify(host)} with a weak token (${weakness}): anyone who can reach it could guess it. ` +
        'Make one with "openssl rand -hex 32" and set it as ENGRAM_TOKEN, or bind to 127.0.0.1.',
    );
  }
}

/** The host name of a Host header, without its port. */
export function hostNameOf(header: string): string {
  const trimmed = header.trim();
  if (trimmed.startsWith('[')) {
    const end = trimmed.indexOf(']');
    return end < 0 ? trimmed : trimmed.slice(0, end + 1);
  }
  const colon = trimmed.indexOf(':');
  return colon < 0 ? trimmed : trimmed.slice(0, colon);
}

/**
 * DNS-rebinding protection for a loopback server: a web page whose name resolves to 127.0.0.1
 * still sends its own name in Host, so anything but a loopback name is refused.
 */
export function assertLoopbackHostHeader(request: IncomingMessage): void {
  const header = request.headers.host;
  if (header === undefined || !isLoopbackHost(hostNameOf(header))) {
    throw new HttpProblem(
      'FORBIDDEN_HOST',
      `Host ${JSON.stringify((header ?? '').slice(0, 80))} is not allowed: this server only answers to localhost names.`,
    );
  }
}

/** Requires `Authorization: Bearer <token>`, compared in constant time. */
export function assertBearerToken(request: IncomingMessage, token: string): void {
  const header = request.headers.authorization ?? '';
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!match || !constantTimeEqual(match[1]!, token)) {
    throw new HttpProblem('UNAUTHORIZED', 'Missing or wrong bearer token: send "Authorization: Bearer <token>".', {
      'www-authenticate': 'Bearer',
    });
  }
}

function constantTimeEqual(given: string, expected: string): boolean {
  // Hashing first gives equal lengths, so neither the length nor the content leaks through timing.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Methods that only read: every other method changes state and must come from the service's own origin. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Cross-site request forgery protection for every state-changing request: a browser names the page
 * that sent a request in `Origin` and says how it relates to the target in `Sec-Fetch-Site`; a
 * request another page sent (a form, a fetch, even with an empty body) is refused. A request with
 * neither header does not come from a web page (curl, SDKs, MCP clients) and passes. The service's
 * own origin is the one the request was sent to: its Host header (already held to loopback names on
 * a loopback server; a reverse proxy's https in front keeps the same host).
 */
export function assertSameOrigin(request: IncomingMessage): void {
  if (SAFE_METHODS.has((request.method ?? 'GET').toUpperCase())) return;
  const site = headerValue(request.headers['sec-fetch-site']);
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw forbiddenOrigin(`Sec-Fetch-Site ${JSON.stringify(site.slice(0, 40))}`);
  }
  const origin = headerValue(request.headers.origin);
  if (origin === undefined) return;
  const own = request.headers.host;
  if (own === undefined || !sameHost(origin, own))
    throw forbiddenOrigin(`Origin ${JSON.stringify(origin.slice(0, 80))}`);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) return value.join(',');
  return value;
}

function sameHost(origin: string, host: string): boolean {
  let parsed: URL;
  let own: URL;
  try {
    parsed = new URL(origin);
    own = new URL(`${parsed.protocol}//${host.trim()}`);
  } catch {
    // `null` (a sandboxed frame, a file: page) and anything unparsable are no origin of ours.
    return false;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
  return parsed.host === own.host;
}

function forbiddenOrigin(what: string): HttpProblem {
  return new HttpProblem(
    'FORBIDDEN_ORIGIN',
    `${what} is not this service's own: a page on another origin cannot change memories. Use the viewer this server serves, or a client that sends no Origin.`,
  );
}

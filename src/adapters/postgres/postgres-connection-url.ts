import { EngramError } from '../../kernel/errors.js';

// A Postgres store URL: libpq's form plus engram's own parameters, which are taken out before the
// rest goes to the driver.
//
//   postgres://user:password@host:port/database?schema=engram&pool=10&statement_timeout=30000
//     &connect_timeout=10&sslmode=verify-full&sslrootcert=/path/ca.pem&application_name=engram
//
// - schema: the Postgres schema holding this store's tables (default `engram`); one database can
//   hold several stores, and tests use a fresh schema per case.
// - pool: connections this process keeps at most (default: setting store.poolSize).
// - statement_timeout: milliseconds one statement may run, 0 for no limit (default: setting
//   store.statementTimeoutMs).
// - connect_timeout: seconds to wait for a connection, as in libpq (default: setting store.connectTimeoutMs).
// - sslmode / sslrootcert / sslcert / sslkey: as in libpq (disable, prefer, require, verify-ca,
//   verify-full). Without sslmode the connection is not encrypted.

/** The default Postgres schema of a store. */
export const DEFAULT_POSTGRES_SCHEMA = 'engram';

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
const MAX_POOL_SIZE = 1_000;
const MAX_TIMEOUT_MS = 2_147_483_647;

/** What engram reads from a Postgres store URL. */
export interface PostgresConnectionSettings {
  /** The URL the driver gets: engram's parameters removed, libpq-compatible SSL modes turned on. */
  driverUrl: string;
  schema: string;
  poolSize: number;
  statementTimeoutMs: number;
  connectTimeoutMs: number;
  /** host:port/database as user, for messages: never the password. */
  target: string;
  user: string;
  /** The URL with its password replaced by `***`. */
  redactedUrl: string;
}

export interface PostgresConnectionDefaults {
  poolSize: number;
  statementTimeoutMs: number;
  connectTimeoutMs: number;
}

/** Reads a `postgres://` store URL; CONFIG_INVALID (never quoting the password) when it is malformed. */
export function parsePostgresUrl(url: string, defaults: PostgresConnectionDefaults): PostgresConnectionSettings {
  const redactedUrl = redactPostgresUrl(url);
  let parsed: URL;
  try {
    // No cause: Node's URL error carries the whole input, password included.
    parsed = new URL(url);
  } catch {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid Postgres store URL ${redactedUrl}: use postgres://user:password@host:port/database?schema=name.`,
    );
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid Postgres store URL ${redactedUrl}: it must start with postgres://.`,
    );
  }
  const parameters = parsed.searchParams;
  const take = (name: string): string | undefined => {
    const values = parameters.getAll(name);
    if (values.length > 1)
      throw new EngramError('CONFIG_INVALID', `The Postgres store URL ${redactedUrl} gives ${name} twice.`);
    parameters.delete(name);
    return values[0];
  };
  const schema = take('schema') ?? DEFAULT_POSTGRES_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid schema ${JSON.stringify(schema.slice(0, 80))} in the Postgres store URL: 1-63 lowercase letters, digits or "_", starting with a letter or "_".`,
    );
  }
  const poolSize = whole(take('pool'), 'pool', 1, MAX_POOL_SIZE, defaults.poolSize, redactedUrl);
  const statementTimeoutMs = whole(
    take('statement_timeout'),
    'statement_timeout',
    0,
    MAX_TIMEOUT_MS,
    defaults.statementTimeoutMs,
    redactedUrl,
  );
  const connectTimeoutSeconds = take('connect_timeout');
  const connectTimeoutMs =
    connectTimeoutSeconds === undefined
      ? defaults.connectTimeoutMs
      : whole(connectTimeoutSeconds, 'connect_timeout', 0, 86_400, 0, redactedUrl) * 1_000;
  if (parameters.has('options')) {
    throw new EngramError(
      'CONFIG_INVALID',
      `The Postgres store URL ${redactedUrl} sets options: engram sets the session options itself (schema, statement_timeout).`,
    );
  }
  const sslMode = parameters.get('sslmode');
  if (sslMode !== null && !(SSL_MODES as readonly string[]).includes(sslMode)) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid sslmode ${JSON.stringify(sslMode.slice(0, 40))} in the Postgres store URL: one of ${SSL_MODES.join(', ')}.`,
    );
  }
  // The driver reads sslmode=require as verify-full unless told to follow libpq; engram follows libpq.
  if (sslMode !== null && !parameters.has('uselibpqcompat')) parameters.set('uselibpqcompat', 'true');
  const user = decodeURIComponent(parsed.username) || process.env.PGUSER || 'postgres';
  const database = decodeURIComponent(parsed.pathname.slice(1)) || user;
  const host = parsed.hostname || 'localhost';
  return {
    driverUrl: parsed.toString(),
    schema,
    poolSize,
    statementTimeoutMs,
    connectTimeoutMs,
    target: `${host}:${parsed.port || '5432'}/${database} as ${user}`,
    user,
    redactedUrl,
  };
}

/** A store location as it may be shown (startup lines, `config`, `migrate`): a Postgres URL's password replaced by `***`, a path as it is. */
export function redactStoreUrl(url: string): string {
  return /^postgres(?:ql)?:\/\//i.test(url) ? redactPostgresUrl(url) : url;
}

/** The URL with its password replaced by `***`, even when it does not parse. */
export function redactPostgresUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    for (const key of [...parsed.searchParams.keys()]) if (/pass/i.test(key)) parsed.searchParams.set(key, '***');
    return parsed.toString();
  } catch {
    return String(url)
      .replace(/(\/\/[^/@:]*:)[^@/]*@/, '$1***@')
      .replace(/(pass[a-z]*=)[^&]*/gi, '$1***')
      .slice(0, 200);
  }
}

/**
 * The same store URL with another schema: one database, several stores (tests use a fresh schema
 * per case).
 * @example withPostgresSchema('postgres://u:p@db/engram', 'team_a') // postgres://u:p@db/engram?schema=team_a
 */
export function withPostgresSchema(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('schema', schema);
  return parsed.toString();
}

function whole(
  raw: string | undefined,
  name: string,
  minimum: number,
  maximum: number,
  fallback: number,
  redactedUrl: string,
): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < minimum || value > maximum) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid ${name}=${JSON.stringify(raw.slice(0, 40))} in the Postgres store URL ${redactedUrl}: a whole number from ${minimum} to ${maximum}.`,
    );
  }
  return value;
}

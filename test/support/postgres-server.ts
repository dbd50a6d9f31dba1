/**
 * A real PostgreSQL server for the Postgres tests, as a vitest global setup (project `postgres` in
 * vitest.config.ts): started once per run, before any Postgres test file, and stopped after all.
 *
 * - `ENGRAM_TEST_POSTGRES_URL` set (CI sets it): that server is used as it is.
 * - Otherwise, if PostgreSQL server binaries are found (`ENGRAM_TEST_POSTGRES_BIN`, else
 *   /usr/lib/postgresql/<15..>/bin), a throwaway cluster is made in a temp folder: initdb, a
 *   password for TCP, 127.0.0.1 on a free port, no Unix socket, fsync off (nothing in it outlives
 *   the run), then a role and a database `engram` for the tests. As root, the binaries run as the
 *   `postgres` user (they refuse to run as root).
 * - Neither: with CI=true the run fails; otherwise the Postgres tests are skipped with the reason.
 *
 * Tests read the URL with `inject('postgresUrl')` (empty when skipped, with `postgresSkipReason`).
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { appendFile, chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
    postgresSkipReason: string;
    /** The server's data folder when this process may read it (the cluster it started, or ENGRAM_TEST_POSTGRES_DATA); else ''. */
    postgresDataDirectory: string;
  }
}

/** A running server the tests may use, and how to stop it (a no-op for a server given by URL). */
export interface PostgresServer {
  url: string;
  /** The data folder, when known: the purge tests read its table files byte for byte. */
  dataDirectory?: string;
  stop(): Promise<void>;
}

const TEST_ROLE = 'engram';
const TEST_PASSWORD = 'engram-test-password';

/** The folder with initdb, pg_ctl and postgres, or undefined. */
export function findPostgresBinaries(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const configured = env.ENGRAM_TEST_POSTGRES_BIN;
  if (configured) return existsSync(join(configured, 'postgres')) ? configured : undefined;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .map(Number)
    .filter((version) => version >= 15)
    .sort((a, b) => a - b);
  for (const version of versions) {
    const bin = join(root, String(version), 'bin');
    if (existsSync(join(bin, 'postgres')) && existsSync(join(bin, 'initdb'))) return bin;
  }
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** Runs a server binary, as the `postgres` user when this process is root (the binaries refuse root). */
async function runServerBinary(bin: string, program: string, args: string[]): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  const [command, commandArgs] = asRoot
    ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]]
    : [join(bin, program), args];
  try {
    await run(command, commandArgs, { timeout: 120_000 });
  } catch (error) {
    const { stderr, stdout } = error as { stderr?: string; stdout?: string };
    throw new Error(`${program} failed: ${(stderr || stdout || (error as Error).message).trim()}`);
  }
}

/** Starts a throwaway cluster from the binaries in `bin` and makes the tests' role and database. */
export async function startThrowawayCluster(bin: string): Promise<PostgresServer> {
  const folder = await mkdtemp(join(tmpdir(), 'engram-postgres-'));
  const data = join(folder, 'data');
  const passwordFile = join(folder, 'superuser-password');
  const superuserPassword = `super-${process.pid}-${Date.now()}`;
  await writeFile(passwordFile, `${superuserPassword}\n`, { mode: 0o600 });
  if (process.getuid?.() === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: group } = await run('id', ['-g', 'postgres']);
    await chown(folder, Number(stdout.trim()), Number(group.trim()));
    await chown(passwordFile, Number(stdout.trim()), Number(group.trim()));
  }
  await chmod(folder, 0o700);
  const port = await freePort();
  const stop = async (): Promise<void> => {
    await runServerBinary(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    await rm(folder, { recursive: true, force: true });
  };
  try {
    await runServerBinary(bin, 'initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      `--pwfile=${passwordFile}`,
      '--auth-host=scram-sha-256',
      '--auth-local=trust',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    // Throwaway: no fsync, no Unix socket, loopback only, room for the pools of parallel test files.
    await appendFile(
      join(data, 'postgresql.conf'),
      [
        "listen_addresses = '127.0.0.1'",
        `port = ${port}`,
        "unix_socket_directories = ''",
        'fsync = off',
        'synchronous_commit = off',
        'full_page_writes = off',
        'max_connections = 300',
        '',
      ].join('\n'),
    );
    // The tests' role logs in without a password check (a password exchange costs more than a test
    // case's queries); every other role, e.g. the one the wrong-password test makes, needs its password.
    await writeFile(
      join(data, 'pg_hba.conf'),
      [
        `host all ${TEST_ROLE} 127.0.0.1/32 trust`,
        'host all all 127.0.0.1/32 scram-sha-256',
        'local all all trust',
        '',
      ].join('\n'),
    );
    if (process.getuid?.() === 0) await run('chown', ['postgres:postgres', join(data, 'pg_hba.conf')]);
    await runServerBinary(bin, 'pg_ctl', ['-D', data, '-l', join(folder, 'server.log'), '-w', '-t', '60', 'start']);
    const admin = new pg.Client({
      host: '127.0.0.1',
      port,
      user: 'postgres',
      password: superuserPassword,
      database: 'postgres',
    });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE ${TEST_ROLE} LOGIN CREATEROLE PASSWORD '${TEST_PASSWORD}'`);
      await admin.query(`CREATE DATABASE ${TEST_ROLE} OWNER ${TEST_ROLE}`);
      // The purge tests flush the server's buffers to read its table files (PostgreSQL 15+).
      await admin.query(`GRANT pg_checkpoint TO ${TEST_ROLE}`).catch(() => undefined);
    } finally {
      await admin.end();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `postgres://${TEST_ROLE}:${TEST_PASSWORD}@127.0.0.1:${port}/${TEST_ROLE}`, dataDirectory: data, stop };
}

/** The server for this run: the one named by ENGRAM_TEST_POSTGRES_URL, a throwaway cluster, or the reason there is none. */
export async function resolvePostgresServer(
  env: NodeJS.ProcessEnv = process.env,
): Promise<PostgresServer | { skipReason: string }> {
  const url = env.ENGRAM_TEST_POSTGRES_URL;
  if (url) return { url, dataDirectory: env.ENGRAM_TEST_POSTGRES_DATA || undefined, stop: async () => undefined };
  const bin = findPostgresBinaries(env);
  if (bin) return startThrowawayCluster(bin);
  return {
    skipReason:
      'no PostgreSQL: ENGRAM_TEST_POSTGRES_URL is unset and no server binaries were found (install postgresql-15 or set ENGRAM_TEST_POSTGRES_BIN; see DEVELOPERS.md)',
  };
}

/** vitest global setup: provides `postgresUrl` (or `postgresSkipReason`) and stops the cluster it started. */
export default async function setup(project: {
  provide(key: 'postgresUrl' | 'postgresSkipReason' | 'postgresDataDirectory', value: string): void;
}): Promise<() => Promise<void>> {
  const server = await resolvePostgresServer();
  if ('skipReason' in server) {
    if (process.env.CI === 'true') throw new Error(`CI=true but the Postgres tests cannot run: ${server.skipReason}`);
    process.stderr.write(`\nSkipping the Postgres tests: ${server.skipReason}\n\n`);
    project.provide('postgresUrl', '');
    project.provide('postgresSkipReason', server.skipReason);
    project.provide('postgresDataDirectory', '');
    return async () => undefined;
  }
  project.provide('postgresUrl', server.url);
  project.provide('postgresSkipReason', '');
  project.provide('postgresDataDirectory', server.dataDirectory ?? '');
  return () => server.stop();
}

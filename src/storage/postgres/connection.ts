import postgres from 'postgres';
import type { lateReport } from '../late-report.js';
import { databaseReason, isStorageUnavailable } from '../unavailable.js';
import { watchedSocket } from './answer-watch.js';

/** As --pg-pool-max's default; connections open on demand, so the token CLI uses one or two. */
export const DEFAULT_POOL_MAX = 10;

export interface ConnectOptions {
  /**
   * The URL leads to a transaction-pooling PgBouncer, where consecutive statements may run on
   * different server connections, so a statement prepared on one is unknown on the next: none is
   * prepared. (A URL may also say `?prepare=false` itself.)
   */
  pooled?: boolean;
  /**
   * The server's `--database-timeout`: the longest wait for a connection, and for an answer owed on
   * one (answer-watch.ts) before the connection is dropped. Absent (the CLI, migrations): the
   * driver's own, since a copy or an index build may legitimately take longer.
   */
  timeoutMs?: number;
  /** False: only connecting is bounded by `timeoutMs`, not the answers (migrations). */
  watchAnswers?: boolean;
  /** Told each time a connection is dropped for want of an answer. */
  onExpired?: () => void;
}

/** Keep-alive probes on idle connections: a peer that vanished is found before a query waits on it. */
const KEEP_ALIVE_MS = 10_000;

/**
 * Waits before redialling a connection that failed, in seconds, by failures in a row: 0.05 s
 * doubling to at most 0.5 s. postgres.js's own grows to 20 s, so that after an outage of a minute
 * the first request could wait that long for a database that was already back.
 */
const redialDelay = (failures: number) => Math.min(0.05 * 2 ** failures, 0.5);

/** A pool; its connections open on demand. */
export function connect(
  url: string,
  poolMax: number,
  { pooled = false, timeoutMs, watchAnswers = true, onExpired }: ConnectOptions = {},
) {
  return postgres(url, {
    max: poolMax,
    ...(pooled && { prepare: false }),
    // int8 as BigInt both ways: an id beyond 2^53 never passes through a JS number.
    types: { bigint: postgres.BigInt },
    // Notices such as "relation already exists, skipping" would land in the CLI's standard output.
    onnotice: () => {},
    connection: { application_name: 'plant-store' },
    backoff: redialDelay,
    keep_alive: KEEP_ALIVE_MS / 1000,
    ...(timeoutMs !== undefined && { connect_timeout: Math.ceil(timeoutMs / 1000) }),
    ...(timeoutMs !== undefined &&
      watchAnswers && {
        socket: ({ host, port, path }: { host: string[]; port: number[]; path?: string | false }) =>
          watchedSocket({
            host: host[0]!,
            port: port[0]!,
            path: path || undefined,
            timeoutMs,
            keepAliveMs: KEEP_ALIVE_MS,
            onExpired,
          }),
      }),
  });
}

export type Sql = ReturnType<typeof connect>;
/** A connection inside `sql.begin`. */
export type Tx = postgres.TransactionSql<{ bigint: bigint }>;

// Reaching the database at start (index.ts): a URL that cannot be parsed, a database that does
// not exist, and one that does not answer yet.

/** Waits between tries of a database that does not answer at start: 0.5 s doubling to 10 s. */
const START_RETRY_MS = { first: 500, max: 10_000 };

/** A URL postgres.js could not take apart is refused before anything is tried. */
export function assertParses(url: string): void {
  try {
    new URL(url);
  } catch {
    throw new DatabaseUrlInvalid(`the database URL cannot be parsed: ${url.replace(/\/\/[^@/]*@/, '//***@')}`);
  }
}

class DatabaseUrlInvalid extends Error {
  readonly code = 'DATABASE_URL_INVALID';
}

/** PostgreSQL's code for a database that does not exist. */
const NO_SUCH_DATABASE = '3D000';

/**
 * A database that does not exist, said with how to create it: the server creates the tables, not
 * the database (docs/postgres.md). Any other error as it is.
 */
export function withCreateHint(error: unknown, url: string): unknown {
  if ((error as { code?: string }).code !== NO_SUCH_DATABASE) return error;
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  return new DatabaseMissing(
    `${(error as Error).message}: create it first, with createdb ${JSON.stringify(name)} ` +
      `(the client tools, as a user who may create databases) or CREATE DATABASE "${name}"; in psql`,
    { cause: error },
  );
}

class DatabaseMissing extends Error {
  readonly code = NO_SUCH_DATABASE;
}

/** Tries `prepare` until it succeeds (resolves) or fails for good (rejects), each transient failure one warn line. */
export async function untilPrepared(
  prepare: () => Promise<void>,
  first: unknown,
  report: ReturnType<typeof lateReport>,
) {
  let delay = START_RETRY_MS.first;
  let error = first;
  for (;;) {
    report.log(
      'warn',
      { reason: databaseReason(error), retryInMs: delay },
      'database: not reachable at start; serving 503 until it answers',
    );
    await new Promise((resolve) => setTimeout(resolve, delay).unref());
    delay = Math.min(delay * 2, START_RETRY_MS.max);
    try {
      return await prepare();
    } catch (next) {
      if (!isStorageUnavailable(next)) throw next;
      error = next;
    }
  }
}

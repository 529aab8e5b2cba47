/**
 * Errors that mean "the store cannot be reached or is overloaded right now", not "this request is
 * wrong": they become 503 with Retry-After rather than 500. Codes from node's sockets, postgres.js
 * and PostgreSQL's SQLSTATE classes 08 (connection), 53 (resources) and 57P (shutdown), and SQLite.
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  // A write after the database closed the connection (a terminated backend, a restart).
  'EPIPE',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  // The resolver did not answer: the database's host name cannot be looked up now.
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  // The SQLite writer thread ended with the write in flight (sqlite/writer-thread.ts): its outcome is unknown.
  'WRITER_THREAD_ENDED',
  'DATABASE_UNAVAILABLE',
]);

export function isStorageUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return UNAVAILABLE_CODES.has(code) || diskFault(error) !== null || /^(08|53|57P)/.test(code);
}

/** Whether SQLite's disk refused: `full` (SQLITE_FULL, ENOSPC) or `io` (the SQLITE_IOERR family); else null. */
export function diskFault(error: unknown): 'full' | 'io' | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'SQLITE_FULL') return 'full';
  return typeof code === 'string' && code.startsWith('SQLITE_IOERR') ? 'io' : null;
}

/**
 * A database error as a log line's `reason`: its message, and where to look when the message alone
 * does not say (PgBouncer's refusals name no cause; its own log does).
 */
export function databaseReason(error: unknown): string {
  const message = (error as Error).message;
  return /bouncer config error/i.test(message)
    ? `${message}: PgBouncer's own settings cannot serve this login (such as auth_type = any without user= on the database's line, or an auth_user or auth_dbname it cannot use); PgBouncer's log names the cause (docs/pgbouncer.md)`
    : message;
}

/** What the 503 for an unavailable store says: the cause when the client can do something with it. */
export function unavailableMessage(error: unknown): string {
  switch (diskFault(error)) {
    case 'full':
      return "the store's disk is full: writes are refused until space is freed; retry later";
    case 'io':
      return "the store's disk reported an I/O error; retry later";
    default:
      return error instanceof DatabaseUnavailable ? error.message : 'the store is unavailable right now; retry shortly';
  }
}

/**
 * The database could not be reached, or did not answer in time (postgres/bounded.ts): a 503 whose
 * message says which. `code` makes it unavailable above (isStorageUnavailable) without its class.
 */
export class DatabaseUnavailable extends Error {
  readonly code = 'DATABASE_UNAVAILABLE';
}

/** The 503 of a wait on the database that reached `--database-timeout`: one call's, or one request's in all. */
export function databaseTimedOut(timeoutMs: number): DatabaseUnavailable {
  return new DatabaseUnavailable(`the database did not answer within ${timeoutMs / 1000} s; retry shortly`);
}

/**
 * Whether a failed write transaction may have committed all the same: the database was cut off
 * or did not answer after its COMMIT may have been sent. SQLite's refusals (busy, a full disk)
 * roll the transaction back before they are raised, so theirs is known.
 */
export function outcomeUnknown(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return isStorageUnavailable(error) && !(typeof code === 'string' && code.startsWith('SQLITE_'));
}

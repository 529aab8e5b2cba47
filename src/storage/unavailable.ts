/**
 * Errors that mean "the store cannot be reached or is overloaded right now", not "this request is
 * wrong": they become 503 with Retry-After rather than 500. Codes from node's sockets, postgres.js
 * and PostgreSQL's SQLSTATE classes 08 (connection), 53 (resources) and 57P (shutdown), and SQLite.
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_FULL',
]);

export function isStorageUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return UNAVAILABLE_CODES.has(code) || /^(08|53|57P)/.test(code);
}

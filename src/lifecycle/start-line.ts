import type { Config } from '../config.js';
import { VERSION } from '../version.js';

interface Log {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** A store URL fit for a log: a PostgreSQL password becomes `***` (SQLite paths hold none). */
export function loggableStore(database: string): string {
  if (!/^postgres(ql)?:/.test(database)) return database;
  try {
    const url = new URL(database);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return 'postgres://(an unreadable URL)';
  }
}

/**
 * The first lines of a server's log, written once by the process in charge (the primary of
 * --workers, or the one process): what runs, on which store, with how many processes, so that a
 * log says what produced it. And a warning while webhooks may reach private addresses, a
 * development setting that must not reach production unnoticed.
 */
export function logStart(log: Log, config: Config) {
  log.info(
    { version: VERSION, store: loggableStore(config.database), workers: config.workers },
    `plant-store ${VERSION} starting`,
  );
  if (config.webhookAllowPrivate) {
    log.warn(
      { webhookAllowPrivate: true },
      '--webhook-allow-private is on: webhooks may go to http:// and to loopback, private and link-local ' +
        'addresses (cloud metadata included); for development and tests only, never in production',
    );
  }
}

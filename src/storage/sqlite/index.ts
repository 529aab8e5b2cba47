import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Storage } from '../types.js';
import { sqliteEvents } from './events.js';
import { migrate } from './migrations.js';
import { sqlitePlants } from './plants.js';
import { sqliteTokens } from './tokens.js';
import { sqliteWebhooks } from './webhooks.js';

export function sqlitePath(url: string): string {
  return url.slice('sqlite:'.length);
}

/** The embedded store: one file, WAL, every commit fsynced. `feed` false: no change-feed events are written. */
export function openSqlite(url: string, feed = true): Storage {
  const path = sqlitePath(url);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  // FULL: the WAL is fsynced at every commit, so a 200 survives a power cut.
  db.pragma('synchronous = FULL');
  migrate(db);
  const ping = db.prepare('SELECT 1');
  const events = sqliteEvents(db, feed);
  // The webhook deliverer's connection: its commits are not synced one by one (see webhooks.ts).
  const deliveries = path === ':memory:' ? db : new Database(path);
  if (deliveries !== db) {
    deliveries.pragma('busy_timeout = 5000');
    deliveries.pragma('synchronous = NORMAL');
  }

  return {
    engine: 'sqlite',
    ...sqlitePlants(db, events.feedQueue),
    ...events.storage,
    ...sqliteTokens(db),
    ...sqliteWebhooks(db, deliveries),
    async ping() {
      ping.get();
    },
    async close() {
      if (deliveries !== db) deliveries.close();
      db.close();
    },
  };
}

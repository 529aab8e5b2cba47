import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { lateReport } from '../late-report.js';
import type { Storage } from '../types.js';
import { openConnection } from './connection.js';
import { DiskWatch, diskProbe } from './disk-watch.js';
import { sqliteEvents } from './events.js';
import { migrate } from './migrations.js';
import { plantWriter, type WriteTransaction } from './plant-writer.js';
import { sqlitePlants } from './plants.js';
import { OwnTicks, plantsVersion } from './plants-clock.js';
import { sqliteTokens } from './tokens.js';
import { sqliteWebhooks } from './webhooks.js';
import { threadWriter, type Writer } from './writer-thread.js';

export function sqlitePath(url: string): string {
  return url.slice('sqlite:'.length);
}

export interface SqliteOptions {
  /** False: no change-feed events are written. */
  feed: boolean;
  /**
   * Where write transactions run: `thread`, a writer thread of their own (writer-thread.ts);
   * `inline`, on the event loop. A `:memory:` store is one connection, so always inline.
   */
  writer: 'thread' | 'inline';
}

/** The embedded store: one file, WAL, every commit fsynced. */
export function openSqlite(url: string, { feed, writer: where }: SqliteOptions): Storage {
  const path = sqlitePath(url);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = openConnection(path);
  migrate(db);
  const ping = db.prepare('SELECT 1');
  const own = OwnTicks.create();
  const report = lateReport();
  const disk = new DiskWatch(path, report);
  const writer: Writer =
    where === 'thread' && path !== ':memory:'
      ? threadWriter(path, feed, own, report)
      : inline(plantWriter(db, feed, own), diskProbe(db));

  return {
    engine: 'sqlite',
    // A `:memory:` store is one connection, which no other thread can reach.
    deliverySource: path === ':memory:' ? null : { engine: 'sqlite', path },
    ...sqlitePlants(db, (changes) => disk.write(() => writer.apply(changes)), plantsVersion(db, own)),
    ...sqliteEvents(db),
    ...sqliteTokens(db),
    ...sqliteWebhooks(db),
    // Reads answer while the disk is full; readiness says whether writes do too.
    async ping() {
      ping.get();
      writer.check();
      await disk.check(() => writer.probe());
    },
    reportTo: report.reportTo,
    async close() {
      await writer.close();
      db.close();
    },
  };
}

/** The transactions on the event loop (`--sqlite-writer inline`; docs/operating.md compares the two). */
function inline(write: WriteTransaction, probe: () => void): Writer {
  return {
    async apply(changes) {
      return write(changes);
    },
    async probe() {
      probe();
    },
    check() {},
    async close() {},
  };
}

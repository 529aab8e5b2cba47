import type Database from 'better-sqlite3';
import { plantEventPayload, type PlantEventType } from '../../events/plant-event.js';
import type { FeedEvent, FeedStorage } from '../types/feed.js';
import type { PlantRecord } from '../types/plants.js';
import { NO_EVENTS, type EventQueue } from './outbox.js';
import { PRUNE_CHUNK_ROWS } from '../chunks.js';

/**
 * The change feed of the embedded store. A write transaction holds the one write lock from its
 * first statement to its commit, so numbering the events inside it (the account's last number,
 * plus one for each) hands the numbers out in commit order with no gaps: a reader that has seen
 * n never misses n - 1.
 *
 * Call the returned function at the start of each write transaction, as the outbox's, on the
 * writer's connection; with the feed off (`--event-retention 0`) it answers a queue that does nothing.
 */
export function feedQueues(db: Database.Database, enabled: boolean): () => EventQueue {
  const lastSeq = db.prepare('SELECT last_seq FROM account_events WHERE account = ?').safeIntegers(true).pluck();
  const setLastSeq = db.prepare(
    `INSERT INTO account_events (account, last_seq, pruned_through) VALUES (?, ?, 0)
     ON CONFLICT (account) DO UPDATE SET last_seq = excluded.last_seq`,
  );
  const insert = db.prepare(
    'INSERT INTO events (account, seq, event_id, event_type, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );

  return () => {
    if (!enabled) return NO_EVENTS;
    const pending: [account: string, eventId: string, type: string, payload: string][] = [];
    return {
      queue(account, type, eventId, payload) {
        pending.push([account, eventId, type, payload]);
      },
      flush() {
        if (pending.length === 0) return;
        const now = Date.now();
        const next = new Map<string, bigint>();
        for (const [account, eventId, type, payload] of pending) {
          const seq = (next.get(account) ?? (lastSeq.get(account) as bigint | undefined) ?? 0n) + 1n;
          next.set(account, seq);
          insert.run(account, seq, eventId, type, payload, now);
        }
        for (const [account, seq] of next) setLastSeq.run(account, seq);
      },
    };
  };
}

/** The feed as readers and retention see it, on the main connection. */
export function sqliteEvents(db: Database.Database) {
  const head = db
    .prepare('SELECT last_seq, pruned_through FROM account_events WHERE account = ?')
    .safeIntegers(true)
    .raw(true);
  const heads = db
    .prepare('SELECT account, last_seq FROM account_events WHERE account IN (SELECT value FROM json_each(?))')
    .safeIntegers(true)
    .raw(true);
  const after = db
    .prepare(
      'SELECT seq, event_id, event_type, payload FROM events WHERE account = ? AND seq > ? ORDER BY seq LIMIT ? + 0',
    )
    .safeIntegers(true)
    .raw(true);
  const oldest = db
    .prepare('SELECT account, seq FROM events WHERE created_at < ? ORDER BY created_at LIMIT ? + 0')
    .safeIntegers(true)
    .raw(true);
  const remove = db.prepare('DELETE FROM events WHERE account = ? AND seq = ?');
  const raisePruned = db.prepare('UPDATE account_events SET pruned_through = max(pruned_through, ?) WHERE account = ?');
  const key = db.prepare('SELECT key FROM feed_key WHERE id = 1').pluck();

  /** One chunk of old events removed, each account's pruned_through raised with it. */
  const pruneChunk = db.transaction((before: number): number => {
    const rows = oldest.all(before, PRUNE_CHUNK_ROWS) as [string, bigint][];
    const highest = new Map<string, bigint>();
    for (const [account, seq] of rows) {
      remove.run(account, seq);
      if (seq > (highest.get(account) ?? 0n)) highest.set(account, seq);
    }
    for (const [account, seq] of highest) raisePruned.run(seq, account);
    return rows.length;
  });

  return {
    async feedKey() {
      return Buffer.from(key.get() as string, 'hex');
    },
    async feedHead(account) {
      const row = head.get(account) as [bigint, bigint] | undefined;
      return { lastSeq: row?.[0] ?? 0n, prunedThrough: row?.[1] ?? 0n };
    },
    async feedHeads(accounts) {
      const rows = heads.all(JSON.stringify(accounts)) as [string, bigint][];
      return new Map(rows);
    },
    async feedEvents(account, afterSeq, limit) {
      const rows = after.all(account, afterSeq, limit) as [bigint, string, FeedEvent['type'], string][];
      return rows.map(([seq, eventId, type, payload]) => ({ seq, eventId, type, payload }));
    },
    async pruneEvents(before) {
      let removed = 0;
      for (;;) {
        const count = pruneChunk.immediate(before.getTime());
        removed += count;
        if (count < PRUNE_CHUNK_ROWS) return removed;
      }
    },
  } satisfies FeedStorage;
}

/** A transaction's changes as its event queues take them. */
export interface PlantEvents {
  queue(account: string, type: PlantEventType, eventId: string, plant: PlantRecord): void;
  flush(): void;
}

/** Hands every event to both, the webhook outbox and the feed, its payload made once (none when neither records). */
export function bothQueues(outbox: EventQueue, feed: EventQueue): PlantEvents {
  if (outbox === NO_EVENTS && feed === NO_EVENTS) return { queue() {}, flush() {} };
  return {
    queue(account, type, eventId, plant) {
      const payload = plantEventPayload(plant);
      outbox.queue(account, type, eventId, payload);
      feed.queue(account, type, eventId, payload);
    },
    flush() {
      outbox.flush();
      feed.flush();
    },
  };
}

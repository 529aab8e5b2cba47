import type Database from 'better-sqlite3';
import type { PlantEventType } from '../../events/plant-event.js';
import type { DeliveryRow } from '../webhook-rows.js';
import { hasRoom } from './claim-share.js';

/**
 * The events of one write transaction: `queue` each change's event (its payload made once for the
 * outbox and the feed: sqlite/events.ts, bothQueues), `flush` before the commit.
 */
export interface EventQueue {
  queue(account: string, type: PlantEventType, eventId: string, payload: string): void;
  flush(): void;
}

/** A queue that records nothing: no endpoint to deliver to, or the feed off. */
export const NO_EVENTS: EventQueue = { queue() {}, flush() {} };

/** An enabled endpoint of an account, and the [event id, type, payload] triples this transaction has for it. */
interface Subscriber {
  id: string;
  /** Space-separated with a space at each end, so ' plant.created ' finds a whole word. */
  events: string;
  triples: [string, PlantEventType, string][];
}

/**
 * The transactional outbox of the embedded store. The events of a transaction are written in it,
 * so they commit (durably) with the changes they report, or not at all; for each enabled endpoint
 * subscribed to an event's type, one row per transaction holds them all (`webhook_outbox`,
 * migration 4), which the deliverer unpacks into delivery rows off the request path (webhook-deliveries.ts).
 *
 * Call the returned function at the start of each write transaction: in a store without any
 * enabled endpoint (most stores) it answers a queue that does nothing, so that such a store spends
 * one query per batch instead of one per change. Exact: the transaction holds the write lock, so no
 * endpoint can appear or go before it commits.
 */
export function outbox(db: Database.Database): () => EventQueue {
  const anyEndpoint = db.prepare('SELECT 1 FROM webhook_endpoints WHERE enabled = 1 LIMIT 1').pluck();
  const subscribersOf = db.prepare('SELECT id, events FROM webhook_endpoints WHERE account = ? AND enabled = 1');
  const insert = db.prepare(
    `INSERT INTO webhook_outbox (account, endpoint_id, first_event_id, events, event_count, created_at)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );

  function transactionQueue(): EventQueue {
    const byAccount = new Map<string, Subscriber[]>();
    return {
      queue(account, type, eventId, payload) {
        let subscribers = byAccount.get(account);
        if (subscribers === undefined) {
          const rows = subscribersOf.all(account) as { id: string; events: string }[];
          subscribers = rows.map((row) => ({ ...row, triples: [] }));
          byAccount.set(account, subscribers);
        }
        const word = ` ${type} `;
        for (const subscriber of subscribers) {
          if (subscriber.events.includes(word)) subscriber.triples.push([eventId, type, payload]);
        }
      },
      flush() {
        const now = Date.now();
        for (const [account, subscribers] of byAccount) {
          for (const { id, triples } of subscribers) {
            if (triples.length === 0) continue;
            insert.run(account, id, triples[0]![0], JSON.stringify(triples), triples.length, now);
          }
        }
      },
    };
  }

  return () => (anyEndpoint.get() === undefined ? NO_EVENTS : transactionQueue());
}

/** Endpoints whose oldest row one round of `unpackOldest` takes. */
const UNPACK_ENDPOINTS_PER_ROUND = 64;

interface OutboxHead {
  account: string;
  endpoint_id: string;
  first_event_id: string;
  event_count: number;
}

/** The outbox rows as the deliverer and the webhooks API read them, on either connection. */
export function outboxRows(conn: Database.Database) {
  const deliveriesFrom = (where: string) =>
    conn.prepare(
      `INSERT INTO webhook_deliveries
         (account, endpoint_id, event_id, event_type, payload, created_at, state, attempts, next_attempt_at, updated_at)
       SELECT o.account, o.endpoint_id, e.value ->> 0, e.value ->> 1, e.value ->> 2, o.created_at, 'pending', 0,
              o.created_at, o.created_at
       FROM webhook_outbox o, json_each(o.events) e WHERE ${where}`,
    );
  const unpackOne = deliveriesFrom('o.account = ? AND o.endpoint_id = ? AND o.first_event_id = ?');
  const removeOne = conn.prepare(
    'DELETE FROM webhook_outbox WHERE account = ? AND endpoint_id = ? AND first_event_id = ?',
  );
  // The oldest row of each endpoint (SQLite takes the bare columns from the row min() picks; event
  // ids grow with time), endpoints by the age of that row: one backlog cannot keep the others in.
  // Accounts and endpoints with all the attempts in flight they may have (`full`: claim-share.ts)
  // wait: their events could not be claimed now anyway.
  const oldestPerEndpoint = conn.prepare(
    `SELECT account, endpoint_id, min(first_event_id) AS first_event_id, event_count, created_at
     FROM webhook_outbox o WHERE ${hasRoom('o')}
     GROUP BY account, endpoint_id ORDER BY created_at LIMIT @limit`,
  );
  const unpackEndpoint = deliveriesFrom('o.account = ? AND o.endpoint_id = ?');
  const unpackAll = deliveriesFrom('1');
  const removeAll = conn.prepare('DELETE FROM webhook_outbox');
  const removeEndpoint = conn.prepare('DELETE FROM webhook_outbox WHERE account = ? AND endpoint_id = ?');
  const any = conn.prepare(`SELECT 1 FROM webhook_outbox o WHERE ${hasRoom('o')} LIMIT 1`).pluck();
  const newest = conn.prepare(
    `SELECT e.value ->> 0 AS event_id, e.value ->> 1 AS event_type, o.created_at
     FROM (SELECT events, created_at FROM webhook_outbox WHERE account = ? AND endpoint_id = ?
           ORDER BY created_at DESC LIMIT ? + 0) o, json_each(o.events) e`,
  );
  const backlog = conn.prepare(
    'SELECT coalesce(sum(event_count), 0) AS pending, min(created_at) AS oldest FROM webhook_outbox',
  );

  return {
    /** Whether any event waits in the outbox, but those of the `full` accounts and endpoints (see unpackOldest). */
    any: (full: string) => any.get({ full }) !== undefined,
    /**
     * Unpacks rows into pending deliveries, the oldest of each endpoint in turn (but those of the
     * accounts and endpoints in `full`: claim-share.ts), until at least `events` events are out
     * (a row holds at most one batch): bounded work, so the caller's transaction stays short.
     * Call inside a write transaction.
     */
    unpackOldest(events: number, full: string) {
      let unpacked = 0;
      while (unpacked < events) {
        const rows = oldestPerEndpoint.all({ full, limit: UNPACK_ENDPOINTS_PER_ROUND }) as OutboxHead[];
        if (rows.length === 0) return;
        for (const row of rows) {
          if (unpacked >= events) return;
          unpackOne.run(row.account, row.endpoint_id, row.first_event_id);
          removeOne.run(row.account, row.endpoint_id, row.first_event_id);
          unpacked += row.event_count;
        }
      }
    },
    /** Every event becomes a pending delivery row. Call inside a write transaction. */
    unpackAll() {
      unpackAll.run();
      removeAll.run();
    },
    /** Every event of the endpoint becomes a pending delivery row. Call inside a write transaction. */
    unpackEndpoint(account: string, endpointId: string) {
      unpackEndpoint.run(account, endpointId);
      removeEndpoint.run(account, endpointId);
    },
    removeEndpoint(account: string, endpointId: string) {
      removeEndpoint.run(account, endpointId);
    },
    /** Up to `limit` of the endpoint's newest events still in the outbox, as pending deliveries (unordered). */
    newestOf(account: string, endpointId: string, limit: number): DeliveryRow<number>[] {
      const rows = newest.all(account, endpointId, limit) as Pick<
        DeliveryRow<number>,
        'event_id' | 'event_type' | 'created_at'
      >[];
      return rows.map((row) => ({
        ...row,
        state: 'pending',
        attempts: 0,
        last_status: null,
        last_error: null,
        next_attempt_at: row.created_at,
      }));
    },
    backlog: () => backlog.get() as { pending: number; oldest: number | null },
  };
}

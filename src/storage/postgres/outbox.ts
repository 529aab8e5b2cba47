import { plantEventPayload, type PlantEventType } from '../../events/plant-event.js';
import type { PlantRecord } from '../types/plants.js';
import type { Sql, Tx } from './connection.js';

export interface QueuedEvent {
  account: string;
  type: PlantEventType;
  eventId: string;
  plant: PlantRecord;
}

/**
 * Writes a transaction's events in one statement, sent at once (plants.ts sends COMMIT right
 * behind it), inside the change's transaction and LAST in it:
 *
 * - to the webhook outbox: a delivery per enabled endpoint of the event's account subscribed to
 *   its type;
 * - with `feed`, to the change feed. A sequence number is not commit order on PostgreSQL: a
 *   transaction can take 7 and commit before the one that took 6, and a reader that saw 7 would
 *   then never read 6. So the numbers come from the account's row in `account_events`, raised by
 *   this transaction's count of events: the row lock it takes is held until the commit, so the
 *   next transaction of that account gets its numbers only once this one has committed (or rolled
 *   back, which gives its numbers back). Per account, numbers are handed out in commit order with
 *   no gaps, each account's events taking the numbers just below its new last_seq in the order
 *   they happened. The accounts are locked in one order (sorted) by every process, so two
 *   transactions that share accounts wait instead of deadlocking; and nothing is locked after
 *   them, so the wait is only for the other's commit.
 */
export function recordEvents(tx: Tx, events: QueuedEvent[], feed: boolean): Promise<void> {
  if (events.length === 0) return Promise.resolve();
  const q = tx`
    SELECT * FROM unnest(${tx.array(events.map((e) => e.account))}::text[],
                         ${tx.array(events.map((e) => e.eventId))}::text[],
                         ${tx.array(events.map((e) => e.type))}::text[],
                         ${tx.array(events.map((e) => plantEventPayload(e.plant)))}::text[])
      WITH ORDINALITY AS q(account, event_id, event_type, payload, position)`;
  if (!feed) return sent(tx`WITH q AS (${q}) ${outboxInsert(tx)}`);
  return sent(tx`WITH q AS (${q}), ${feedCtes(tx)} ${outboxInsert(tx)}`);
}

/**
 * The feed's part of the events' statement, as common table expressions reading `q` (account,
 * event_id, event_type, payload, position): the accounts' heads raised, and the events numbered
 * below them (see recordEvents for why).
 */
export const feedCtes = (sql: Sql | Tx) => (sql as Sql)`
    counts AS (SELECT account, count(*) AS n FROM q GROUP BY account),
    heads AS (
      INSERT INTO account_events (account, last_seq, pruned_through)
      SELECT account, n, 0 FROM counts ORDER BY account
      ON CONFLICT (account) DO UPDATE SET last_seq = account_events.last_seq + EXCLUDED.last_seq
      RETURNING account, last_seq
    ),
    feed AS (
      INSERT INTO events (account, seq, event_id, event_type, payload, created_at)
      SELECT q.account, h.last_seq - c.n + row_number() OVER (PARTITION BY q.account ORDER BY q.position),
             q.event_id, q.event_type, q.payload, now()
      FROM q JOIN heads h ON h.account = q.account JOIN counts c ON c.account = q.account
    )`;

/** The webhook outbox's part: a delivery of each event of `q` per enabled endpoint subscribed to it. */
export const outboxInsert = (sql: Sql | Tx) => (sql as Sql)`
    INSERT INTO webhook_deliveries
      (account, endpoint_id, event_id, event_type, payload, created_at, state, attempts, next_attempt_at, updated_at)
    SELECT e.account, e.id, q.event_id, q.event_type, q.payload, now(), 'pending', 0, now(), now()
    FROM q JOIN webhook_endpoints e ON e.account = q.account AND e.enabled AND q.event_type = ANY (e.events)`;

/** The statement sent now (postgres.js sends a query only when asked for its result), its rows dropped. */
const sent = (query: ReturnType<Tx>): Promise<void> => query.execute().then(() => {});

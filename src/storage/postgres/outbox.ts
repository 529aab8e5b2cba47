import { plantEventPayload, type PlantEventType } from '../../events/plant-event.js';
import type { PlantRecord } from '../types/plants.js';
import type { ClaimShare } from '../types/webhooks.js';
import type { DeliveryRow } from '../webhook-rows.js';
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
 * - to the webhook outbox: for each enabled endpoint of an account subscribed to some of its
 *   events, one row holding them all (outboxInsert);
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

/**
 * The webhook outbox's part: for each enabled endpoint subscribed to some events of `q`, one
 * `webhook_outbox` row holding them in the order they happened (migration 8).
 */
export const outboxInsert = (sql: Sql | Tx) => (sql as Sql)`
    INSERT INTO webhook_outbox (account, endpoint_id, first_event_id, events, event_count, created_at)
    SELECT e.account, e.id, (array_agg(q.event_id ORDER BY q.position))[1],
           json_agg(json_build_array(q.event_id, q.event_type, q.payload) ORDER BY q.position), count(*), now()
    FROM q JOIN webhook_endpoints e ON e.account = q.account AND e.enabled AND q.event_type = ANY (e.events)
    GROUP BY e.account, e.id`;

/**
 * The delivery rows of the outbox rows that a common table expression `taken` (account,
 * endpoint_id, events, created_at) took out: pending, due at once. (A DELETE ... RETURNING can
 * only feed another statement from a WITH.)
 */
const INSERT_TAKEN = `
    INSERT INTO webhook_deliveries
      (account, endpoint_id, event_id, event_type, payload, created_at, state, attempts, next_attempt_at, updated_at)
    SELECT t.account, t.endpoint_id, e ->> 0, e ->> 1, e ->> 2, t.created_at, 'pending', 0, t.created_at, now()
    FROM taken t, json_array_elements(t.events) e`;

/** What a `taken` expression returns. */
const TAKEN_COLUMNS = 'RETURNING account, endpoint_id, events, created_at';

/** Every event of the endpoint in the outbox becomes a pending delivery row (before its pending ones are failed). */
export async function unpackEndpoint(tx: Sql | Tx, account: string, endpointId: string) {
  await tx.unsafe(
    `WITH taken AS (DELETE FROM webhook_outbox WHERE account = $1 AND endpoint_id = $2 ${TAKEN_COLUMNS}) ${INSERT_TAKEN}`,
    [account, endpointId],
  );
}

/**
 * The rooms `share` leaves (fair-share.ts), as common table expressions: `endpoint_room` (account,
 * endpoint_id, room) and `account_room` (account, room), for the accounts and endpoints it lists.
 */
export function roomCtes(sql: Sql, share: ClaimShare) {
  return sql`
    endpoint_room AS (
      SELECT * FROM unnest(${sql.array(share.endpoints.map((e) => e.account))}::text[],
                           ${sql.array(share.endpoints.map((e) => e.endpointId))}::text[],
                           ${sql.array(share.endpoints.map((e) => e.room))}::int[])
        AS r(account, endpoint_id, room)
    ), account_room AS (
      SELECT * FROM unnest(${sql.array(share.accounts.map((a) => a.account))}::text[],
                           ${sql.array(share.accounts.map((a) => a.room))}::int[]) AS r(account, room)
    )`;
}

/**
 * The outbox as the deliverer and the webhooks API read it. Every change to it is one statement:
 * rows are taken out (DELETE ... RETURNING) and their events written as delivery rows together,
 * so an event is always in one of the two tables, and processes that unpack at once take
 * disjoint rows (SKIP LOCKED).
 */
export function postgresOutbox(sql: Sql) {
  return {
    /**
     * Before a claim: for each enabled endpoint (and account) with room, its oldest rows holding
     * what that room lacks among its due deliveries free to claim (the room already leaves out
     * those in flight). The rest stays packed: the deliveries table holds what the claims take.
     */
    async unpackFor(now: Date, share: ClaimShare, limit: number) {
      // No endpoint takes more than this in one claim (a room beyond the claim's `limit` is `limit`).
      const perEndpoint = Math.min(share.perEndpoint, limit);
      const most = Math.min(limit, Math.max(perEndpoint, ...share.endpoints.map((e) => e.room)));
      await sql`
        WITH ${roomCtes(sql, share)},
        wanting AS (
          SELECT e.account, e.id AS endpoint_id, least(coalesce(r.room, ${perEndpoint}), ${most}) - (
                   SELECT count(*) FROM (
                     SELECT 1 FROM webhook_deliveries d
                     WHERE d.account = e.account AND d.endpoint_id = e.id AND d.state = 'pending'
                       AND d.next_attempt_at <= ${now} AND (d.lease_until IS NULL OR d.lease_until < ${now})
                     LIMIT ${most}) due) AS want
          FROM webhook_endpoints e LEFT JOIN endpoint_room r ON r.account = e.account AND r.endpoint_id = e.id
          WHERE e.enabled AND coalesce(r.room, ${perEndpoint}) > 0
            AND NOT EXISTS (SELECT 1 FROM account_room a WHERE a.room <= 0 AND a.account = e.account)
        ), heads AS (
          SELECT o.ctid, w.want,
                 sum(o.event_count) OVER (PARTITION BY o.account, o.endpoint_id ORDER BY o.first_event_id)
                   - o.event_count AS before
          FROM wanting w CROSS JOIN LATERAL (
            SELECT o.ctid, o.account, o.endpoint_id, o.first_event_id, o.event_count FROM webhook_outbox o
            WHERE o.account = w.account AND o.endpoint_id = w.endpoint_id
            ORDER BY o.first_event_id LIMIT ${most}
            FOR UPDATE SKIP LOCKED) o
          WHERE w.want > 0
        ), taken AS (
          DELETE FROM webhook_outbox o USING heads h WHERE o.ctid = h.ctid AND h.before < h.want
          ${sql.unsafe(TAKEN_COLUMNS)}
        )
        ${sql.unsafe(INSERT_TAKEN)}`;
    },

    /**
     * Every event becomes a pending delivery row: before a copy reads the pending deliveries, and
     * when a process stops, so that a release before the packed outbox, rolled back to, finds
     * every event where it looks for them (CHANGELOG.md, 1.2.0).
     */
    async unpackAll() {
      await sql.unsafe(`WITH taken AS (DELETE FROM webhook_outbox ${TAKEN_COLUMNS}) ${INSERT_TAKEN}`);
    },

    /**
     * The endpoint's newest deliveries, those still packed in the outbox among them (as pending,
     * due when written), newest first: one statement, one snapshot, so an event another process
     * unpacks meanwhile is listed once.
     */
    async newestDeliveries(account: string, endpointId: string, limit: number): Promise<DeliveryRow<Date>[]> {
      return sql<DeliveryRow<Date>[]>`
        SELECT e ->> 0 AS event_id, e ->> 1 AS event_type, 'pending' AS state, 0 AS attempts,
               NULL::int AS last_status, NULL::text AS last_error, o.created_at AS next_attempt_at, o.created_at
        FROM (SELECT events, created_at FROM webhook_outbox WHERE account = ${account} AND endpoint_id = ${endpointId}
              ORDER BY first_event_id DESC LIMIT ${limit}) o, json_array_elements(o.events) e
        UNION ALL
        (SELECT event_id, event_type, state, attempts, last_status, last_error, next_attempt_at, created_at
         FROM webhook_deliveries WHERE account = ${account} AND endpoint_id = ${endpointId}
         ORDER BY created_at DESC, event_id DESC LIMIT ${limit})
        ORDER BY created_at DESC, event_id DESC LIMIT ${limit}`;
    },

    /** Pending events, packed or not, and the creation time of the oldest, in one snapshot. */
    async backlog() {
      const [row] = await sql<[{ pending: number; oldest: Date | null }]>`
        SELECT (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending')
                 + (SELECT coalesce(sum(event_count), 0) FROM webhook_outbox) AS pending,
               least((SELECT min(created_at) FROM webhook_deliveries WHERE state = 'pending'),
                     (SELECT min(created_at) FROM webhook_outbox)) AS oldest`;
      return { pending: Number(row.pending), oldestCreatedAt: row.oldest };
    },
  };
}

/** The statement sent now (postgres.js sends a query only when asked for its result), its rows dropped. */
const sent = (query: ReturnType<Tx>): Promise<void> => query.execute().then(() => {});

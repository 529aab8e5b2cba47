import type { DeliveryStorage } from '../types/webhooks.js';
import { POSTGRES_VALUES } from '../row-values.js';
import { toClaimed, type ClaimRow } from '../webhook-rows.js';
import type { Sql, Tx } from './connection.js';
import { postgresOutbox, roomCtes, unpackEndpoint } from './outbox.js';
import { PRUNE_CHUNK_ROWS } from '../chunks.js';

/** Fails the pending deliveries of an endpoint (disabled, or gone), those still in the outbox among them. */
export async function failPending(tx: Sql | Tx, account: string, endpointId: string, reason: string) {
  await unpackEndpoint(tx, account, endpointId);
  await tx`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, last_error = ${reason},
             lease_owner = NULL, lease_until = NULL, updated_at = now()
           WHERE account = ${account} AND endpoint_id = ${endpointId} AND state = 'pending'`;
}

/** The deliverer's side: the claim is the one statement that spans accounts, as a queue's consumer must. */
export function postgresDeliveries(sql: Sql) {
  const outbox = postgresOutbox(sql);
  return {
    async claimDeliveries(owner, now, leaseUntil, limit, share) {
      // What the endpoints with room are about to take comes out of the outbox first (outbox.ts).
      await outbox.unpackFor(now, share, limit);
      // SKIP LOCKED: processes claiming at once take disjoint rows instead of queueing on each
      // other; a row another committed claim leased meanwhile is re-checked and left out. Rows of
      // an account or endpoint with no room left are not read; of the rows locked, each endpoint
      // keeps to its room, and then each account (oldest first); the rest are left as they were.
      // The rows picked are updated at their place (ctid: the lock keeps them there for the
      // statement), and each result is written there too (LeasedKey): no index to choose, so no
      // plan that depends on the table's statistics, which a fresh backlog has none of.
      // No claim takes more than `limit` of anything: rooms past it are `limit` (and fit an int).
      const perEndpoint = Math.min(share.perEndpoint, limit);
      const perAccount = Math.min(share.perAccount, limit);
      const rows = await sql<ClaimRow<Date>[]>`
        WITH ${roomCtes(sql, share)}, heads AS (
          -- The due head of each enabled endpoint with room (webhook_deliveries_endpoint_due), oldest
          -- first: a full endpoint's backlog is never read, however long.
          SELECT e.account, e.id AS endpoint_id, coalesce(r.room, ${perEndpoint}) AS room, h.first_due
          FROM webhook_endpoints e
          LEFT JOIN endpoint_room r ON r.account = e.account AND r.endpoint_id = e.id
          CROSS JOIN LATERAL (
            SELECT d.next_attempt_at AS first_due FROM webhook_deliveries d
            WHERE d.account = e.account AND d.endpoint_id = e.id AND d.state = 'pending'
              AND d.next_attempt_at <= ${now} AND (d.lease_until IS NULL OR d.lease_until < ${now})
            ORDER BY d.next_attempt_at LIMIT 1) h
          WHERE e.enabled AND coalesce(r.room, ${perEndpoint}) > 0
            AND NOT EXISTS (SELECT 1 FROM account_room a WHERE a.room <= 0 AND a.account = e.account)
          ORDER BY h.first_due LIMIT ${limit}
        ), by_endpoint AS (
          -- Of each, its due events in order, as many as it may take. (A LIMIT the planner can
          -- read: one it cannot estimate made it plan for the whole table, and compile the plan.)
          SELECT d.ctid, d.account, d.endpoint_id, d.next_attempt_at, heads.room,
                 row_number() OVER (PARTITION BY d.account, d.endpoint_id ORDER BY d.next_attempt_at) AS nth
          FROM heads CROSS JOIN LATERAL (
            SELECT d.ctid, d.account, d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
            WHERE d.account = heads.account AND d.endpoint_id = heads.endpoint_id AND d.state = 'pending'
              AND d.next_attempt_at <= ${now} AND (d.lease_until IS NULL OR d.lease_until < ${now})
            ORDER BY d.next_attempt_at LIMIT ${limit}
            FOR UPDATE SKIP LOCKED) d
        ), by_account AS (
          SELECT b.ctid, b.account, b.next_attempt_at,
                 row_number() OVER (PARTITION BY b.account ORDER BY b.next_attempt_at) AS nth,
                 coalesce(r.room, ${perAccount}) AS room
          FROM by_endpoint b LEFT JOIN account_room r ON r.account = b.account
          WHERE b.nth <= b.room
        ), picked AS (
          SELECT ctid FROM by_account WHERE nth <= room
          ORDER BY next_attempt_at LIMIT ${limit}
        )
        UPDATE webhook_deliveries d SET lease_owner = ${owner}, lease_until = ${leaseUntil}
        FROM picked, webhook_endpoints e
        WHERE d.ctid = picked.ctid AND e.account = d.account AND e.id = d.endpoint_id
        RETURNING d.ctid::text AS row, d.account, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempts,
                  e.url, e.secret, e.previous_secret, e.previous_secret_until`;
      return rows.map((row) => toClaimed(row, POSTGRES_VALUES.date));
    },

    async recordAttempts(owner, results) {
      if (results.length === 0) return;
      // Every column as text (null stays null), cast in SQL: one array type for the driver to write.
      const column = (pick: (r: (typeof results)[number]) => string | number | Date | null) =>
        sql.array(
          results.map((r) => {
            const value = pick(r);
            return value === null ? null : value instanceof Date ? value.toISOString() : String(value);
          }) as string[],
        );
      // Planned for each batch, never from a cached generic plan (`prepare: false`, the driver's
      // unnamed statement): one made while the table was nearly empty (a fresh store, or one whose
      // events stay packed in the outbox until they are sent) joins by a scan of the whole table,
      // and kept that plan once it had grown: each batch of results then took some 20 ms, and
      // deliveries fell to half their rate (bench/analysis.md, "The PostgreSQL outbox packed").
      await sql.unsafe(
        `UPDATE webhook_deliveries d SET state = r.state, attempts = d.attempts + 1, next_attempt_at = r.next,
           last_status = r.status, last_error = r.error, lease_owner = NULL, lease_until = NULL, updated_at = now()
         FROM unnest($1::tid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::int[], $8::text[])
              AS r(row_at, account, endpoint_id, event_id, state, next, status, error)
         WHERE d.ctid = r.row_at AND d.account = r.account AND d.endpoint_id = r.endpoint_id
           AND d.event_id = r.event_id AND d.lease_owner = $9`,
        [
          column((r) => r.key.row),
          column((r) => r.key.account),
          column((r) => r.key.endpointId),
          column((r) => r.key.eventId),
          column((r) => r.record.state),
          column((r) => r.record.nextAttemptAt),
          column((r) => r.record.lastStatus),
          column((r) => r.record.lastError),
          owner,
        ] as never[],
        { prepare: false },
      );
    },

    async disableEndpoint(account, endpointId, reason) {
      await sql.begin(async (tx) => {
        await tx`UPDATE webhook_endpoints SET enabled = false WHERE account = ${account} AND id = ${endpointId}`;
        await failPending(tx, account, endpointId, reason);
      });
    },

    async pruneDeliveries(before) {
      let removed = 0;
      for (;;) {
        const { count } = await sql`
          DELETE FROM webhook_deliveries WHERE (account, endpoint_id, event_id) IN (
            SELECT account, endpoint_id, event_id FROM webhook_deliveries
            WHERE state <> 'pending' AND updated_at < ${before} LIMIT ${PRUNE_CHUNK_ROWS})`;
        removed += count;
        if (count < PRUNE_CHUNK_ROWS) return removed;
      }
    },

    deliveryBacklog: () => outbox.backlog(),
  } satisfies DeliveryStorage;
}

import type { PlantEventType } from '../../events/plant-event.js';
import type { WebhookEndpoint, WebhookStorage } from '../types/webhooks.js';
import type { Sql, Tx } from './connection.js';
import { toClaimed, toDelivery, type ClaimRow, type DeliveryRow } from '../webhook-rows.js';

/** postgres.js hands back timestamptz as a Date already. */
const asDate = (time: Date) => time;

/**
 * Endpoints and deliveries. Every statement of the API names the account; the deliverer's claim
 * is the one that spans accounts (it looks for whatever is due), as a queue's consumer must.
 */

/** Namespace of the per-account advisory lock that makes "at most N endpoints" atomic: ASCII "plaw". */
const ENDPOINT_LIMIT_LOCK = 0x706c6177;
const PRUNE_CHUNK = 1000;

interface EndpointRow {
  id: string;
  url: string;
  events: PlantEventType[];
  description: string;
  enabled: boolean;
  created_at: Date;
}

const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  url: row.url,
  events: row.events,
  description: row.description,
  enabled: row.enabled,
  createdAt: row.created_at,
});

const ENDPOINT_COLUMNS = ['id', 'url', 'events', 'description', 'enabled', 'created_at'];

async function failPending(tx: Sql | Tx, account: string, endpointId: string, reason: string) {
  await tx`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, last_error = ${reason},
             lease_owner = NULL, lease_until = NULL, updated_at = now()
           WHERE account = ${account} AND endpoint_id = ${endpointId} AND state = 'pending'`;
}

export function postgresWebhooks(sql: Sql): WebhookStorage {
  return {
    async createEndpoint(endpoint, maxPerAccount) {
      return sql.begin(async (tx) => {
        // Two creates for one account at once queue here, so the count below stays true until commit.
        await tx`SELECT pg_advisory_xact_lock(${ENDPOINT_LIMIT_LOCK}, hashtext(${endpoint.account}))`;
        const [{ n }] = await tx<[{ n: number }]>`
          SELECT count(*)::int AS n FROM webhook_endpoints WHERE account = ${endpoint.account}`;
        if (n >= maxPerAccount) return false;
        await tx`
          INSERT INTO webhook_endpoints (account, id, url, events, description, enabled, secret, created_at)
          VALUES (${endpoint.account}, ${endpoint.id}, ${endpoint.url}, ${tx.array(endpoint.events)}::text[],
                  ${endpoint.description}, ${endpoint.enabled}, ${endpoint.secret}, ${endpoint.createdAt})`;
        return true;
      });
    },

    async listEndpoints(account) {
      const rows = await sql<EndpointRow[]>`
        SELECT ${sql(ENDPOINT_COLUMNS)} FROM webhook_endpoints WHERE account = ${account} ORDER BY created_at, id`;
      return rows.map(toEndpoint);
    },

    async getEndpoint(account, id) {
      const [row] = await sql<EndpointRow[]>`
        SELECT ${sql(ENDPOINT_COLUMNS)} FROM webhook_endpoints WHERE account = ${account} AND id = ${id}`;
      return row ? toEndpoint(row) : null;
    },

    async updateEndpoint(account, id, changes, reason) {
      return sql.begin(async (tx) => {
        const [row] = await tx<EndpointRow[]>`
          UPDATE webhook_endpoints SET
            url = coalesce(${changes.url ?? null}, url),
            events = coalesce(${changes.events ? tx.array(changes.events) : null}::text[], events),
            description = coalesce(${changes.description ?? null}, description),
            enabled = coalesce(${changes.enabled ?? null}::boolean, enabled)
          WHERE account = ${account} AND id = ${id}
          RETURNING ${tx(ENDPOINT_COLUMNS)}`;
        if (row === undefined) return null;
        if (changes.enabled === false) await failPending(tx, account, id, reason);
        return toEndpoint(row);
      });
    },

    async deleteEndpoint(account, id) {
      return sql.begin(async (tx) => {
        await tx`DELETE FROM webhook_deliveries WHERE account = ${account} AND endpoint_id = ${id}`;
        const removed = await tx`DELETE FROM webhook_endpoints WHERE account = ${account} AND id = ${id}`;
        return removed.count === 1;
      });
    },

    async rotateSecret(account, id, secret, previousUntil) {
      const result = await sql`
        UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = ${previousUntil}, secret = ${secret}
        WHERE account = ${account} AND id = ${id}`;
      return result.count === 1;
    },

    async listDeliveries(account, endpointId, limit) {
      const rows = await sql<DeliveryRow<Date>[]>`
        SELECT event_id, event_type, state, attempts, last_status, last_error, next_attempt_at, created_at
        FROM webhook_deliveries WHERE account = ${account} AND endpoint_id = ${endpointId}
        ORDER BY created_at DESC, event_id DESC LIMIT ${limit}`;
      return rows.map((row) => toDelivery(row, asDate));
    },

    async requeueFailed(account, endpointId, since, until, now) {
      const result = await sql`
        UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ${now},
          lease_owner = NULL, lease_until = NULL, updated_at = ${now}
        WHERE account = ${account} AND endpoint_id = ${endpointId} AND state = 'failed'
          AND created_at >= ${since} ${until === null ? sql`` : sql`AND created_at < ${until}`}`;
      return result.count;
    },

    async claimDeliveries(owner, now, leaseUntil, limit, share) {
      // SKIP LOCKED: processes claiming at once take disjoint rows instead of queueing on each
      // other; a row another committed claim leased meanwhile is re-checked and left out. Of the
      // rows locked, at most share.perEndpoint per endpoint are leased; the rest are left as they were.
      const busyAccounts = sql.array(share.busy.map((b) => b.account));
      const busyEndpoints = sql.array(share.busy.map((b) => b.endpointId));
      const rows = await sql<ClaimRow<Date>[]>`
        WITH due AS (
          SELECT d.account, d.endpoint_id, d.event_id, d.next_attempt_at FROM webhook_deliveries d
          JOIN webhook_endpoints e ON e.account = d.account AND e.id = d.endpoint_id AND e.enabled
          WHERE d.state = 'pending' AND d.next_attempt_at <= ${now}
            AND (d.lease_until IS NULL OR d.lease_until < ${now})
            AND NOT EXISTS (
              SELECT 1 FROM unnest(${busyAccounts}::text[], ${busyEndpoints}::text[]) AS b(account, endpoint_id)
              WHERE b.account = d.account AND b.endpoint_id = d.endpoint_id)
          ORDER BY d.next_attempt_at LIMIT ${share.window}
          FOR UPDATE OF d SKIP LOCKED
        ), ranked AS (
          SELECT account, endpoint_id, event_id, next_attempt_at,
                 row_number() OVER (PARTITION BY account, endpoint_id ORDER BY next_attempt_at) AS nth
          FROM due
        ), picked AS (
          SELECT account, endpoint_id, event_id FROM ranked WHERE nth <= ${share.perEndpoint}
          ORDER BY next_attempt_at LIMIT ${limit}
        )
        UPDATE webhook_deliveries d SET lease_owner = ${owner}, lease_until = ${leaseUntil}
        FROM picked, webhook_endpoints e
        WHERE d.account = picked.account AND d.endpoint_id = picked.endpoint_id AND d.event_id = picked.event_id
          AND e.account = d.account AND e.id = d.endpoint_id
        RETURNING d.account, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempts,
                  e.url, e.secret, e.previous_secret, e.previous_secret_until`;
      return rows.map((row) => toClaimed(row, asDate));
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
      await sql`
        UPDATE webhook_deliveries d SET state = r.state, attempts = d.attempts + 1, next_attempt_at = r.next,
          last_status = r.status, last_error = r.error, lease_owner = NULL, lease_until = NULL, updated_at = now()
        FROM unnest(${column((r) => r.key.account)}::text[], ${column((r) => r.key.endpointId)}::text[],
                    ${column((r) => r.key.eventId)}::text[], ${column((r) => r.record.state)}::text[],
                    ${column((r) => r.record.nextAttemptAt)}::timestamptz[], ${column((r) => r.record.lastStatus)}::int[],
                    ${column((r) => r.record.lastError)}::text[])
             AS r(account, endpoint_id, event_id, state, next, status, error)
        WHERE d.account = r.account AND d.endpoint_id = r.endpoint_id AND d.event_id = r.event_id
          AND d.lease_owner = ${owner}`;
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
            WHERE state <> 'pending' AND updated_at < ${before} LIMIT ${PRUNE_CHUNK})`;
        removed += count;
        if (count < PRUNE_CHUNK) return removed;
      }
    },

    async deliveryBacklog() {
      const [row] = await sql<[{ pending: number; oldest: Date | null }]>`
        SELECT count(*)::int AS pending, min(created_at) AS oldest FROM webhook_deliveries WHERE state = 'pending'`;
      return { pending: row.pending, oldestCreatedAt: row.oldest };
    },
  };
}

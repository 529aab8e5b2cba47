import { POSTGRES_VALUES } from '../row-values.js';
import type { WebhookStorage } from '../types/webhooks.js';
import { ENDPOINT_COLUMNS, toDelivery, toEndpoint as endpointOf, type EndpointRow } from '../webhook-rows.js';
import type { Sql } from './connection.js';
import { postgresOutbox } from './outbox.js';
import { failPending } from './webhook-deliveries.js';

/** Namespace of the per-account advisory lock that makes "at most N endpoints" atomic: ASCII "plaw". */
const ENDPOINT_LIMIT_LOCK = 0x706c6177;

type Row = EndpointRow<Date, string[], boolean>;
const toEndpoint = (row: Row) => endpointOf(row, POSTGRES_VALUES);

/** The endpoints and the deliveries listing: every statement names the account. */
export function postgresEndpoints(sql: Sql) {
  const outbox = postgresOutbox(sql);
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
      const rows = await sql<Row[]>`
        SELECT ${sql(ENDPOINT_COLUMNS)} FROM webhook_endpoints WHERE account = ${account} ORDER BY created_at, id`;
      return rows.map(toEndpoint);
    },

    async getEndpoint(account, id) {
      const [row] = await sql<Row[]>`
        SELECT ${sql(ENDPOINT_COLUMNS)} FROM webhook_endpoints WHERE account = ${account} AND id = ${id}`;
      return row ? toEndpoint(row) : null;
    },

    async updateEndpoint(account, id, changes, reason) {
      return sql.begin(async (tx) => {
        const [row] = await tx<Row[]>`
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
        await tx`DELETE FROM webhook_outbox WHERE account = ${account} AND endpoint_id = ${id}`;
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
      const rows = await outbox.newestDeliveries(account, endpointId, limit);
      return rows.map((row) => toDelivery(row, POSTGRES_VALUES.date));
    },

    async requeueFailed(account, endpointId, since, until, now) {
      const result = await sql`
        UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ${now},
          lease_owner = NULL, lease_until = NULL, updated_at = ${now}
        WHERE account = ${account} AND endpoint_id = ${endpointId} AND state = 'failed'
          AND created_at >= ${since} ${until === null ? sql`` : sql`AND created_at < ${until}`}`;
      return result.count;
    },
  } satisfies Omit<
    WebhookStorage,
    'claimDeliveries' | 'recordAttempts' | 'disableEndpoint' | 'pruneDeliveries' | 'deliveryBacklog'
  >;
}

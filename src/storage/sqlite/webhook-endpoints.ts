import type Database from 'better-sqlite3';
import type { WebhookStorage } from '../types/webhooks.js';
import type { PlantEventType } from '../../events/plant-event.js';
import { SQLITE_VALUES } from '../row-values.js';
import {
  ENDPOINT_COLUMNS,
  toDelivery,
  toEndpoint as endpointOf,
  type DeliveryRow,
  type EndpointRow,
} from '../webhook-rows.js';
import { failPending } from './fail-pending.js';
import { outboxRows } from './outbox.js';

/** An endpoint's event types as SQLite keeps them: space-separated, with a space at each end (outbox.ts finds ' plant.created '). */
const eventsText = (events: PlantEventType[]) => ` ${events.join(' ')} `;

type Row = EndpointRow<number, string, number>;
const toEndpoint = (row: Row) => endpointOf(row, SQLITE_VALUES);

/** The deliveries listing's order: newest first, and by event id among events of the same millisecond. */
const newestFirst = (a: DeliveryRow<number>, b: DeliveryRow<number>) =>
  b.created_at - a.created_at || (a.event_id < b.event_id ? 1 : a.event_id > b.event_id ? -1 : 0);

/** The endpoints and the deliveries listing, through `db` (see webhook-deliveries.ts). */
export function sqliteEndpoints(db: Database.Database) {
  const outboxHere = outboxRows(db);
  const countEndpoints = db.prepare('SELECT count(*) FROM webhook_endpoints WHERE account = ?').pluck();
  const insertEndpoint = db.prepare(
    `INSERT INTO webhook_endpoints (account, id, url, events, description, enabled, secret, created_at)
     VALUES (@account, @id, @url, @events, @description, @enabled, @secret, @createdAt)`,
  );
  const endpointColumns = ENDPOINT_COLUMNS.join(', ');
  const selectEndpoints = db.prepare(
    `SELECT ${endpointColumns} FROM webhook_endpoints WHERE account = ? ORDER BY created_at, id`,
  );
  const selectEndpoint = db.prepare(`SELECT ${endpointColumns} FROM webhook_endpoints WHERE account = ? AND id = ?`);
  const changeEndpoint = db.prepare(
    `UPDATE webhook_endpoints SET url = coalesce(@url, url), events = coalesce(@events, events),
       description = coalesce(@description, description), enabled = coalesce(@enabled, enabled)
     WHERE account = @account AND id = @id`,
  );
  const removeEndpoint = db.prepare('DELETE FROM webhook_endpoints WHERE account = ? AND id = ?');
  const removeDeliveries = db.prepare('DELETE FROM webhook_deliveries WHERE account = ? AND endpoint_id = ?');
  const rotate = db.prepare(
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = ?, secret = ?
     WHERE account = ? AND id = ?`,
  );
  const failPendingHere = failPending(db);
  const selectDeliveries = db.prepare(
    `SELECT event_id, event_type, state, attempts, last_status, last_error, next_attempt_at, created_at
     FROM webhook_deliveries WHERE account = ? AND endpoint_id = ? ORDER BY created_at DESC, event_id DESC LIMIT ? + 0`,
  );
  const requeue = db.prepare(
    `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = @now,
       lease_owner = NULL, lease_until = NULL, updated_at = @now
     WHERE account = @account AND endpoint_id = @endpointId AND state = 'failed'
       AND created_at >= @since AND created_at < @until`,
  );

  const create = db.transaction((endpoint: Parameters<WebhookStorage['createEndpoint']>[0], max: number) => {
    if ((countEndpoints.get(endpoint.account) as number) >= max) return false;
    insertEndpoint.run({
      ...endpoint,
      events: eventsText(endpoint.events),
      enabled: endpoint.enabled ? 1 : 0,
      createdAt: endpoint.createdAt.getTime(),
    });
    return true;
  });
  const update = db.transaction(
    (account: string, id: string, changes: Parameters<WebhookStorage['updateEndpoint']>[2], reason: string) => {
      const changed = changeEndpoint.run({
        account,
        id,
        url: changes.url ?? null,
        events: changes.events ? eventsText(changes.events) : null,
        description: changes.description ?? null,
        enabled: changes.enabled === undefined ? null : changes.enabled ? 1 : 0,
      });
      if (changed.changes === 0) return null;
      if (changes.enabled === false) {
        outboxHere.unpackEndpoint(account, id);
        failPendingHere.run({ account, endpointId: id, reason, now: Date.now() });
      }
      return toEndpoint(selectEndpoint.get(account, id) as Row);
    },
  );
  const remove = db.transaction((account: string, id: string) => {
    removeDeliveries.run(account, id);
    outboxHere.removeEndpoint(account, id);
    return removeEndpoint.run(account, id).changes === 1;
  });
  // One read transaction (one snapshot), so an event another process unpacks meanwhile is seen
  // once, in the outbox or among the deliveries. Both lists are bounded by `limit` before the merge.
  const readDeliveries = db.transaction((account: string, endpointId: string, limit: number) => [
    ...outboxHere.newestOf(account, endpointId, limit),
    ...(selectDeliveries.all(account, endpointId, limit) as DeliveryRow<number>[]),
  ]);

  return {
    async createEndpoint(endpoint, maxPerAccount) {
      return create.immediate(endpoint, maxPerAccount);
    },
    async listEndpoints(account) {
      return (selectEndpoints.all(account) as Row[]).map(toEndpoint);
    },
    async getEndpoint(account, id) {
      const row = selectEndpoint.get(account, id) as Row | undefined;
      return row ? toEndpoint(row) : null;
    },
    async updateEndpoint(account, id, changes, reason) {
      return update.immediate(account, id, changes, reason);
    },
    async deleteEndpoint(account, id) {
      return remove.immediate(account, id);
    },
    async rotateSecret(account, id, secret, previousUntil) {
      return rotate.run(previousUntil.getTime(), secret, account, id).changes === 1;
    },
    async listDeliveries(account, endpointId, limit) {
      return readDeliveries(account, endpointId, limit)
        .sort(newestFirst)
        .slice(0, limit)
        .map((row) => toDelivery(row, SQLITE_VALUES.date));
    },
    async requeueFailed(account, endpointId, since, until, now) {
      const end = until === null ? Number.MAX_SAFE_INTEGER : until.getTime();
      return requeue.run({ account, endpointId, since: since.getTime(), until: end, now: now.getTime() }).changes;
    },
  } satisfies Omit<
    WebhookStorage,
    'claimDeliveries' | 'recordAttempts' | 'disableEndpoint' | 'pruneDeliveries' | 'deliveryBacklog'
  >;
}

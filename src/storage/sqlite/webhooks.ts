import type Database from 'better-sqlite3';
import type { PlantEventType } from '../../events/plant-event.js';
import type { ClaimShare, WebhookEndpoint, WebhookStorage } from '../types/webhooks.js';
import { toClaimed, toDelivery, type ClaimRow, type DeliveryRow } from '../webhook-rows.js';
import { firstPerEndpoint } from './claim-share.js';
import { busyAsJson, notBusy, outboxRows } from './outbox.js';

const msDate = (ms: number) => new Date(ms);

/**
 * Times are epoch milliseconds; `events` is space-separated with a space at each end (see the
 * outbox). Endpoints are written through `db` (synced at each commit, as plants are); the
 * deliverer's claims and results through `deliveries`, a second connection that does not sync
 * each commit: a result lost in a power cut only means that event is sent again (at least once),
 * and the request path never waits for a sync made for the deliverer.
 */

interface EndpointRow {
  id: string;
  url: string;
  events: string;
  description: string;
  enabled: number;
  created_at: number;
}

const eventsText = (events: PlantEventType[]) => ` ${events.join(' ')} `;

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: row.events.split(' ').filter(Boolean) as PlantEventType[],
    description: row.description,
    enabled: row.enabled === 1,
    createdAt: new Date(row.created_at),
  };
}

const PRUNE_CHUNK = 1000;

/** The deliveries listing's order: newest first, and by event id among events of the same millisecond. */
const newestFirst = (a: DeliveryRow<number>, b: DeliveryRow<number>) =>
  b.created_at - a.created_at || (a.event_id < b.event_id ? 1 : a.event_id > b.event_id ? -1 : 0);

export function sqliteWebhooks(db: Database.Database, deliveries: Database.Database): WebhookStorage {
  const outboxHere = outboxRows(db);
  const outboxThere = outboxRows(deliveries);
  const countEndpoints = db.prepare('SELECT count(*) FROM webhook_endpoints WHERE account = ?').pluck();
  const insertEndpoint = db.prepare(
    `INSERT INTO webhook_endpoints (account, id, url, events, description, enabled, secret, created_at)
     VALUES (@account, @id, @url, @events, @description, @enabled, @secret, @createdAt)`,
  );
  const endpointColumns = 'id, url, events, description, enabled, created_at';
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
  const failPending = (conn: Database.Database) =>
    conn.prepare(
      `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, last_error = @reason,
         lease_owner = NULL, lease_until = NULL, updated_at = @now
       WHERE account = @account AND endpoint_id = @endpointId AND state = 'pending'`,
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

  // The deliverer's statements, on its own connection.
  // Due, and not of an endpoint that already has its share of attempts in flight.
  const due = `d.state = 'pending' AND d.next_attempt_at <= @now AND (d.lease_until IS NULL OR d.lease_until < @now)
    AND ${notBusy('d')}`;
  const anyDue = deliveries
    .prepare(
      `SELECT 1 FROM webhook_deliveries d JOIN webhook_endpoints e ON e.account = d.account AND e.id = d.endpoint_id
       WHERE ${due} AND e.enabled = 1 LIMIT 1`,
    )
    .pluck();
  const selectDue = deliveries.prepare(
    `SELECT d.account, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempts,
            e.url, e.secret, e.previous_secret, e.previous_secret_until
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.account = d.account AND e.id = d.endpoint_id
     WHERE ${due} AND e.enabled = 1 ORDER BY d.next_attempt_at LIMIT @window`,
  );
  const lease = deliveries.prepare(
    `UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?
     WHERE account = ? AND endpoint_id = ? AND event_id = ?`,
  );
  const record = deliveries.prepare(
    `UPDATE webhook_deliveries SET state = @state, attempts = attempts + 1, next_attempt_at = @next,
       last_status = @status, last_error = @error, lease_owner = NULL, lease_until = NULL, updated_at = @now
     WHERE account = @account AND endpoint_id = @endpointId AND event_id = @eventId AND lease_owner = @owner`,
  );
  const disable = deliveries.prepare('UPDATE webhook_endpoints SET enabled = 0 WHERE account = ? AND id = ?');
  const failPendingThere = failPending(deliveries);
  const prune = deliveries.prepare(
    `DELETE FROM webhook_deliveries WHERE (account, endpoint_id, event_id) IN (
       SELECT account, endpoint_id, event_id FROM webhook_deliveries
       WHERE state <> 'pending' AND updated_at < ? LIMIT ${PRUNE_CHUNK})`,
  );
  const backlog = deliveries.prepare(
    "SELECT count(*) AS pending, min(created_at) AS oldest FROM webhook_deliveries WHERE state = 'pending'",
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
      return toEndpoint(selectEndpoint.get(account, id) as EndpointRow);
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
  // One snapshot too: an event being unpacked is counted once.
  const readBacklog = deliveries.transaction(() => [
    backlog.get() as { pending: number; oldest: number | null },
    outboxThere.backlog(),
  ]);
  const claim = deliveries.transaction(
    (owner: string, now: number, until: number, limit: number, share: ClaimShare, busy: string) => {
      // As many events as this claim may read come out of the outbox first (events are due at once).
      outboxThere.unpackOldest(share.window, busy);
      const due = selectDue.all({ now, busy, window: share.window }) as ClaimRow<number>[];
      const rows = firstPerEndpoint(due, limit, share.perEndpoint);
      for (const row of rows) lease.run(owner, until, row.account, row.endpoint_id, row.event_id);
      return rows;
    },
  );
  // One transaction for many results: each commit writes whole pages to the WAL, and a batch
  // of results shares its pages instead of writing them again and again.
  const recordAll = deliveries.transaction(
    (owner: string, results: Parameters<WebhookStorage['recordAttempts']>[1]) => {
      const now = Date.now();
      for (const { key, record: result } of results) {
        record.run({
          ...key,
          owner,
          state: result.state,
          next: result.nextAttemptAt?.getTime() ?? null,
          status: result.lastStatus,
          error: result.lastError,
          now,
        });
      }
    },
  );
  const disableAndFail = deliveries.transaction((account: string, endpointId: string, reason: string) => {
    disable.run(account, endpointId);
    outboxThere.unpackEndpoint(account, endpointId);
    failPendingThere.run({ account, endpointId, reason, now: Date.now() });
  });

  return {
    async createEndpoint(endpoint, maxPerAccount) {
      return create.immediate(endpoint, maxPerAccount);
    },
    async listEndpoints(account) {
      return (selectEndpoints.all(account) as EndpointRow[]).map(toEndpoint);
    },
    async getEndpoint(account, id) {
      const row = selectEndpoint.get(account, id) as EndpointRow | undefined;
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
        .map((row) => toDelivery(row, msDate));
    },
    async requeueFailed(account, endpointId, since, until, now) {
      const end = until === null ? Number.MAX_SAFE_INTEGER : until.getTime();
      return requeue.run({ account, endpointId, since: since.getTime(), until: end, now: now.getTime() }).changes;
    },

    async claimDeliveries(owner, now, leaseUntil, limit, share) {
      // A read first, so a poll with nothing it may take (idle, or only endpoints at their share)
      // never takes the write lock.
      const busy = busyAsJson(share);
      if (anyDue.get({ now: now.getTime(), busy }) === undefined && !outboxThere.any(busy)) return [];
      const rows: ClaimRow<number>[] = claim.immediate(owner, now.getTime(), leaseUntil.getTime(), limit, share, busy);
      return rows.map((row) => toClaimed(row, msDate));
    },
    async recordAttempts(owner, results) {
      recordAll.immediate(owner, results);
    },
    async disableEndpoint(account, endpointId, reason) {
      disableAndFail.immediate(account, endpointId, reason);
    },
    async pruneDeliveries(before) {
      let removed = 0;
      for (;;) {
        const { changes } = prune.run(before.getTime());
        removed += changes;
        if (changes < PRUNE_CHUNK) return removed;
      }
    },
    async deliveryBacklog() {
      const rows = readBacklog();
      const oldest = rows.map((row) => row.oldest).filter((ms) => ms !== null);
      return {
        pending: rows[0]!.pending + rows[1]!.pending,
        oldestCreatedAt: oldest.length === 0 ? null : new Date(Math.min(...oldest)),
      };
    },
  };
}

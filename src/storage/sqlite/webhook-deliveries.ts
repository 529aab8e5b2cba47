import type Database from 'better-sqlite3';
import type { ClaimShare, DeliveryStorage } from '../types/webhooks.js';
import { toClaimed, type ClaimRow } from '../webhook-rows.js';
import { fullAsJson, hasRoom, roomOf, withinShare } from './claim-share.js';
import { outboxRows } from './outbox.js';
import { SQLITE_VALUES } from '../row-values.js';
import { failPending } from './fail-pending.js';
import { PRUNE_CHUNK_ROWS } from '../chunks.js';

/**
 * Times are epoch milliseconds; `events` is space-separated with a space at each end (see the
 * outbox). Endpoints are written through the store's connection (synced at each commit, as plants
 * are), and so is the deliverer's side of a `:memory:` store, whose deliverer runs on the event
 * loop. A file's deliverer claims and records from its thread, through a connection of its own
 * that does not sync each commit (storage/open-delivery-store.ts): a result lost in a power cut
 * only means that event is sent again (at least once), and no request waits for a sync made for the
 * deliverer. The deliverer's side of a file store also answers /metrics' backlog, on the store's.
 *
 * Here the deliverer's side, through `deliveries`: the delivery thread's own connection, or the store's.
 */
export function sqliteDeliveries(deliveries: Database.Database) {
  const outboxThere = outboxRows(deliveries);
  // The deliverer's statements, on its own connection.
  const leaseFree = '(d.lease_until IS NULL OR d.lease_until < @now)';
  const anyDue = deliveries
    .prepare(
      `SELECT 1 FROM webhook_deliveries d WHERE d.state = 'pending' AND d.next_attempt_at <= @now AND ${leaseFree} LIMIT 1`,
    )
    .pluck();
  // The due head of each enabled endpoint with room (webhook_deliveries_endpoint_due): a full
  // endpoint's backlog is never read, however long.
  const heads = deliveries.prepare(
    `SELECT account, endpoint_id, first_due FROM (
       SELECT e.account, e.id AS endpoint_id,
              (SELECT d.next_attempt_at FROM webhook_deliveries d
               WHERE d.account = e.account AND d.endpoint_id = e.id AND d.state = 'pending'
                 AND d.next_attempt_at <= @now AND ${leaseFree}
               ORDER BY d.next_attempt_at LIMIT 1) AS first_due
       FROM webhook_endpoints e WHERE e.enabled = 1 AND ${hasRoom('e', 'id')})
     WHERE first_due IS NOT NULL ORDER BY first_due LIMIT @limit`,
  );
  const dueOf = deliveries.prepare(
    `SELECT d.account, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempts, d.next_attempt_at,
            e.url, e.secret, e.previous_secret, e.previous_secret_until
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.account = d.account AND e.id = d.endpoint_id
     WHERE d.account = @account AND d.endpoint_id = @endpoint AND d.state = 'pending'
       AND d.next_attempt_at <= @now AND ${leaseFree}
     ORDER BY d.next_attempt_at LIMIT @window`,
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
       WHERE state <> 'pending' AND updated_at < ? LIMIT ${PRUNE_CHUNK_ROWS})`,
  );
  const backlog = deliveries.prepare(
    "SELECT count(*) AS pending, min(created_at) AS oldest FROM webhook_deliveries WHERE state = 'pending'",
  );

  // One snapshot too: an event being unpacked is counted once.
  const readBacklog = deliveries.transaction(() => [
    backlog.get() as { pending: number; oldest: number | null },
    outboxThere.backlog(),
  ]);
  const claim = deliveries.transaction(
    (owner: string, now: number, until: number, limit: number, share: ClaimShare, full: string) => {
      // As many events as this claim may read come out of the outbox first (events are due at once).
      outboxThere.unpackOldest(share.window, full);
      // The endpoints by their oldest due event; of each, its due events in order, as many as the
      // endpoint may take; then the first `limit` that keep to every room, oldest first.
      const endpoints = heads.all({ now, full, limit }) as { account: string; endpoint_id: string }[];
      const due = endpoints.flatMap(
        ({ account, endpoint_id }) =>
          dueOf.all({
            now,
            account,
            endpoint: endpoint_id,
            window: Math.min(limit, roomOf(share, account, endpoint_id)),
          }) as Array<ClaimRow<number> & { next_attempt_at: number }>,
      );
      due.sort((a, b) => a.next_attempt_at - b.next_attempt_at);
      const rows = withinShare(due, limit, share);
      for (const row of rows) lease.run(owner, until, row.account, row.endpoint_id, row.event_id);
      return rows;
    },
  );
  // One transaction for many results: each commit writes whole pages to the WAL, and a batch
  // of results shares its pages instead of writing them again and again.
  const recordAll = deliveries.transaction(
    (owner: string, results: Parameters<DeliveryStorage['recordAttempts']>[1]) => {
      const now = Date.now();
      for (const { key, record: result } of results) {
        record.run({
          account: key.account,
          endpointId: key.endpointId,
          eventId: key.eventId,
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
    async claimDeliveries(owner, now, leaseUntil, limit, share) {
      // A read first, so a poll with nothing it may take (idle, or only endpoints at their share)
      // never takes the write lock.
      const full = fullAsJson(share);
      if (anyDue.get({ now: now.getTime() }) === undefined && !outboxThere.any(full)) return [];
      const rows: ClaimRow<number>[] = claim.immediate(owner, now.getTime(), leaseUntil.getTime(), limit, share, full);
      return rows.map((row) => toClaimed(row, SQLITE_VALUES.date));
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
        if (changes < PRUNE_CHUNK_ROWS) return removed;
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
  } satisfies DeliveryStorage;
}

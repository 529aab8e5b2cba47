import type Database from 'better-sqlite3';

/** Fails the pending deliveries of an endpoint (disabled, or gone), on either connection: both halves of the SQLite webhook storage run it. */
export const failPending = (conn: Database.Database) =>
  conn.prepare(
    `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, last_error = @reason,
       lease_owner = NULL, lease_until = NULL, updated_at = @now
     WHERE account = @account AND endpoint_id = @endpointId AND state = 'pending'`,
  );

import { expand, pendingMigrations, type AppliedMigration, type Migration } from '../schema-versions.js';
import type { Sql, Tx } from './connection.js';
import { searchMigration } from './search-migration.js';

/**
 * Versioned schema; `schema_migrations` records which have run (schema-versions.ts). Append, never
 * edit.
 *
 * Every table is keyed by account first and every query of the request path names the account,
 * so `plants`, `webhook_endpoints`, `webhook_outbox` and `webhook_deliveries` can be distributed by `account`
 * (Citus, CockroachDB) without changing a statement; `api_tokens` is a reference table.
 */
export const MIGRATIONS: Array<Migration<string | ((tx: Tx) => Promise<void>)>> = [
  expand(`CREATE TABLE plants (
     account text NOT NULL,
     id bigint NOT NULL,
     name text NOT NULL,
     tag text,
     PRIMARY KEY (account, id)
   );
   CREATE TABLE api_tokens (
     id text PRIMARY KEY,
     account text NOT NULL,
     secret_hash text NOT NULL UNIQUE,
     scopes text[] NOT NULL,
     created_at timestamptz NOT NULL,
     expires_at timestamptz,
     revoked_at timestamptz
   );
   CREATE INDEX api_tokens_by_account ON api_tokens (account);`),
  // Plants by id (revisions for ETags) and webhooks: endpoints, and their deliveries (the outbox
  // that the change's transaction writes is webhook_outbox, below).
  expand(`ALTER TABLE plants ADD COLUMN revision bigint NOT NULL DEFAULT 0;
   CREATE TABLE webhook_endpoints (
     account text NOT NULL,
     id text NOT NULL,
     url text NOT NULL,
     events text[] NOT NULL,
     description text,
     enabled boolean NOT NULL,
     secret text NOT NULL,
     previous_secret text,
     previous_secret_until timestamptz,
     created_at timestamptz NOT NULL,
     PRIMARY KEY (account, id)
   );
   CREATE TABLE webhook_deliveries (
     account text NOT NULL,
     endpoint_id text NOT NULL,
     event_id text NOT NULL,
     event_type text NOT NULL,
     payload text NOT NULL,
     created_at timestamptz NOT NULL,
     state text NOT NULL,
     attempts integer NOT NULL DEFAULT 0,
     next_attempt_at timestamptz,
     lease_owner text,
     lease_until timestamptz,
     last_status integer,
     last_error text,
     updated_at timestamptz NOT NULL,
     PRIMARY KEY (account, endpoint_id, event_id)
   );
   CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);`),
  // Webhooks: an endpoint's deliveries newest first (listing, recover); pending ones by due time
  // and settled ones by age (retention), each a partial index, so that the insert of a new event
  // (pending) in the change's transaction updates one index fewer. The due index holds created_at
  // too, so /metrics reads the backlog (count, oldest) from the index alone.
  expand(`DROP INDEX webhook_deliveries_due;
   CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, created_at) WHERE state = 'pending';
   CREATE INDEX webhook_deliveries_settled ON webhook_deliveries (updated_at) WHERE state <> 'pending';
   CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (account, endpoint_id, created_at);`),
  // Finding plants: the folded names, the tag and name indexes, the trigram index (search-migration.ts).
  expand(searchMigration),
  // The change feed (src/feed/): every event of an account, numbered in commit order
  // (postgres/outbox.ts, recordEvents), kept for --event-retention; `account_events` holds each account's last
  // number (its row lock orders the commits) and the last one retention removed. `feed_key` binds
  // cursors to their account (gen_random_uuid draws from the strong random source).
  expand(`CREATE TABLE events (
     account text NOT NULL,
     seq bigint NOT NULL,
     event_id text NOT NULL,
     event_type text NOT NULL,
     payload text NOT NULL,
     created_at timestamptz NOT NULL,
     PRIMARY KEY (account, seq)
   );
   CREATE INDEX events_by_age ON events (created_at);
   CREATE TABLE account_events (
     account text PRIMARY KEY,
     last_seq bigint NOT NULL,
     pruned_through bigint NOT NULL
   );
   CREATE TABLE feed_key (id integer PRIMARY KEY CHECK (id = 1), key text NOT NULL);
   INSERT INTO feed_key VALUES (1, replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));`),
  // One number that every change to the API tokens moves, whoever makes it (the server, the CLI,
  // copy, SQL by hand: a trigger), in the change's own transaction, so that a process confirms
  // every token it holds with one read (auth/api-token-verifier.ts).
  expand(`CREATE TABLE token_changes (id integer PRIMARY KEY CHECK (id = 1), n bigint NOT NULL);
   INSERT INTO token_changes VALUES (1, 0);
   CREATE FUNCTION count_token_change() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN UPDATE token_changes SET n = n + 1; RETURN NULL; END $$;
   CREATE TRIGGER api_tokens_changed AFTER INSERT OR UPDATE OR DELETE ON api_tokens
     FOR EACH ROW EXECUTE FUNCTION count_token_change();
   CREATE TRIGGER api_tokens_truncated AFTER TRUNCATE ON api_tokens
     FOR EACH STATEMENT EXECUTE FUNCTION count_token_change();`),
  // Each endpoint's pending deliveries in due order: a claim reads the head of each endpoint that
  // has room, so that the backlog of a full one (at its share) is never read past, whatever its size.
  expand(`CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (account, endpoint_id, next_attempt_at)
     WHERE state = 'pending';`),
  // The packed outbox, as SQLite's (its migration 4): a change's statement writes one row per
  // commit and endpoint, holding the events as a JSON array of [event id, event type, payload],
  // instead of a delivery row (and four index entries) per event; the deliverer unpacks them into
  // webhook_deliveries as it is about to send them (outbox.ts). No index on created_at: only
  // /metrics reads the oldest, and it reads event_count from every row anyway.
  expand(`CREATE TABLE webhook_outbox (
     account text NOT NULL,
     endpoint_id text NOT NULL,
     first_event_id text NOT NULL,
     events json NOT NULL,
     event_count integer NOT NULL,
     created_at timestamptz NOT NULL,
     PRIMARY KEY (account, endpoint_id, first_event_id)
   );`),
];

/** Advisory lock keys are database-wide: this one is ASCII "plant-mi", unlikely to clash with another program's. */
const MIGRATION_LOCK = 0x706c616e742d6d69n;

/**
 * Brings the schema up to date, or refuses a store too new for this release (schema-versions.ts).
 * Instances starting together queue on the advisory lock and the later ones find nothing left to
 * do. The transaction-scoped lock is released by commit, rollback or a dropped connection, so a
 * crash mid-migration cannot leave it held; DDL is transactional in PostgreSQL, so a failed
 * migration leaves no half-built schema either. Releases before `expand_only` inserted only
 * versions of their own, which this release knows: the column's default fits them.
 */
export async function migrate(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
               version integer PRIMARY KEY,
               applied_at timestamptz NOT NULL DEFAULT now()
             )`;
    await tx`ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS expand_only boolean NOT NULL DEFAULT true`;
    const applied = await tx<AppliedMigration[]>`SELECT version, expand_only AS "expandOnly" FROM schema_migrations`;
    for (const version of pendingMigrations(MIGRATIONS, applied)) {
      const { up, expandOnly } = MIGRATIONS[version - 1]!;
      if (typeof up === 'string') await tx.unsafe(up);
      else await up(tx);
      await tx`INSERT INTO schema_migrations (version, expand_only) VALUES (${version}, ${expandOnly})`;
    }
  });
}

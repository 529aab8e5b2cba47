import type Database from 'better-sqlite3';
import { contract, expand, pendingMigrations, type AppliedMigration, type Migration } from '../schema-versions.js';
import { searchMigration } from './search-migration.js';

/**
 * Versioned schema; `schema_migrations` records which have run (schema-versions.ts). Append, never
 * edit. Every table is keyed by account first, as `plants` is.
 */
export const MIGRATIONS: Array<Migration<string | ((db: Database.Database) => void)>> = [
  expand(`CREATE TABLE plants (
     account TEXT NOT NULL,
     id INTEGER NOT NULL,
     name TEXT NOT NULL,
     tag TEXT,
     PRIMARY KEY (account, id)
   ) WITHOUT ROWID;
   CREATE TABLE api_tokens (
     id TEXT PRIMARY KEY,
     account TEXT NOT NULL,
     secret_hash TEXT NOT NULL UNIQUE,
     scopes TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     expires_at INTEGER,
     revoked_at INTEGER
   );
   CREATE INDEX api_tokens_by_account ON api_tokens (account);`),
  // Plants by id (revisions for ETags) and webhooks: endpoints, and the outbox of deliveries
  // written in the same transaction as the change they report. Times are epoch milliseconds;
  // `events` is space-separated with a space at each end, so ' plant.created ' finds a whole word.
  expand(`ALTER TABLE plants ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
   CREATE TABLE webhook_endpoints (
     account TEXT NOT NULL,
     id TEXT NOT NULL,
     url TEXT NOT NULL,
     events TEXT NOT NULL,
     description TEXT,
     enabled INTEGER NOT NULL,
     secret TEXT NOT NULL,
     previous_secret TEXT,
     previous_secret_until INTEGER,
     created_at INTEGER NOT NULL,
     PRIMARY KEY (account, id)
   ) WITHOUT ROWID;
   CREATE TABLE webhook_deliveries (
     account TEXT NOT NULL,
     endpoint_id TEXT NOT NULL,
     event_id TEXT NOT NULL,
     event_type TEXT NOT NULL,
     payload TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     state TEXT NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     next_attempt_at INTEGER,
     lease_owner TEXT,
     lease_until INTEGER,
     last_status INTEGER,
     last_error TEXT,
     updated_at INTEGER NOT NULL,
     PRIMARY KEY (account, endpoint_id, event_id)
   ) WITHOUT ROWID;
   CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);`),
  // Webhooks: an endpoint's deliveries newest first (listing, recover); pending ones by due time
  // and settled ones by age (retention), each a partial index, so that the insert of a new event
  // (pending) in the change's transaction updates one index fewer. The due index holds created_at
  // too, so /metrics reads the backlog (count, oldest) from the index alone.
  expand(`DROP INDEX webhook_deliveries_due;
   CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, created_at) WHERE state = 'pending';
   CREATE INDEX webhook_deliveries_settled ON webhook_deliveries (updated_at) WHERE state <> 'pending';
   CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (account, endpoint_id, created_at);`),
  // The outbox proper: the events of one commit for one endpoint travel as one row (outbox.ts), so
  // a change's transaction writes one row per commit and endpoint instead of one delivery row (and
  // its three index entries) per event. The deliverer unpacks them into webhook_deliveries, oldest
  // first. `events` is a JSON array of [event id, event type, payload] triples.
  expand(`CREATE TABLE webhook_outbox (
     account TEXT NOT NULL,
     endpoint_id TEXT NOT NULL,
     first_event_id TEXT NOT NULL,
     events TEXT NOT NULL,
     event_count INTEGER NOT NULL,
     created_at INTEGER NOT NULL,
     PRIMARY KEY (account, endpoint_id, first_event_id)
   ) WITHOUT ROWID;
   CREATE INDEX webhook_outbox_by_age ON webhook_outbox (created_at);`),
  // Finding plants: the folded names, the tag and name indexes, the trigram index (search-migration.ts).
  expand(searchMigration),
  // The change feed (src/feed/): every event of an account, numbered in commit order
  // (sqlite/events.ts), kept for --event-retention; `account_events` holds each account's last
  // number and the last one retention removed. `feed_key` binds cursors to their account.
  expand(`CREATE TABLE events (
     account TEXT NOT NULL,
     seq INTEGER NOT NULL,
     event_id TEXT NOT NULL,
     event_type TEXT NOT NULL,
     payload TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     PRIMARY KEY (account, seq)
   ) WITHOUT ROWID;
   CREATE INDEX events_by_age ON events (created_at);
   CREATE TABLE account_events (
     account TEXT PRIMARY KEY,
     last_seq INTEGER NOT NULL,
     pruned_through INTEGER NOT NULL
   ) WITHOUT ROWID;
   CREATE TABLE feed_key (id INTEGER PRIMARY KEY CHECK (id = 1), key TEXT NOT NULL);
   INSERT INTO feed_key VALUES (1, lower(hex(randomblob(32))));`),
  // The trigram index is written by the code that writes plants (search-index.ts says why), not by triggers.
  contract(`DROP TRIGGER plants_search_insert;
   DROP TRIGGER plants_search_update;
   DROP TRIGGER plants_search_delete;`),
  // One number that every transaction writing plants moves by one, so that a process tells its own
  // plant commits from others' (plants-clock.ts).
  expand(`CREATE TABLE plants_clock (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
   INSERT INTO plants_clock VALUES (1, 0);`),
  // The trigram index's keys come from a counter and are never reused, so that nothing need ever be
  // deleted from the FTS5 table (search-index.ts says why); and its segments are merged 16 at a time
  // instead of 4, which halves what a write costs on a large index and leaves a search as fast.
  expand(`CREATE TABLE plant_search_seq (id INTEGER PRIMARY KEY CHECK (id = 1), next INTEGER NOT NULL);
   INSERT INTO plant_search_seq SELECT 1, coalesce(max(seq), 0) + 1 FROM plant_search_keys;
   INSERT INTO plant_names (plant_names, rank) VALUES ('automerge', 16);`),
  // The outbox's heads (all but the events) in an index of their own: each claim reads the oldest
  // row of every endpoint, and /metrics the backlog. From the table, each row's event_count and
  // created_at were read past its events, from overflow pages: a claim of a large outbox read them
  // all, under the write lock.
  expand(
    `CREATE INDEX webhook_outbox_heads ON webhook_outbox (account, endpoint_id, first_event_id, event_count, created_at);`,
  ),
  // A row that readiness rewrites while the disk refuses writes (disk-watch.ts): a commit of its
  // own that fails as the next write would, and moves nothing a reader keeps.
  expand(`CREATE TABLE disk_probe (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
   INSERT INTO disk_probe VALUES (1, 0);`),
  // One number that every change to the API tokens moves, whoever makes it (the server, the CLI,
  // copy, SQL by hand: triggers), so that a process confirms every token it holds with one read
  // (auth/api-token-verifier.ts).
  expand(`CREATE TABLE token_changes (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
   INSERT INTO token_changes VALUES (1, 0);
   CREATE TRIGGER api_tokens_inserted AFTER INSERT ON api_tokens BEGIN UPDATE token_changes SET n = n + 1; END;
   CREATE TRIGGER api_tokens_updated AFTER UPDATE ON api_tokens BEGIN UPDATE token_changes SET n = n + 1; END;
   CREATE TRIGGER api_tokens_deleted AFTER DELETE ON api_tokens BEGIN UPDATE token_changes SET n = n + 1; END;`),
  // Each endpoint's pending deliveries in due order: a claim reads the head of each endpoint that
  // has room, so that the backlog of a full one (at its share) is never read past, whatever its size.
  expand(`CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (account, endpoint_id, next_attempt_at)
     WHERE state = 'pending';`),
];

/**
 * Brings the schema up to date, or refuses a store too new for this release (schema-versions.ts).
 * Releases before `schema_migrations` kept only a count, `PRAGMA user_version`, and each set it to
 * its own number of migrations on every open, lowering a newer store's: migrations 1 to that count
 * have run, and so have those the table records. The count is kept at the highest version, never
 * lower, so that those releases find nothing of theirs to run again.
 */
export function migrate(db: Database.Database) {
  // IMMEDIATE takes the write lock first, so processes starting together migrate one at a time.
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
               version INTEGER PRIMARY KEY,
               expand_only INTEGER NOT NULL,
               applied_at INTEGER NOT NULL
             )`);
    const record = db.prepare('INSERT INTO schema_migrations (version, expand_only, applied_at) VALUES (?, ?, ?)');
    const applied = recorded(db);
    const counted = db.pragma('user_version', { simple: true }) as number;
    const recordedVersions = new Set(applied.map((m) => m.version));
    for (let version = 1; version <= counted; version++) {
      if (recordedVersions.has(version)) continue;
      const expandOnly = MIGRATIONS[version - 1]?.expandOnly ?? true;
      record.run(version, expandOnly ? 1 : 0, Date.now());
      applied.push({ version, expandOnly });
    }
    for (const version of pendingMigrations(MIGRATIONS, applied)) {
      const { up, expandOnly } = MIGRATIONS[version - 1]!;
      if (typeof up === 'string') db.exec(up);
      else up(db);
      record.run(version, expandOnly ? 1 : 0, Date.now());
    }
    const highest = (db.prepare('SELECT max(version) FROM schema_migrations').pluck().get() as number | null) ?? 0;
    if (counted < highest) db.pragma(`user_version = ${highest}`);
  }).immediate();
}

function recorded(db: Database.Database): AppliedMigration[] {
  const rows = db.prepare('SELECT version, expand_only FROM schema_migrations').all() as Array<{
    version: number;
    expand_only: number;
  }>;
  return rows.map((row) => ({ version: row.version, expandOnly: row.expand_only === 1 }));
}

import type { Sql } from './postgres.js';

/**
 * Versioned schema; `schema_migrations` records which have run. Append, never edit.
 *
 * Every plant row and every plant query is keyed by account first, so `plants` can be
 * distributed by `account` (Citus, CockroachDB) without changing a statement.
 */
const MIGRATIONS = [
  `CREATE TABLE plants (
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
   CREATE INDEX api_tokens_by_account ON api_tokens (account);`,
];

/** Advisory lock keys are database-wide: this one is ASCII "plant-mi", unlikely to clash with another program's. */
const MIGRATION_LOCK = 0x706c616e742d6d69n;

/**
 * Brings the schema up to date. Instances starting together queue on the advisory lock and the
 * later ones find nothing left to do. The transaction-scoped lock is released by commit, rollback
 * or a dropped connection, so a crash mid-migration cannot leave it held; DDL is transactional in
 * PostgreSQL, so a failed migration leaves no half-built schema either.
 */
export async function migrate(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
               version integer PRIMARY KEY,
               applied_at timestamptz NOT NULL DEFAULT now()
             )`;
    const [{ done }] = await tx<[{ done: number }]>`SELECT coalesce(max(version), 0) AS done FROM schema_migrations`;
    for (let version = done + 1; version <= MIGRATIONS.length; version++) {
      await tx.unsafe(MIGRATIONS[version - 1]!);
      await tx`INSERT INTO schema_migrations (version) VALUES (${version})`;
    }
  });
}

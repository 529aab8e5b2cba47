import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { MIGRATIONS as POSTGRES_MIGRATIONS } from '../../src/storage/postgres/migrations.js';
import { sqlitePath } from '../../src/storage/sqlite/index.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/storage/sqlite/migrations.js';
import { ENGINES, withFreshStore, type Engine } from '../helpers/engines.js';
import { runCli } from '../helpers/server.js';

/**
 * docs/operating.md#upgrades-and-rollbacks: a store's schema version never goes back, and a release
 * meeting a newer schema serves it when the newer migrations only add, or refuses to start. Newer
 * releases are played by rows written into `schema_migrations` as they would write them; the
 * releases before it by what they do on open (on SQLite, `PRAGMA user_version` set to their own
 * count). test/upgrade/previous-release.test.ts runs the previous release itself.
 */

/** The engine's bookkeeping, read and written as another release would. */
interface Bookkeeping {
  known: number;
  /** Versions in schema_migrations, and on SQLite `PRAGMA user_version`. */
  read(url: string): Promise<{ recorded: number[]; counted?: number }>;
  exec(url: string, statements: string): Promise<void>;
  /** The statements by which a newer release records its migration `version`. */
  newerRelease(version: number, expandOnly: boolean): string;
  /** What a release from before schema_migrations's `expand_only` does to a store the current one made. */
  olderRelease: string;
}

const SQLITE: Bookkeeping = {
  known: SQLITE_MIGRATIONS.length,
  async read(url) {
    const db = new Database(sqlitePath(url), { readonly: true });
    try {
      const recorded = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[];
      return { recorded, counted: db.pragma('user_version', { simple: true }) as number };
    } finally {
      db.close();
    }
  },
  async exec(url, statements) {
    const db = new Database(sqlitePath(url));
    db.exec(statements);
    db.close();
  },
  newerRelease: (version, expandOnly) =>
    `INSERT INTO schema_migrations VALUES (${version}, ${expandOnly ? 1 : 0}, 0); PRAGMA user_version = ${version};`,
  // Every release before schema_migrations set the count to its own on every open: 10 at 5f0a93d.
  olderRelease: 'PRAGMA user_version = 10;',
};

const POSTGRES: Bookkeeping = {
  known: POSTGRES_MIGRATIONS.length,
  async read(url) {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql<Array<{ version: number }>>`SELECT version FROM schema_migrations ORDER BY version`;
      return { recorded: rows.map((r) => r.version) };
    } finally {
      await sql.end();
    }
  },
  async exec(url, statements) {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    await sql.unsafe(statements);
    await sql.end();
  },
  newerRelease: (version, expandOnly) =>
    `INSERT INTO schema_migrations (version, expand_only) VALUES (${version}, ${expandOnly});`,
  // Releases before this one made schema_migrations without the column, and insert their own versions only.
  olderRelease: 'ALTER TABLE schema_migrations DROP COLUMN expand_only;',
};

const bookkeeping = (engine: Engine) => (engine.name === 'sqlite' ? SQLITE : POSTGRES);
const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** `token create`: a command that opens the store, migrates it and writes to it, as `serve` does. */
function tokenCreate(database: string) {
  return runCli(['token', 'create', '--account', 'a', '--database', database]);
}

for (const engine of ENGINES) {
  const books = bookkeeping(engine);

  describe(`a store's schema version never goes back (${engine.name})`, () => {
    it('new, old, new: the release after an older one runs nothing again and serves', async () => {
      await withFreshStore(engine, async (database) => {
        assert.equal(tokenCreate(database).status, 0);
        await books.exec(database, books.olderRelease);
        const again = tokenCreate(database);
        assert.equal(again.status, 0, again.stderr);
        const { recorded, counted } = await books.read(database);
        assert.deepEqual(recorded, upTo(books.known));
        if (engine.name === 'sqlite') assert.equal(counted, books.known);
      });
    });
  });

  describe(`a newer schema whose newer migrations only add is served (${engine.name})`, () => {
    it('starts, writes, and leaves the newer version recorded', async () => {
      await withFreshStore(engine, async (database) => {
        assert.equal(tokenCreate(database).status, 0);
        const newer = books.known + 2;
        await books.exec(database, books.newerRelease(books.known + 1, true) + books.newerRelease(newer, true));
        const result = tokenCreate(database);
        assert.equal(result.status, 0, result.stderr);
        const { recorded, counted } = await books.read(database);
        assert.deepEqual(recorded, upTo(newer));
        if (engine.name === 'sqlite') assert.equal(counted, newer);
      });
    });
  });

  describe(`a newer schema that removed or changed something is refused (${engine.name})`, () => {
    it('exits 1 with one line naming both versions and what to do, and writes nothing', async () => {
      await withFreshStore(engine, async (database) => {
        assert.equal(tokenCreate(database).status, 0);
        const newer = books.known + 2;
        await books.exec(database, books.newerRelease(books.known + 1, true) + books.newerRelease(newer, false));
        for (const args of [
          ['token', 'create', '--account', 'b', '--database', database],
          ['serve', '--port', '0', '--database', database],
        ]) {
          const result = runCli(args);
          assert.equal(result.status, 1, result.stderr);
          assert.equal(
            result.stderr,
            `plant-store: the store's schema is version ${newer}, newer than this release's ${books.known}, and ` +
              `migration ${newer} removed or changed what this release uses: run a release with schema version ` +
              `${newer} or later (plant-store --version; CHANGELOG.md), or restore a backup taken before the upgrade\n`,
          );
        }
        const { recorded, counted } = await books.read(database);
        assert.deepEqual(recorded, upTo(newer));
        if (engine.name === 'sqlite') assert.equal(counted, newer);
      });
    });
  });
}

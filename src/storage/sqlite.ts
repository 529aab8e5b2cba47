import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { InsertOutcome, NewToken, PlantRecord, PlantWrite, Storage, TokenRecord } from './types.js';

/** Versioned schema; `PRAGMA user_version` records how many have run. Append, never edit. */
const MIGRATIONS = [
  `CREATE TABLE plants (
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
   CREATE INDEX api_tokens_by_account ON api_tokens (account);`,
];

const STREAM_CHUNK_ROWS = 1000;

type PageRow = [id: bigint, name: string, tag: string | null];

interface TokenRow {
  id: string;
  account: string;
  scopes: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

function toToken(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    account: row.account,
    scopes: row.scopes.split(' ').filter(Boolean),
    createdAt: new Date(row.created_at),
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
  };
}

export function sqlitePath(url: string): string {
  return url.slice('sqlite:'.length);
}

function migrate(db: Database.Database) {
  // IMMEDIATE takes the write lock first, so processes starting together migrate one at a time.
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    for (let v = version; v < MIGRATIONS.length; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

export function openSqlite(url: string): Storage {
  const path = sqlitePath(url);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  // FULL: the WAL is fsynced at every commit, so a 200 survives a power cut.
  db.pragma('synchronous = FULL');
  migrate(db);

  const insert = db.prepare('INSERT INTO plants (account, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING');
  const selectOne = db.prepare('SELECT id, name, tag FROM plants WHERE account = ? AND id = ?').safeIntegers(true);
  // `LIMIT ? + 0`, not `LIMIT ?`: SQLite plans around a bare LIMIT parameter, so each new binding
  // made it compile the statement again (a third of a GET's time). Rows come as arrays (`raw`),
  // which better-sqlite3 builds much faster than objects.
  const selectPage = db
    .prepare('SELECT id, name, tag FROM plants WHERE account = ? AND id > ? ORDER BY id LIMIT ? + 0')
    .safeIntegers(true)
    .raw(true);
  const selectFirstPage = db
    .prepare('SELECT id, name, tag FROM plants WHERE account = ? ORDER BY id LIMIT ? + 0')
    .safeIntegers(true)
    .raw(true);
  const insertToken = db.prepare(
    'INSERT INTO api_tokens (id, account, secret_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const tokenByHash = db.prepare('SELECT * FROM api_tokens WHERE secret_hash = ?');
  const allTokens = db.prepare('SELECT * FROM api_tokens ORDER BY created_at, id');
  const accountTokens = db.prepare('SELECT * FROM api_tokens WHERE account = ? ORDER BY created_at, id');
  const revoke = db.prepare('UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?');
  const countTokens = db.prepare('SELECT count(*) AS n FROM api_tokens');
  const selectOneRow = db.prepare('SELECT 1');

  // data_version moves when another connection (another process) commits, and only then: this
  // connection's own commits leave it (and `plantsVersion`) where it is.
  const dataVersion = db.prepare('PRAGMA data_version').pluck();
  let seenDataVersion = dataVersion.get();
  let version = 0;

  const insertAll = db.transaction((writes: PlantWrite[]): InsertOutcome[] =>
    writes.map(({ account, plant }) => {
      if (insert.run(account, plant.id, plant.name, plant.tag).changes === 1) return { created: true, stored: plant };
      return { created: false, stored: selectOne.get(account, plant.id) as PlantRecord };
    }),
  );

  const page = (account: string, afterId: bigint | null, limit: number): PlantRecord[] => {
    const rows = (
      afterId === null ? selectFirstPage.all(account, limit) : selectPage.all(account, afterId, limit)
    ) as PageRow[];
    return rows.map(([id, name, tag]) => ({ id, name, tag }));
  };

  const storeToken = (token: NewToken) =>
    insertToken.run(
      token.id,
      token.account,
      token.secretHash,
      token.scopes.join(' '),
      token.createdAt.getTime(),
      token.expiresAt?.getTime() ?? null,
    );
  const createFirst = db.transaction((token: NewToken) => {
    if ((countTokens.get() as { n: number }).n > 0) return false;
    storeToken(token);
    return true;
  });

  return {
    engine: 'sqlite',
    async insertPlants(writes) {
      return insertAll.immediate(writes);
    },
    plantsVersion() {
      const current = dataVersion.get();
      if (current !== seenDataVersion) {
        seenDataVersion = current;
        version++;
      }
      return version;
    },
    async listPlants(account, afterId, limit) {
      return page(account, afterId, limit);
    },
    async *streamPlants(account, afterId) {
      // Keyset chunks, each its own short read: a long listing never holds the connection.
      let after = afterId;
      for (;;) {
        const rows = page(account, after, STREAM_CHUNK_ROWS);
        if (rows.length > 0) yield rows;
        if (rows.length < STREAM_CHUNK_ROWS) return;
        after = rows[rows.length - 1]!.id;
      }
    },
    async createToken(token) {
      storeToken(token);
    },
    async findTokenByHash(secretHash) {
      const row = tokenByHash.get(secretHash) as TokenRow | undefined;
      return row ? toToken(row) : null;
    },
    async listTokens(account) {
      const rows = (account === undefined ? allTokens.all() : accountTokens.all(account)) as TokenRow[];
      return rows.map(toToken);
    },
    async revokeToken(id, at) {
      return revoke.run(at.getTime(), id).changes === 1;
    },
    async createFirstToken(token) {
      return createFirst.immediate(token);
    },
    async ping() {
      selectOneRow.get();
    },
    async close() {
      db.close();
    },
  };
}

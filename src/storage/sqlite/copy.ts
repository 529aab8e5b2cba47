import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { ColumnKind, CopyStore, CopyTable, Key, Row, Value } from '../copy.js';
import { sqlitePath } from './index.js';
import { migrate } from './migrations.js';
import { outboxRows } from './outbox.js';

/** SQLite keeps times as epoch ms, booleans as 0/1 and word lists as one space-separated string. */
function toSqlite(kind: ColumnKind, value: Value): unknown {
  if (value === null) return null;
  if (kind === 'bool') return value ? 1 : 0;
  if (kind === 'words') return (value as string[]).join(' ');
  if (kind === 'padded-words') return ` ${(value as string[]).join(' ')} `;
  return value;
}

/** Read with safeIntegers: every integer arrives as a bigint. */
function fromSqlite(kind: ColumnKind, value: unknown): Value {
  if (value === null) return null;
  if (kind === 'bool') return value !== 0n;
  if (kind === 'int32' || kind === 'time') return Number(value);
  if (kind === 'words' || kind === 'padded-words') return (value as string).split(' ').filter(Boolean);
  return value as Value;
}

/**
 * A SQLite store opened for copying, its schema brought up to date first (as the server would).
 * Without `create`, a missing file is an error rather than an empty store.
 */
export function sqliteCopyStore(url: string, { create }: { create: boolean }): CopyStore {
  const path = sqlitePath(url);
  if (create) mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { fileMustExist: !create });
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  migrate(db);
  // Pending deliveries are copied from webhook_deliveries: the events still packed in the outbox go there first.
  db.transaction(() => outboxRows(db).unpackAll()).immediate();

  const statements = new Map<string, Database.Statement>();
  const prepare = (text: string) => {
    let statement = statements.get(text);
    if (!statement) statements.set(text, (statement = db.prepare(text).safeIntegers(true)));
    return statement;
  };
  const only = (table: CopyTable) => (table.only ? ` AND ${table.only.column} = '${table.only.value}'` : '');
  const ofAccount = (table: CopyTable) => `FROM ${table.name} WHERE account = ?${only(table)}`;
  const keyList = (table: CopyTable) => table.key.join(', ');
  const keyParams = (table: CopyTable) => table.key.map(() => '?').join(', ');
  const keyValues = (table: CopyTable, key: Key) => key.map((v, i) => toSqlite(table.columns[table.key[i]!]!, v));
  const toRow = (table: CopyTable, raw: Record<string, unknown>): Row =>
    Object.fromEntries(Object.entries(table.columns).map(([column, kind]) => [column, fromSqlite(kind, raw[column])]));

  return {
    async accounts(table) {
      const rows = prepare(`SELECT DISTINCT account FROM ${table.name} WHERE 1${only(table)}`)
        .pluck()
        .all();
      return rows as string[];
    },
    async count(table, account) {
      return Number(
        prepare(`SELECT count(*) ${ofAccount(table)}`)
          .pluck()
          .get(account),
      );
    },
    async keyAt(table, account, position) {
      const raw = prepare(
        `SELECT ${keyList(table)} ${ofAccount(table)} ORDER BY ${keyList(table)} LIMIT 1 OFFSET ?`,
      ).get(account, position) as Record<string, unknown> | undefined;
      return raw ? table.key.map((column) => fromSqlite(table.columns[column]!, raw[column])) : null;
    },
    async hasKey(table, account, key) {
      const found = prepare(`SELECT 1 ${ofAccount(table)} AND (${keyList(table)}) = (${keyParams(table)})`).get(
        account,
        ...keyValues(table, key),
      );
      return found !== undefined;
    },
    async readBatch(table, account, after, limit) {
      const columns = Object.keys(table.columns).join(', ');
      const order = `ORDER BY ${keyList(table)} LIMIT ?`;
      const raws =
        after === null
          ? prepare(`SELECT ${columns} ${ofAccount(table)} ${order}`).all(account, limit)
          : prepare(
              `SELECT ${columns} ${ofAccount(table)} AND (${keyList(table)}) > (${keyParams(table)}) ${order}`,
            ).all(account, ...keyValues(table, after), limit);
      return (raws as Record<string, unknown>[]).map((raw) => toRow(table, raw));
    },
    async insertNew(table, rows) {
      const columns = Object.keys(table.columns);
      const insert = prepare(
        `INSERT INTO ${table.name} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) ON CONFLICT DO NOTHING`,
      );
      const insertAll = db.transaction(() => {
        let inserted = 0;
        for (const row of rows) {
          inserted += insert.run(
            ...columns.map((column) => toSqlite(table.columns[column]!, row[column] ?? null)),
          ).changes;
        }
        return inserted;
      });
      return insertAll.immediate();
    },
    async close() {
      db.close();
    },
  };
}

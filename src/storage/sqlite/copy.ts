import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import {
  COPY_MARKER_TABLE,
  COPY_PROGRESS_TABLE,
  decodeKey,
  encodeKey,
  keyList,
  keyOf,
  keyValues,
  onlyRows,
  rowOf,
  type CopyStore,
  type FromEngine,
  type ToEngine,
  type CopyTable,
  type Value,
} from '../copy.js';
import { openConnection } from './connection.js';
import { sqlitePath } from './index.js';
import { migrate } from './migrations.js';
import { outboxRows } from './outbox.js';
import { clockTick } from './plants-clock.js';
import { searchIndex } from './search-index.js';

/** SQLite keeps times as epoch ms, booleans as 0/1 and word lists as one space-separated string. */
const toSqlite: ToEngine = (kind, value) => {
  if (value === null) return null;
  if (kind === 'bool') return value ? 1 : 0;
  if (kind === 'words') return (value as string[]).join(' ');
  if (kind === 'padded-words') return ` ${(value as string[]).join(' ')} `;
  return value;
};

/** Read with safeIntegers: every integer arrives as a bigint. */
const fromSqlite: FromEngine = (kind, value) => {
  if (value === null) return null;
  if (kind === 'bool') return value !== 0n;
  if (kind === 'int32' || kind === 'time') return Number(value);
  if (kind === 'words' || kind === 'padded-words') return (value as string).split(' ').filter(Boolean);
  return value as Value;
};

/**
 * A SQLite store opened for copying, its schema brought up to date first (as the server would).
 * Without `create`, a missing file is an error rather than an empty store.
 */
export function sqliteCopyStore(url: string, { create }: { create: boolean }): CopyStore {
  const path = sqlitePath(url);
  if (create) mkdirSync(dirname(path), { recursive: true });
  const db = openConnection(path, { fileMustExist: !create });
  migrate(db);
  // Pending deliveries are copied from webhook_deliveries: the events still packed in the outbox go there first.
  db.transaction(() => outboxRows(db).unpackAll()).immediate();

  const searchWrites = searchIndex(db);
  const tick = clockTick(db);
  const statements = new Map<string, Database.Statement>();
  const prepare = (text: string) => {
    let statement = statements.get(text);
    if (!statement) statements.set(text, (statement = db.prepare(text).safeIntegers(true)));
    return statement;
  };
  const tableExists = (name: string) =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
  const ofAccount = (table: CopyTable) => `FROM ${table.name} WHERE account = ?${onlyRows(table)}`;
  const keyParams = (table: CopyTable) => table.key.map(() => '?').join(', ');

  return {
    async accounts(table) {
      const rows = prepare(`SELECT DISTINCT account FROM ${table.name} WHERE 1${onlyRows(table)}`)
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
      return raw ? keyOf(table, raw, fromSqlite) : null;
    },
    async hasKey(table, account, key) {
      const found = prepare(`SELECT 1 ${ofAccount(table)} AND (${keyList(table)}) = (${keyParams(table)})`).get(
        account,
        ...keyValues(table, key, toSqlite),
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
            ).all(account, ...keyValues(table, after, toSqlite), limit);
      return (raws as Record<string, unknown>[]).map((raw) => rowOf(table, raw, fromSqlite));
    },
    async insertNew(table, account, rows) {
      const columns = Object.keys(table.columns);
      const insert = prepare(
        `INSERT INTO ${table.name} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) ON CONFLICT DO NOTHING`,
      );
      const reached = prepare(
        `INSERT INTO ${COPY_PROGRESS_TABLE} (table_name, account, after_key) VALUES (?, ?, ?)
         ON CONFLICT (table_name, account) DO UPDATE SET after_key = excluded.after_key`,
      );
      const insertAll = db.transaction(() => {
        const search = searchWrites();
        let inserted = 0;
        for (const row of rows) {
          const { changes } = insert.run(
            ...columns.map((column) => toSqlite(table.columns[column]!, row[column] ?? null)),
          );
          // Plants are found by name through the trigram index, which their writer keeps (search-index.ts).
          if (changes > 0 && table.name === 'plants') {
            search.add(row.account as string, row.id as bigint, row.name_folded as string);
          }
          inserted += changes;
        }
        search.flush();
        // A server already serving the target store sees plants written by someone else (plants-clock.ts).
        if (inserted > 0 && table.name === 'plants') tick();
        const last = rows[rows.length - 1];
        if (last) reached.run(table.name, account, encodeKey(table.key.map((column) => last[column] ?? null)));
        return inserted;
      });
      return insertAll.immediate();
    },
    async holdsRows(tables) {
      return tables.some((table) => prepare(`SELECT 1 FROM ${table.name} LIMIT 1`).get() !== undefined);
    },
    async copiedFrom() {
      if (!tableExists(COPY_MARKER_TABLE)) return null;
      return (prepare(`SELECT source FROM ${COPY_MARKER_TABLE}`).pluck().get() as string | undefined) ?? null;
    },
    async markCopyOf(source) {
      db.exec(`CREATE TABLE IF NOT EXISTS ${COPY_MARKER_TABLE} (source TEXT NOT NULL, started_at INTEGER NOT NULL);
               CREATE TABLE IF NOT EXISTS ${COPY_PROGRESS_TABLE} (
                 table_name TEXT NOT NULL, account TEXT NOT NULL, after_key TEXT NOT NULL,
                 PRIMARY KEY (table_name, account)
               ) WITHOUT ROWID;`);
      db.transaction(() => {
        db.prepare(`DELETE FROM ${COPY_MARKER_TABLE}`).run();
        db.prepare(`INSERT INTO ${COPY_MARKER_TABLE} (source, started_at) VALUES (?, ?)`).run(source, Date.now());
      }).immediate();
    },
    async copiedUpTo(table, account) {
      if (!tableExists(COPY_PROGRESS_TABLE)) return null;
      const text = prepare(`SELECT after_key FROM ${COPY_PROGRESS_TABLE} WHERE table_name = ? AND account = ?`)
        .pluck()
        .get(table.name, account) as string | undefined;
      return text === undefined ? null : decodeKey(table, text);
    },
    async close() {
      db.close();
    },
  };
}

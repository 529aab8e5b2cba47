import type { ColumnKind, CopyStore, CopyTable, Key, Row, Value } from '../copy.js';
import { connect } from './connection.js';
import { migrate } from './migrations.js';

/** A copy reads and writes one batch at a time: two connections are plenty. */
const COPY_POOL_MAX = 2;

/** PostgreSQL keeps times as timestamptz (Date here), word lists as text[]. */
function toPostgres(kind: ColumnKind, value: Value): unknown {
  if (value === null) return null;
  if (kind === 'time') return new Date(value as number);
  return value;
}

function fromPostgres(kind: ColumnKind, value: unknown): Value {
  if (value === null) return null;
  if (kind === 'time') return (value as Date).getTime();
  return value as Value;
}

/** A PostgreSQL store opened for copying, its schema brought up to date first (as the server would). */
export async function postgresCopyStore(url: string): Promise<CopyStore> {
  const sql = connect(url, COPY_POOL_MAX);
  try {
    await migrate(sql);
  } catch (error) {
    await sql.end({ timeout: 0 });
    throw error;
  }

  // Table and column names come from COPY_TABLES, never from input.
  const only = (table: CopyTable) => (table.only ? ` AND ${table.only.column} = '${table.only.value}'` : '');
  const ofAccount = (table: CopyTable) => `FROM ${table.name} WHERE account = $1${only(table)}`;
  const keyList = (table: CopyTable) => table.key.join(', ');
  const keyParams = (table: CopyTable, first: number) => table.key.map((_, i) => `$${first + i}`).join(', ');
  const keyValues = (table: CopyTable, key: Key) =>
    key.map((v, i) => toPostgres(table.columns[table.key[i]!]!, v)) as never[];
  const toRow = (table: CopyTable, raw: Record<string, unknown>): Row =>
    Object.fromEntries(
      Object.entries(table.columns).map(([column, kind]) => [column, fromPostgres(kind, raw[column])]),
    );

  return {
    async accounts(table) {
      const rows = await sql.unsafe(`SELECT DISTINCT account FROM ${table.name} WHERE true${only(table)}`);
      return rows.map((row) => row.account as string);
    },
    async count(table, account) {
      const [row] = await sql.unsafe(`SELECT count(*)::int AS n ${ofAccount(table)}`, [account]);
      return row!.n as number;
    },
    async keyAt(table, account, position) {
      const [raw] = await sql.unsafe(
        `SELECT ${keyList(table)} ${ofAccount(table)} ORDER BY ${keyList(table)} LIMIT 1 OFFSET $2`,
        [account, position],
      );
      return raw ? table.key.map((column) => fromPostgres(table.columns[column]!, raw[column])) : null;
    },
    async hasKey(table, account, key) {
      const rows = await sql.unsafe(`SELECT 1 ${ofAccount(table)} AND (${keyList(table)}) = (${keyParams(table, 2)})`, [
        account,
        ...keyValues(table, key),
      ]);
      return rows.length > 0;
    },
    async readBatch(table, account, after, limit) {
      const columns = Object.keys(table.columns).join(', ');
      const raws =
        after === null
          ? await sql.unsafe(`SELECT ${columns} ${ofAccount(table)} ORDER BY ${keyList(table)} LIMIT $2`, [
              account,
              limit,
            ])
          : await sql.unsafe(
              `SELECT ${columns} ${ofAccount(table)} AND (${keyList(table)}) > (${keyParams(table, 2)})
               ORDER BY ${keyList(table)} LIMIT $${2 + table.key.length}`,
              [account, ...keyValues(table, after), limit],
            );
      return raws.map((raw) => toRow(table, raw));
    },
    async insertNew(table, rows) {
      if (rows.length === 0) return 0;
      const columns = Object.keys(table.columns);
      const values = rows.map((row) =>
        Object.fromEntries(columns.map((column) => [column, toPostgres(table.columns[column]!, row[column] ?? null)])),
      );
      // One statement, so one transaction: the batch is in the target entirely or not at all.
      const result = await sql`INSERT INTO ${sql(table.name)} ${sql(values as never, columns)} ON CONFLICT DO NOTHING`;
      return result.count;
    },
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}

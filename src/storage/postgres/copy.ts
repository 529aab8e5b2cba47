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
import { connect } from './connection.js';
import { migrate } from './migrations.js';
import { postgresOutbox } from './outbox.js';

/** A copy reads and writes one batch at a time: two connections are plenty. */
const COPY_POOL_MAX = 2;

/** PostgreSQL keeps times as timestamptz (Date here), word lists as text[]. */
const toPostgres: ToEngine = (kind, value) => {
  if (value === null) return null;
  if (kind === 'time') return new Date(value as number);
  return value;
};

const fromPostgres: FromEngine = (kind, value) => {
  if (value === null) return null;
  if (kind === 'time') return (value as Date).getTime();
  return value as Value;
};

/** A PostgreSQL store opened for copying, its schema brought up to date first (as the server would). */
export async function postgresCopyStore(url: string): Promise<CopyStore> {
  const sql = connect(url, COPY_POOL_MAX);
  try {
    await migrate(sql);
    // Pending deliveries are copied from webhook_deliveries: the events still packed in the outbox go there first.
    await postgresOutbox(sql).unpackAll();
  } catch (error) {
    await sql.end({ timeout: 0 });
    throw error;
  }

  const tableExists = async (name: string) =>
    (await sql`SELECT to_regclass(${name}) IS NOT NULL AS found`)[0]!.found as boolean;
  // Table and column names come from COPY_TABLES, never from input.
  const ofAccount = (table: CopyTable) => `FROM ${table.name} WHERE account = $1${onlyRows(table)}`;
  const keyParams = (table: CopyTable, first: number) => table.key.map((_, i) => `$${first + i}`).join(', ');

  return {
    async accounts(table) {
      const rows = await sql.unsafe(`SELECT DISTINCT account FROM ${table.name} WHERE true${onlyRows(table)}`);
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
      return raw ? keyOf(table, raw, fromPostgres) : null;
    },
    async hasKey(table, account, key) {
      const rows = await sql.unsafe(`SELECT 1 ${ofAccount(table)} AND (${keyList(table)}) = (${keyParams(table, 2)})`, [
        account,
        ...(keyValues(table, key, toPostgres) as never[]),
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
              [account, ...(keyValues(table, after, toPostgres) as never[]), limit],
            );
      return raws.map((raw) => rowOf(table, raw, fromPostgres));
    },
    async insertNew(table, account, rows) {
      const last = rows[rows.length - 1];
      if (!last) return 0;
      const columns = Object.keys(table.columns);
      const values = rows.map((row) =>
        Object.fromEntries(columns.map((column) => [column, toPostgres(table.columns[column]!, row[column] ?? null)])),
      );
      const after = encodeKey(table.key.map((column) => last[column] ?? null));
      // The batch and how far the copy got commit together: a resumed copy starts right after what is there.
      return sql.begin(async (tx) => {
        const result = await tx`INSERT INTO ${tx(table.name)} ${tx(values as never, columns)} ON CONFLICT DO NOTHING`;
        await tx.unsafe(
          `INSERT INTO ${COPY_PROGRESS_TABLE} (table_name, account, after_key) VALUES ($1, $2, $3)
           ON CONFLICT (table_name, account) DO UPDATE SET after_key = excluded.after_key`,
          [table.name, account, after],
        );
        return result.count;
      });
    },
    async holdsRows(tables) {
      for (const table of tables) {
        if ((await sql.unsafe(`SELECT 1 FROM ${table.name} LIMIT 1`)).length > 0) return true;
      }
      return false;
    },
    async copiedFrom() {
      if (!(await tableExists(COPY_MARKER_TABLE))) return null;
      const [row] = await sql.unsafe(`SELECT source FROM ${COPY_MARKER_TABLE}`);
      return (row?.source as string | undefined) ?? null;
    },
    async markCopyOf(source) {
      await sql.unsafe(
        `CREATE TABLE IF NOT EXISTS ${COPY_MARKER_TABLE} (source text NOT NULL, started_at timestamptz NOT NULL)`,
      );
      await sql.unsafe(`CREATE TABLE IF NOT EXISTS ${COPY_PROGRESS_TABLE} (
                          table_name text NOT NULL, account text NOT NULL, after_key text NOT NULL,
                          PRIMARY KEY (table_name, account)
                        )`);
      await sql.begin(async (tx) => {
        await tx.unsafe(`DELETE FROM ${COPY_MARKER_TABLE}`);
        await tx.unsafe(`INSERT INTO ${COPY_MARKER_TABLE} (source, started_at) VALUES ($1, now())`, [source]);
      });
    },
    async copiedUpTo(table, account) {
      if (!(await tableExists(COPY_PROGRESS_TABLE))) return null;
      const [row] = await sql.unsafe(
        `SELECT after_key FROM ${COPY_PROGRESS_TABLE} WHERE table_name = $1 AND account = $2`,
        [table.name, account],
      );
      return row ? decodeKey(table, row.after_key as string) : null;
    },
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}

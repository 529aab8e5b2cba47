import { PLANTS_TABLE } from './plant-rows.js';

/**
 * What `plant-store copy` moves between two stores of any engines: the tables, their columns as
 * migration 2 defines them, and the small bulk interface both engines implement (sqlite/copy.ts,
 * postgres/copy.ts). Rows travel in one engine-neutral form, so a SQLite row and a PostgreSQL row
 * of the same data are equal values and hash alike.
 */

/**
 * How a column's value is carried between engines:
 * - `text`, `int64` (bigint, exact), `int32` (number), `bool`;
 * - `time`: epoch milliseconds (SQLite keeps them so; PostgreSQL's timestamptz is read to the ms);
 * - `words`: a list of words (SQLite: space-separated, PostgreSQL: text[]);
 * - `padded-words`: the same with a space at each end in SQLite, so ' plant.created ' finds a whole word.
 */
export type ColumnKind = 'text' | 'int64' | 'int32' | 'bool' | 'time' | 'words' | 'padded-words';

export type Value = string | bigint | number | boolean | string[] | null;

/** A row by column name, values in their neutral form. */
export type Row = Record<string, Value>;

/** A position in a table's keyset order inside one account: the values of `key`, in order. */
export type Key = Value[];

export interface CopyTable {
  name: string;
  /** Every table is keyed by account first; these are the rest of its primary key, in order. */
  key: string[];
  /** Every column copied, `account` included. A column added by a migration is one line here. */
  columns: Record<string, ColumnKind>;
  /** Only rows where this column has this value are copied (and compared). */
  only?: { column: string; value: string };
}

/** In dependency order: endpoints before their deliveries. */
export const COPY_TABLES: CopyTable[] = [
  {
    name: 'api_tokens',
    key: ['id'],
    columns: {
      account: 'text',
      id: 'text',
      // The hash as stored: the secret itself never existed in the store.
      secret_hash: 'text',
      scopes: 'words',
      created_at: 'time',
      expires_at: 'time',
      revoked_at: 'time',
    },
  },
  {
    name: 'plants',
    key: ['id'],
    // name_folded travels with the name: the destination indexes it as it comes (sqlite/search-index.ts).
    columns: PLANTS_TABLE,
  },
  {
    name: 'webhook_endpoints',
    key: ['id'],
    columns: {
      account: 'text',
      id: 'text',
      url: 'text',
      events: 'padded-words',
      description: 'text',
      enabled: 'bool',
      secret: 'text',
      previous_secret: 'text',
      previous_secret_until: 'time',
      created_at: 'time',
    },
  },
  {
    name: 'webhook_deliveries',
    key: ['endpoint_id', 'event_id'],
    // Delivered and failed events are history the source keeps; only pending ones still have work to do.
    only: { column: 'state', value: 'pending' },
    columns: {
      account: 'text',
      endpoint_id: 'text',
      event_id: 'text',
      event_type: 'text',
      payload: 'text',
      created_at: 'time',
      state: 'text',
      attempts: 'int32',
      next_attempt_at: 'time',
      lease_owner: 'text',
      lease_until: 'time',
      last_status: 'int32',
      last_error: 'text',
      updated_at: 'time',
    },
  },
];

/** How an engine binds a neutral value (`to`) and reads one back (`from`): sqlite/copy.ts, postgres/copy.ts. */
export type ToEngine = (kind: ColumnKind, value: Value) => unknown;
export type FromEngine = (kind: ColumnKind, value: unknown) => Value;

/**
 * The pieces both engines' copy stores build from a table. Table and column names come from
 * COPY_TABLES, never from input.
 */

/** The condition that keeps only `only`'s rows, to append to a WHERE (empty when the table has none). */
export const onlyRows = (table: CopyTable) => (table.only ? ` AND ${table.only.column} = '${table.only.value}'` : '');

export const keyList = (table: CopyTable) => table.key.join(', ');

/** A key's values as the engine binds them. */
export const keyValues = (table: CopyTable, key: Key, to: ToEngine) =>
  key.map((value, i) => to(table.columns[table.key[i]!]!, value));

/** The key of a row the engine read. */
export const keyOf = (table: CopyTable, raw: Record<string, unknown>, from: FromEngine): Key =>
  table.key.map((column) => from(table.columns[column]!, raw[column]));

/** A row the engine read, by column, its values in their neutral form. */
export const rowOf = (table: CopyTable, raw: Record<string, unknown>, from: FromEngine): Row =>
  Object.fromEntries(Object.entries(table.columns).map(([column, kind]) => [column, from(kind, raw[column])]));

/** One end of a copy. Every read and count is of one account's rows (and of `only`'s rows). */
export interface CopyStore {
  /** The accounts that have rows in `table`. */
  accounts(table: CopyTable): Promise<string[]>;
  count(table: CopyTable, account: string): Promise<number>;
  /** The key of the row at this 0-based position in keyset order, or null past the end. */
  keyAt(table: CopyTable, account: string, position: number): Promise<Key | null>;
  hasKey(table: CopyTable, account: string, key: Key): Promise<boolean>;
  /** Up to `limit` rows after `after` (from the start when null), in keyset order. */
  readBatch(table: CopyTable, account: string, after: Key | null, limit: number): Promise<Row[]>;
  /**
   * Inserts one account's rows in one transaction, leaving any row whose primary key exists, and
   * records in the same transaction that the copy reached the last row's key; returns how many went in.
   */
  insertNew(table: CopyTable, account: string, rows: Row[]): Promise<number>;
  /** Whether any of the tables holds a row of any account (whatever `only` says): the store is not empty. */
  holdsRows(tables: CopyTable[]): Promise<boolean>;
  /** The source named by the marker an earlier copy into this store wrote first, or null when no copy wrote here. */
  copiedFrom(): Promise<string | null>;
  /** Writes the marker (before any row): from now on this store holds a copy of `source`. */
  markCopyOf(source: string): Promise<void>;
  /** The key of the last row a copy into this store committed for this table and account, or null. */
  copiedUpTo(table: CopyTable, account: string): Promise<Key | null>;
  close(): Promise<void>;
}

/**
 * The copy's own bookkeeping in its target, outside the migrations (the server never reads it):
 * the marker naming the source, and how far each table and account has been copied.
 */
export const COPY_MARKER_TABLE = 'plant_store_copy_source';
export const COPY_PROGRESS_TABLE = 'plant_store_copy_progress';

/** A key as the progress table keeps it: JSON, int64 values as decimal strings. */
export function encodeKey(key: Key): string {
  return JSON.stringify(key.map((value) => (typeof value === 'bigint' ? value.toString() : value)));
}

export function decodeKey(table: CopyTable, text: string): Key {
  const values = JSON.parse(text) as (string | null)[];
  return table.key.map((column, i) => {
    const value = values[i] ?? null;
    return value !== null && table.columns[column] === 'int64' ? BigInt(value) : value;
  });
}

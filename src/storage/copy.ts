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
    // name_folded travels with the name: the destination's triggers index it as it comes (migration 5).
    columns: { account: 'text', id: 'int64', name: 'text', tag: 'text', revision: 'int64', name_folded: 'text' },
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
  /** Inserts the rows in one transaction, leaving any row whose primary key exists; returns how many went in. */
  insertNew(table: CopyTable, rows: Row[]): Promise<number>;
  close(): Promise<void>;
}

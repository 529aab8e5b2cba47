import { createHash } from 'node:crypto';
import type { CopyStore, CopyTable, Key, Row } from '../storage/copy.js';

/** One account's rows of one table: how many, and a checksum that ignores their order. */
export interface Digest {
  count: number;
  checksum: string;
}

export interface Difference {
  table: string;
  account: string;
  source: Digest;
  target: Digest;
}

const SUM_MODULUS = 1n << 128n;

/** Values in column order; bigints as decimal text, the same whichever engine they came from. */
const rowText = (table: CopyTable, row: Row) =>
  JSON.stringify(
    Object.keys(table.columns).map((column) => {
      const value = row[column] ?? null;
      return typeof value === 'bigint' ? value.toString() : value;
    }),
  );

/**
 * The sum of each row's SHA-256 (first 128 bits): any changed, missing or extra row changes it,
 * and the engines may list rows in different orders (text keys sort by each one's collation).
 */
async function digest(store: CopyStore, table: CopyTable, account: string, batchSize: number): Promise<Digest> {
  let count = 0;
  let sum = 0n;
  let after: Key | null = null;
  for (;;) {
    const rows = await store.readBatch(table, account, after, batchSize);
    for (const row of rows) {
      sum =
        (sum + BigInt('0x' + createHash('sha256').update(rowText(table, row)).digest('hex').slice(0, 32))) %
        SUM_MODULUS;
    }
    count += rows.length;
    if (rows.length < batchSize) break;
    after = table.key.map((column) => rows[rows.length - 1]![column] ?? null);
  }
  return { count, checksum: sum.toString(16).padStart(32, '0') };
}

/** Compares every account of every table, both ways; returns the accounts checked and what differs. */
export async function compareStores(from: CopyStore, to: CopyStore, tables: CopyTable[], batchSize: number) {
  const accounts = new Set<string>();
  const differences: Difference[] = [];
  for (const table of tables) {
    const ofTable = new Set([...(await from.accounts(table)), ...(await to.accounts(table))]);
    for (const account of [...ofTable].sort()) {
      accounts.add(account);
      const source = await digest(from, table, account, batchSize);
      const target = await digest(to, table, account, batchSize);
      if (source.count !== target.count || source.checksum !== target.checksum) {
        differences.push({ table: table.name, account, source, target });
      }
    }
  }
  return { accounts: accounts.size, differences };
}

import type { CopyStore, CopyTable, Key, Row } from '../storage/copy.js';

export interface TableCopied {
  table: string;
  /** Rows of the table in the source. */
  source: number;
  /** Rows this run inserted; the rest were in the target already. */
  copied: number;
  /** Rows an earlier, interrupted run had copied, which this one did not read again. */
  resumed: number;
}

const keyOf = (table: CopyTable, row: Row): Key => table.key.map((column) => row[column] ?? null);

/**
 * Where an earlier, interrupted copy of one account's rows stopped. Batches go in keyset order,
 * each in one transaction, so such a target holds the source's first n rows, the last of them
 * the source's n-th: resume after it. Any other target (empty, or with rows of its own) starts
 * from the beginning; inserting skips rows already there, and the comparison at the end reports
 * any difference, so a wrong guess here costs time, never correctness.
 */
async function resumeAfter(from: CopyStore, to: CopyStore, table: CopyTable, account: string) {
  const present = await to.count(table, account);
  if (present === 0) return { after: null, skipped: 0 };
  const last = await from.keyAt(table, account, present - 1);
  if (last === null || !(await to.hasKey(table, account, last))) return { after: null, skipped: 0 };
  return { after: last, skipped: present };
}

/** Copies one table, account by account, in keyset batches; `progress` hears of every row passed. */
export async function copyTable(
  from: CopyStore,
  to: CopyStore,
  table: CopyTable,
  { batchSize, resume }: { batchSize: number; resume: boolean },
  progress: (rows: number) => void,
): Promise<TableCopied> {
  const result: TableCopied = { table: table.name, source: 0, copied: 0, resumed: 0 };
  for (const account of await from.accounts(table)) {
    result.source += await from.count(table, account);
    let { after, skipped } = resume ? await resumeAfter(from, to, table, account) : { after: null, skipped: 0 };
    result.resumed += skipped;
    progress(skipped);
    for (;;) {
      const rows = await from.readBatch(table, account, after, batchSize);
      if (rows.length === 0) break;
      result.copied += await to.insertNew(table, rows);
      progress(rows.length);
      after = keyOf(table, rows[rows.length - 1]!);
      if (rows.length < batchSize) break;
    }
  }
  return result;
}

/** Rows to pass, for a progress bar's total. */
export async function countRows(store: CopyStore, tables: CopyTable[]): Promise<number> {
  let total = 0;
  for (const table of tables) {
    for (const account of await store.accounts(table)) total += await store.count(table, account);
  }
  return total;
}

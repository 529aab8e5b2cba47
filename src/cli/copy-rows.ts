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
 * Where this copy's earlier, interrupted run stopped in one account's rows: the key it recorded
 * with its last committed batch (the target holds its own copy only: copy-command refuses any
 * other). Never guessed from what the target holds, so a row the target lacks is never skipped
 * because of rows around it.
 */
async function resumeAfter(to: CopyStore, table: CopyTable, account: string) {
  const after = await to.copiedUpTo(table, account);
  return after === null ? { after: null, skipped: 0 } : { after, skipped: await to.count(table, account) };
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
    let { after, skipped } = resume ? await resumeAfter(to, table, account) : { after: null, skipped: 0 };
    result.resumed += skipped;
    progress(skipped);
    for (;;) {
      const rows = await from.readBatch(table, account, after, batchSize);
      if (rows.length === 0) break;
      result.copied += await to.insertNew(table, account, rows);
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

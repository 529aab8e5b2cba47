import { foldCase } from '../case-fold.js';
import type { Tx } from './connection.js';

const FOLD_CHUNK_ROWS = 1000;

/**
 * Migration 4: what `GET /plants?tag=&q=&sort=` reads instead of the whole account.
 *
 * - `name_folded`: the name under Unicode's simple case folding (case-fold.ts), written by the
 *   code that writes `name`; existing rows are folded here, in JavaScript, since SQL's lower()
 *   depends on the database's `lc_ctype` and is not case folding.
 * - `(account, tag, id)` and `(account, name COLLATE "C", id)`: a tag's plants in id order, and the
 *   name order in code points (the "C" collation compares UTF-8 bytes, which is code point order).
 * - A `pg_trgm` GIN index of the folded names for `LIKE '%text%'`. pg_trgm is a trusted extension
 *   (PostgreSQL 13+): a database owner may create it. Where the role may not, an administrator runs
 *   `CREATE EXTENSION pg_trgm` in the database once (docs/finding-plants.md), then this migration passes.
 */
export async function searchMigration(tx: Tx): Promise<void> {
  await tx`ALTER TABLE plants ADD COLUMN name_folded text NOT NULL DEFAULT ''`;
  type Row = { account: string; id: bigint; name: string };
  let last: Row | undefined;
  for (;;) {
    const after = last === undefined ? tx`` : tx`WHERE (account, id) > (${last.account}, ${last.id})`;
    const rows = await tx<
      Row[]
    >`SELECT account, id, name FROM plants ${after} ORDER BY account, id LIMIT ${FOLD_CHUNK_ROWS}`;
    if (rows.length === 0) break;
    await tx`
      UPDATE plants p SET name_folded = f.folded
      FROM unnest(${tx.array(rows.map((r) => r.account))}::text[],
                  ${tx.array(rows.map((r) => r.id))}::int8[],
                  ${tx.array(rows.map((r) => foldCase(r.name)))}::text[]) AS f(account, id, folded)
      WHERE p.account = f.account AND p.id = f.id`;
    last = rows[rows.length - 1];
  }
  await tx.unsafe(`
    ALTER TABLE plants ALTER COLUMN name_folded DROP DEFAULT;
    CREATE INDEX plants_by_tag ON plants (account, tag, id);
    CREATE INDEX plants_by_name ON plants (account, (name COLLATE "C"), id);
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    CREATE INDEX plants_name_trigrams ON plants USING gin (name_folded gin_trgm_ops);`);
}

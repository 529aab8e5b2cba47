import type Database from 'better-sqlite3';

/**
 * The trigram index of the folded names (migration 5), written by the code that writes `plants`
 * (plant-writer.ts, and the copy) in the same transaction. A candidate filter only: every search
 * joins its hits to `plant_search_keys` and tests each plant's folded name exactly
 * (plant-listing.ts), so an index entry that no key names any more finds nothing.
 *
 * What makes it cheap (figures in bench/analysis.md):
 * - Plain statements, not triggers (migration 7 dropped them): SQLite runs each statement of a
 *   trigger under a savepoint, and FTS5 writes its pending terms out as a new segment at every
 *   savepoint, one segment per plant.
 * - Nothing is ever deleted from the FTS5 table: a delete there is costly on a large index (FTS5's
 *   tombstones). A deleted plant loses its key; a renamed one gets a new key, under
 *   which its new name is indexed. Keys come from a counter (`plant_search_seq`, migration 9), never
 *   reused, so no new entry can land on an old one's rowid. The index keeps the old entries; a
 *   store rewritten many times over can be indexed again from scratch (docs/data.md).
 * - The counter is read once and written once per transaction (`flush`), not moved per plant: an
 *   UPDATE between two index rows opens a statement savepoint, the same flush as a trigger's.
 */
export interface SearchIndex {
  add(account: string, id: bigint, nameFolded: string): void;
  /** The plant's folded name changed from `before` to `after`. */
  rename(account: string, id: bigint, before: string, after: string): void;
  remove(account: string, id: bigint): void;
  /** Last in the transaction: stores where the counter stands. */
  flush(): void;
}

/** Call the returned function at the start of each write transaction, and its `flush` at the end. */
export function searchIndex(db: Database.Database): () => SearchIndex {
  const readNext = db.prepare('SELECT next FROM plant_search_seq').pluck();
  const writeNext = db.prepare('UPDATE plant_search_seq SET next = ?');
  const addKey = db.prepare('INSERT INTO plant_search_keys (seq, account, id) VALUES (?, ?, ?)');
  const removeKey = db.prepare('DELETE FROM plant_search_keys WHERE account = ? AND id = ?');
  const addName = db.prepare('INSERT INTO plant_names (rowid, name_folded) VALUES (?, ?)');

  return () => {
    /** The next key, read when this transaction first needs one (it holds the write lock). */
    let next: number | null = null;
    const add = (account: string, id: bigint, nameFolded: string) => {
      next ??= readNext.get() as number;
      const seq = next++;
      addKey.run(seq, account, id);
      addName.run(seq, nameFolded);
    };
    return {
      add,
      rename(account, id, before, after) {
        if (before === after) return;
        removeKey.run(account, id);
        add(account, id, after);
      },
      remove(account, id) {
        removeKey.run(account, id);
      },
      flush() {
        if (next !== null) writeNext.run(next);
      },
    };
  };
}

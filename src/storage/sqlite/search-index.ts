import type Database from 'better-sqlite3';

/**
 * The trigram index of the folded names (migration 5), written by the code that writes `plants`
 * (plants.ts, and the copy) in the same transaction. Not by triggers (migration 7 dropped them):
 * SQLite runs each statement of a trigger under a savepoint, and FTS5 flushes its pending terms
 * to a new segment at every savepoint, so a trigger made one segment per plant and a create cost
 * about 20 us more than these plain statements do (measured: a batch of 1,000 plants, 24 us per
 * plant with the triggers, 7 us without).
 */
export interface SearchIndex {
  add(account: string, id: bigint, nameFolded: string): void;
  /** The plant's folded name changed from `before` to `after`. */
  rename(account: string, id: bigint, before: string, after: string): void;
  remove(account: string, id: bigint): void;
}

export function searchIndex(db: Database.Database): SearchIndex {
  const addKey = db.prepare('INSERT INTO plant_search_keys (account, id) VALUES (?, ?)');
  const keyOf = db.prepare('SELECT seq FROM plant_search_keys WHERE account = ? AND id = ?').pluck();
  const removeKey = db.prepare('DELETE FROM plant_search_keys WHERE seq = ?');
  const addName = db.prepare('INSERT INTO plant_names (rowid, name_folded) VALUES (?, ?)');
  const removeName = db.prepare('DELETE FROM plant_names WHERE rowid = ?');

  return {
    add(account, id, nameFolded) {
      addName.run(addKey.run(account, id).lastInsertRowid, nameFolded);
    },
    rename(account, id, before, after) {
      if (before === after) return;
      const seq = keyOf.get(account, id);
      if (seq === undefined) return;
      removeName.run(seq);
      addName.run(seq, after);
    },
    remove(account, id) {
      const seq = keyOf.get(account, id);
      if (seq === undefined) return;
      removeName.run(seq);
      removeKey.run(seq);
    },
  };
}

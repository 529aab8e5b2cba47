/**
 * The SQLite side both SQLite peers share: the service's statements, word for word (see
 * src/storage/sqlite.ts), on a connection opened as the service opens it. WAL and
 * `synchronous = FULL` (better-sqlite3 builds SQLite with NORMAL as the WAL default, which does
 * not sync at commit): a 200 to a create means the row is on disk, as with the service.
 */
import Database from 'better-sqlite3';
import type { TokenRow } from './common.js';

export interface PlantRow {
  id: number;
  name: string;
  tag: string | null;
}

export function openPlants(url: string) {
  const db = new Database(url.slice('sqlite:'.length));
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  const token = db.prepare('SELECT * FROM api_tokens WHERE secret_hash = ?');
  const firstPage = db.prepare('SELECT id, name, tag FROM plants WHERE account = ? ORDER BY id LIMIT ? + 0');
  const page = db.prepare('SELECT id, name, tag FROM plants WHERE account = ? AND id > ? ORDER BY id LIMIT ? + 0');
  const insert = db.prepare('INSERT INTO plants (account, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING');
  const one = db.prepare('SELECT id, name, tag FROM plants WHERE account = ? AND id = ?');
  const rename = db.prepare(
    'UPDATE plants SET name = coalesce(?, name), tag = coalesce(?, tag) WHERE account = ? AND id = ? RETURNING id, name, tag',
  );
  const remove = db.prepare('DELETE FROM plants WHERE account = ? AND id = ?');
  return {
    token: (hash: string) => token.get(hash) as TokenRow | undefined,
    page: (account: string, after: number | null, limit: number) =>
      (after === null ? firstPage.all(account, limit) : page.all(account, after, limit)) as PlantRow[],
    /** The stored plant, and whether this call created it. */
    create(account: string, plant: { id: number; name: string; tag?: string }) {
      const tag = plant.tag ?? null;
      if (insert.run(account, plant.id, plant.name, tag).changes === 1)
        return { created: true, stored: { id: plant.id, name: plant.name, tag } };
      return { created: false, stored: one.get(account, plant.id) as PlantRow };
    },
    /** The plant after the change, or undefined when the account has none with this id. */
    update: (account: string, id: number, change: { name?: string; tag?: string }) =>
      rename.get(change.name ?? null, change.tag ?? null, account, id) as PlantRow | undefined,
    /** Whether there was such a plant. */
    remove: (account: string, id: number) => remove.run(account, id).changes === 1,
  };
}

/**
 * Puts back the plants `count` ids from `first` of `account` that a DELETE run took, with plain
 * rows (the peer's store has no search keys or events to restore, unlike the service's).
 */
export function restorePlainPlants(url: string, account: string, first: number, count: number) {
  const db = new Database(url.slice('sqlite:'.length));
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare(
      `WITH RECURSIVE ids(id) AS (SELECT ? UNION ALL SELECT id + 1 FROM ids WHERE id < ?)
       INSERT INTO plants (account, id, name, tag) SELECT ?, id, 'plant ' || id, NULL FROM ids WHERE true ON CONFLICT DO NOTHING`,
    ).run(first, first + count - 1, account);
  } finally {
    db.close();
  }
}

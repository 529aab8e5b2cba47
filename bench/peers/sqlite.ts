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
  };
}

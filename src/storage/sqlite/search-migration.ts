import type Database from 'better-sqlite3';
import { foldCase } from '../case-fold.js';

/**
 * Migration 5: what `GET /plants?tag=&q=&sort=` reads instead of the whole account.
 *
 * - `name_folded`: the name under Unicode's simple case folding (case-fold.ts), written by the
 *   code that writes `name`; existing rows are folded here, in JavaScript, since SQL cannot.
 * - `(account, tag, id)` and `(account, name, id)`: a tag's plants in id order, and the name order
 *   (BINARY collation on UTF-8 text is code point order).
 * - `plant_names`: an FTS5 `trigram` index of the folded names, case-sensitive (the names are
 *   folded already; its own folding would only widen the candidates). FTS5 needs an integer rowid
 *   and `plants` is keyed by (account, id), so `plant_search_keys` gives each plant one. The
 *   triggers made here kept both in step with every write to `plants` until migration 7 replaced
 *   them with search-index.ts.
 */
export function searchMigration(db: Database.Database): void {
  db.function('plant_store_fold_case', { deterministic: true }, (name: unknown) => foldCase(String(name)));
  db.exec(`
    ALTER TABLE plants ADD COLUMN name_folded TEXT NOT NULL DEFAULT '';
    UPDATE plants SET name_folded = plant_store_fold_case(name);
    CREATE INDEX plants_by_tag ON plants (account, tag, id);
    CREATE INDEX plants_by_name ON plants (account, name, id);
    CREATE TABLE plant_search_keys (
      seq INTEGER PRIMARY KEY,
      account TEXT NOT NULL,
      id INTEGER NOT NULL,
      UNIQUE (account, id)
    );
    CREATE VIRTUAL TABLE plant_names USING fts5(
      name_folded, content = '', contentless_delete = 1, tokenize = 'trigram case_sensitive 1'
    );
    INSERT INTO plant_search_keys (account, id) SELECT account, id FROM plants;
    INSERT INTO plant_names (rowid, name_folded)
      SELECT k.seq, p.name_folded FROM plant_search_keys k JOIN plants p ON p.account = k.account AND p.id = k.id;
    CREATE TRIGGER plants_search_insert AFTER INSERT ON plants BEGIN
      INSERT INTO plant_search_keys (account, id) VALUES (new.account, new.id);
      INSERT INTO plant_names (rowid, name_folded)
        VALUES ((SELECT seq FROM plant_search_keys WHERE account = new.account AND id = new.id), new.name_folded);
    END;
    CREATE TRIGGER plants_search_update AFTER UPDATE OF name_folded ON plants
      WHEN old.name_folded IS NOT new.name_folded BEGIN
      DELETE FROM plant_names
        WHERE rowid = (SELECT seq FROM plant_search_keys WHERE account = old.account AND id = old.id);
      INSERT INTO plant_names (rowid, name_folded)
        VALUES ((SELECT seq FROM plant_search_keys WHERE account = new.account AND id = new.id), new.name_folded);
    END;
    CREATE TRIGGER plants_search_delete AFTER DELETE ON plants BEGIN
      DELETE FROM plant_names
        WHERE rowid = (SELECT seq FROM plant_search_keys WHERE account = old.account AND id = old.id);
      DELETE FROM plant_search_keys WHERE account = old.account AND id = old.id;
    END;`);
}

import type Database from 'better-sqlite3';
import { foldCase } from '../case-fold.js';
import {
  characterCount,
  TRIGRAM_MIN_LENGTH,
  type PlantFilter,
  type PlantListing,
  type PlantOrder,
} from '../plant-query.js';
import type { PlantRecord } from '../types/plants.js';

type PageRow = [id: bigint, name: string, tag: string | null];

/** BINARY collation on UTF-8 text: the name orders are code point orders. */
const ORDER_BY: Record<PlantOrder, string> = {
  id: 'id',
  '-id': 'id DESC',
  name: 'name, id',
  '-name': 'name DESC, id DESC',
};
const AFTER: Record<PlantOrder, string> = {
  id: 'id > ?',
  '-id': 'id < ?',
  name: '(name, id) > (?, ?)',
  '-name': '(name, id) < (?, ?)',
};

/**
 * A page searched by name first walks this many plants per plant it wants, in the listing's own
 * order (an index), testing each: a common text (one name in 25 or more) fills the page there.
 * Only when it does not (a rare text) does the page ask the trigram index for every match, which is
 * quick when matches are few. At least WALK_MIN, so that a small page still finds a text of that density.
 */
const WALK_PER_PLANT = 25;
const WALK_MIN = 500;

/** An FTS5 phrase: the text as one quoted string, so no character of it is query syntax. */
const phrase = (text: string) => `"${text.replaceAll('"', '""')}"`;

/** Statements by their SQL text: a listing's shape (filters present, order, position) fixes its text. */
export function sqlitePlantListing(db: Database.Database) {
  const statements = new Map<string, Database.Statement>();
  const prepared = (text: string) => {
    let statement = statements.get(text);
    if (statement === undefined) statements.set(text, (statement = db.prepare(text).safeIntegers(true)));
    return statement;
  };

  /** The WHERE clause of the filter and its parameters; `trigrams` adds the index's candidates. */
  function where(account: string, filter: PlantFilter, trigrams: boolean): [string, unknown[]] {
    const clauses = ['account = ?'];
    const params: unknown[] = [account];
    if (filter.tags !== null) {
      clauses.push(`tag IN (${filter.tags.map(() => '?').join(', ')})`);
      params.push(...filter.tags);
    }
    if (filter.text !== null) {
      const folded = foldCase(filter.text);
      // The exact test: instr compares code points (UTF-8 bytes), never wildcards.
      clauses.push('instr(name_folded, ?) > 0');
      params.push(folded);
      if (trigrams) {
        clauses.push(`id IN (SELECT k.id FROM plant_names f JOIN plant_search_keys k ON k.seq = f.rowid
                             WHERE plant_names MATCH ? AND k.account = ?)`);
        params.push(phrase(folded), account);
      }
    }
    return [clauses.join(' AND '), params];
  }

  function afterClause(listing: PlantListing): [string, unknown[]] {
    const { after, order } = listing;
    if (after === null) return ['', []];
    return [` AND ${AFTER[order]}`, order === 'id' || order === '-id' ? [after.id] : [after.name, after.id]];
  }

  const useTrigrams = (filter: PlantFilter) =>
    filter.text !== null && characterCount(filter.text) >= TRIGRAM_MIN_LENGTH;

  /**
   * Tags in id order, one arm per tag, each read in order from `plants_by_tag` (named: without
   * statistics SQLite prefers walking the whole account by id and testing each tag), then merged.
   */
  function byTags(account: string, listing: PlantListing, limit: number): PlantRecord[] {
    const tags = [...new Set(listing.filter.tags!)];
    const [after, afterParams] = afterClause(listing);
    const order = ORDER_BY[listing.order];
    const arm = `SELECT * FROM (SELECT id, name, tag FROM plants INDEXED BY plants_by_tag
                   WHERE account = ? AND tag = ?${after} ORDER BY ${order} LIMIT ? + 0)`;
    const text = `${tags.map(() => arm).join(' UNION ALL ')} ORDER BY ${order} LIMIT ? + 0`;
    const params = tags.flatMap((tag) => [account, tag, ...afterParams, limit]);
    const rows = prepared(text)
      .raw(true)
      .all(...params, limit) as PageRow[];
    return rows.map(([id, name, tag]) => ({ id, name, tag }));
  }

  function query(account: string, listing: PlantListing, limit: number, trigrams: boolean): PlantRecord[] {
    const { filter, order } = listing;
    if (filter.tags !== null && filter.text === null && (order === 'id' || order === '-id')) {
      return byTags(account, listing, limit);
    }
    const [conditions, params] = where(account, listing.filter, trigrams);
    const [after, afterParams] = afterClause(listing);
    // `LIMIT ? + 0`: a bare LIMIT parameter makes SQLite plan the statement again at each binding.
    const text = `SELECT id, name, tag FROM plants WHERE ${conditions}${after} ORDER BY ${ORDER_BY[listing.order]} LIMIT ? + 0`;
    const rows = prepared(text)
      .raw(true)
      .all(...params, ...afterParams, limit) as PageRow[];
    return rows.map(([id, name, tag]) => ({ id, name, tag }));
  }

  /** The first plants of the order, tested one by one (see WALK_PER_PLANT). */
  function walk(account: string, listing: PlantListing, limit: number): PlantRecord[] {
    const unsearched = { ...listing, filter: { ...listing.filter, text: null } };
    const [conditions, params] = where(account, unsearched.filter, false);
    const [after, afterParams] = afterClause(listing);
    const order = ORDER_BY[listing.order];
    const text = `SELECT id, name, tag FROM (
        SELECT id, name, tag, name_folded FROM plants WHERE ${conditions}${after} ORDER BY ${order} LIMIT ? + 0
      ) WHERE instr(name_folded, ?) > 0 ORDER BY ${order} LIMIT ? + 0`;
    const folded = foldCase(listing.filter.text!);
    const walked = Math.max(WALK_MIN, limit * WALK_PER_PLANT);
    const rows = prepared(text)
      .raw(true)
      .all(...params, ...afterParams, walked, folded, limit) as PageRow[];
    return rows.map(([id, name, tag]) => ({ id, name, tag }));
  }

  return {
    page(account: string, listing: PlantListing, limit: number): PlantRecord[] {
      if (!useTrigrams(listing.filter)) return query(account, listing, limit, false);
      // The walk's matches are the listing's first ones; a full page of them is the answer.
      const walked = walk(account, listing, limit);
      return walked.length >= limit ? walked : query(account, listing, limit, true);
    },
    count(account: string, filter: PlantFilter): number {
      const [conditions, params] = where(account, filter, useTrigrams(filter));
      return Number(
        prepared(`SELECT count(*) FROM plants WHERE ${conditions}`)
          .pluck()
          .get(...params),
      );
    },
  };
}

import type Database from 'better-sqlite3';
import { foldCase } from '../case-fold.js';
import {
  characterCount,
  isSet,
  onlyFilter,
  ORDERS,
  PLANT_FILTER_KEYS,
  TRIGRAM_MIN_LENGTH,
  type PlantFilter,
  type PlantFilterKey,
  type PlantListing,
  type PlantOrder,
} from '../plant-query.js';
import type { PlantRecord } from '../types/plants.js';
import { PLANT_COLUMNS } from '../../plant-fields.js';

/** What a listing reads of each plant (plant-fields.ts). */
const COLUMNS = PLANT_COLUMNS.join(', ');

/** BINARY collation on UTF-8 text: the name orders are code point orders. */
const orderBy = (order: PlantOrder) => {
  const { byName, descending } = ORDERS[order];
  return (byName ? ['name', 'id'] : ['id']).map((column) => (descending ? `${column} DESC` : column)).join(', ');
};
const afterPosition = (order: PlantOrder) => {
  const { byName, descending } = ORDERS[order];
  return `${byName ? '(name, id)' : 'id'} ${descending ? '<' : '>'} ${byName ? '(?, ?)' : '?'}`;
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

type Clause = [sql: string, params: unknown[]];

/**
 * Each filter's conditions (ANDed); `trigrams` adds the trigram index's candidates to a search.
 * One entry per key of `PlantFilter`: a filter missing here does not compile.
 */
const FILTER_SQL: {
  [K in PlantFilterKey]-?: (value: NonNullable<PlantFilter[K]>, account: string, trigrams: boolean) => Clause[];
} = {
  tags: (tags) => [[`tag IN (${tags.map(() => '?').join(', ')})`, tags]],
  text(text, account, trigrams) {
    const folded = foldCase(text);
    // The exact test: instr compares code points (UTF-8 bytes), never wildcards.
    const exact: Clause = ['instr(name_folded, ?) > 0', [folded]];
    if (!trigrams) return [exact];
    const candidates = `id IN (SELECT k.id FROM plant_names f JOIN plant_search_keys k ON k.seq = f.rowid
                               WHERE plant_names MATCH ? AND k.account = ?)`;
    return [exact, [candidates, [phrase(folded), account]]];
  },
};

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
    for (const key of PLANT_FILTER_KEYS) {
      if (!isSet(filter, key)) continue;
      for (const [clause, values] of FILTER_SQL[key](filter[key] as never, account, trigrams)) {
        clauses.push(clause);
        params.push(...values);
      }
    }
    return [clauses.join(' AND '), params];
  }

  function afterClause(listing: PlantListing): [string, unknown[]] {
    const { after, order } = listing;
    if (after === null) return ['', []];
    return [` AND ${afterPosition(order)}`, ORDERS[order].byName ? [after.name, after.id] : [after.id]];
  }

  const useTrigrams = (filter: PlantFilter) =>
    isSet(filter, 'text') && characterCount(filter.text) >= TRIGRAM_MIN_LENGTH;

  /**
   * Tags in id order, one arm per tag, each read in order from `plants_by_tag` (named: without
   * statistics SQLite prefers walking the whole account by id and testing each tag), then merged.
   */
  function byTags(account: string, listing: PlantListing, limit: number): PlantRecord[] {
    const tags = [...new Set(listing.filter.tags!)];
    const [after, afterParams] = afterClause(listing);
    const order = orderBy(listing.order);
    const arm = `SELECT * FROM (SELECT ${COLUMNS} FROM plants INDEXED BY plants_by_tag
                   WHERE account = ? AND tag = ?${after} ORDER BY ${order} LIMIT ? + 0)`;
    const text = `${tags.map(() => arm).join(' UNION ALL ')} ORDER BY ${order} LIMIT ? + 0`;
    const params = tags.flatMap((tag) => [account, tag, ...afterParams, limit]);
    const rows = prepared(text).all(...params, limit) as PlantRecord[];
    return rows;
  }

  function query(account: string, listing: PlantListing, limit: number, trigrams: boolean): PlantRecord[] {
    const { filter, order } = listing;
    if (onlyFilter(filter, 'tags') && !ORDERS[order].byName) {
      return byTags(account, listing, limit);
    }
    const [conditions, params] = where(account, listing.filter, trigrams);
    const [after, afterParams] = afterClause(listing);
    // `LIMIT ? + 0`: a bare LIMIT parameter makes SQLite plan the statement again at each binding.
    const text = `SELECT ${COLUMNS} FROM plants WHERE ${conditions}${after} ORDER BY ${orderBy(listing.order)} LIMIT ? + 0`;
    const rows = prepared(text).all(...params, ...afterParams, limit) as PlantRecord[];
    return rows;
  }

  /** The first plants of the order, tested one by one (see WALK_PER_PLANT). */
  function walk(account: string, listing: PlantListing, limit: number): PlantRecord[] {
    const unsearched = { ...listing, filter: { ...listing.filter, text: null } };
    const [conditions, params] = where(account, unsearched.filter, false);
    const [after, afterParams] = afterClause(listing);
    const order = orderBy(listing.order);
    const text = `SELECT ${COLUMNS} FROM (
        SELECT ${COLUMNS}, name_folded FROM plants WHERE ${conditions}${after} ORDER BY ${order} LIMIT ? + 0
      ) WHERE instr(name_folded, ?) > 0 ORDER BY ${order} LIMIT ? + 0`;
    const folded = foldCase(listing.filter.text!);
    const walked = Math.max(WALK_MIN, limit * WALK_PER_PLANT);
    const rows = prepared(text).all(...params, ...afterParams, walked, folded, limit) as PlantRecord[];
    return rows;
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

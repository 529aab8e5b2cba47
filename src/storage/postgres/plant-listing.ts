import { PLANT_COLUMNS } from '../../plant-fields.js';
import { foldCase } from '../case-fold.js';
import {
  isSet,
  onlyFilter,
  ORDERS,
  PLANT_FILTER_KEYS,
  type PlantFilter,
  type PlantFilterKey,
  type PlantListing,
  type PlantOrder,
} from '../plant-query.js';
import type { PlantRecord } from '../types/plants.js';
import type { Sql } from './connection.js';

/** What a listing reads of each plant (plant-fields.ts). */
const COLUMNS = PLANT_COLUMNS.join(', ');

/** `LIKE` with these three escaped is a plain substring test. */
const likeEscaped = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A statement's parameters as its text names them: `param` adds one and answers its placeholder. */
class Params {
  readonly values: unknown[] = [];

  param(value: unknown): string {
    return `$${this.values.push(value)}`;
  }
}

/**
 * The listing's statements, written as text and parameters and sent with `sql.unsafe`, the
 * driver's way of choosing per statement whether it is prepared. A search is not: a generic plan
 * cannot know whether the text is rare (read the trigram index) or common (walk the order's index
 * and test each row), and the one it picks for all texts was the slow one for rare texts. Sent
 * unprepared, a statement is PostgreSQL's unnamed one, planned with its values. Every other listing
 * is prepared, as the pool's statements are (none through PgBouncer: connection.ts).
 *
 * Names are compared under the "C" collation, whose order is that of UTF-8 bytes, which is code
 * point order, whatever the database's default collation; the `plants_by_name` index is built
 * under the same collation, so it serves the order.
 */
export function postgresListing(sql: Sql) {
  /** Each filter's conditions, each beginning with AND. One entry per key of `PlantFilter`: a filter missing here does not compile. */
  const FILTER_SQL: { [K in PlantFilterKey]-?: (value: NonNullable<PlantFilter[K]>, p: Params) => string } = {
    tags: (tags, p) => `AND tag = ANY (${p.param(sql.array(tags))}::text[])`,
    text(text, p) {
      const folded = foldCase(text);
      // LIKE lets the planner use the pg_trgm index (for 3+ characters); strpos states the exact test.
      return `AND name_folded LIKE ${p.param(`%${likeEscaped(folded)}%`)} ESCAPE '\\' AND strpos(name_folded, ${p.param(folded)}) > 0`;
    },
  };

  function where(account: string, filter: PlantFilter, p: Params): string {
    return PLANT_FILTER_KEYS.reduce(
      (conditions, key) =>
        isSet(filter, key) ? `${conditions} ${FILTER_SQL[key](filter[key] as never, p)}` : conditions,
      `account = ${p.param(account)}`,
    );
  }

  function after(listing: PlantListing, p: Params): string {
    const { after: position, order } = listing;
    if (position === null) return '';
    const { byName, descending } = ORDERS[order];
    const beyond = descending ? '<' : '>';
    return byName
      ? `AND (name COLLATE "C", id) ${beyond} (${p.param(position.name)}::text COLLATE "C", ${p.param(position.id)}::int8)`
      : `AND id ${beyond} ${p.param(position.id)}`;
  }

  function orderBy(order: PlantOrder): string {
    const { byName, descending } = ORDERS[order];
    const columns = byName ? ['name COLLATE "C"', 'id'] : ['id'];
    return `ORDER BY ${columns.map((column) => (descending ? `${column} DESC` : column)).join(', ')}`;
  }

  /** The statement, prepared unless it searches (see above). */
  const sent = <T extends object[]>(filter: PlantFilter, text: string, p: Params) =>
    sql.unsafe<T>(text, p.values as never[], { prepare: !isSet(filter, 'text') });

  return {
    /** The listing's query; `limit` null for every row. */
    select(account: string, listing: PlantListing, limit: number | null) {
      const p = new Params();
      const bound = (limit: number | null) => (limit === null ? '' : `LIMIT ${p.param(limit)}`);
      const { filter, order } = listing;
      if (onlyFilter(filter, 'tags') && !ORDERS[order].byName) {
        // One arm per tag, each in id order from plants_by_tag, merged (Merge Append): `tag = ANY`
        // cannot give the id order from the index, and the planner walked the account instead.
        const arms = [...new Set(filter.tags!)].map(
          (tag) => `(SELECT ${COLUMNS} FROM plants WHERE account = ${p.param(account)} AND tag = ${p.param(tag)}
                     ${after(listing, p)} ${orderBy(order)} ${bound(limit)})`,
        );
        return sent<PlantRecord[]>(
          filter,
          `SELECT ${COLUMNS} FROM (${arms.join(' UNION ALL ')}) AS arms ${orderBy(order)} ${bound(limit)}`,
          p,
        );
      }
      const text = `SELECT ${COLUMNS} FROM plants WHERE ${where(account, filter, p)} ${after(listing, p)}
                    ${orderBy(order)} ${bound(limit)}`;
      return sent<PlantRecord[]>(filter, text, p);
    },
    count(account: string, filter: PlantFilter) {
      const p = new Params();
      return sent<[{ count: bigint }]>(
        filter,
        `SELECT count(*) AS count FROM plants WHERE ${where(account, filter, p)}`,
        p,
      );
    },
  };
}

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
import type { Sql } from './connection.js';

/**
 * A search is planned with its own text, not as a prepared statement: a generic plan cannot know
 * whether the text is rare (read the trigram index) or common (walk the order's index and test each
 * row), and the one it picks for all texts was the slow one for rare texts. postgres.js sends a
 * query with `prepare` false as an unnamed statement, which PostgreSQL plans with its values.
 */
function plannedWithItsValues<T extends object>(query: T): T {
  // Not in postgres.js's types, but what `sql.unsafe(..., { prepare: false })` sets.
  (query as T & { options: { prepare?: boolean } }).options.prepare = false;
  return query;
}

/** `LIKE` with these three escaped is a plain substring test. */
const likeEscaped = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The pieces of a listing's SQL. Names are compared under the "C" collation, whose order is that
 * of UTF-8 bytes, which is code point order, whatever the database's default collation; the
 * `plants_by_name` index is built under the same collation, so it serves the order.
 */
export function postgresListing(sql: Sql) {
  /** Each filter's conditions, each beginning with AND. One entry per key of `PlantFilter`: a filter missing here does not compile. */
  const FILTER_SQL: { [K in PlantFilterKey]-?: (value: NonNullable<PlantFilter[K]>) => ReturnType<Sql> } = {
    tags: (tags) => sql`AND tag = ANY (${sql.array(tags)}::text[])`,
    text(text) {
      const folded = foldCase(text);
      // LIKE lets the planner use the pg_trgm index (for 3+ characters); strpos states the exact test.
      return sql`AND name_folded LIKE ${`%${likeEscaped(folded)}%`} ESCAPE '\\' AND strpos(name_folded, ${folded}) > 0`;
    },
  };

  function where(account: string, filter: PlantFilter) {
    return PLANT_FILTER_KEYS.reduce(
      (conditions, key) =>
        isSet(filter, key) ? sql`${conditions} ${FILTER_SQL[key](filter[key] as never)}` : conditions,
      sql`account = ${account}`,
    );
  }

  /** A search is planned with its own text (see plannedWithItsValues). */
  const planned = <T extends object>(filter: PlantFilter, query: T) =>
    isSet(filter, 'text') ? plannedWithItsValues(query) : query;

  function after(listing: PlantListing) {
    const { after: position, order } = listing;
    if (position === null) return sql``;
    const { byName, descending } = ORDERS[order];
    const beyond = sql.unsafe(descending ? '<' : '>');
    return byName
      ? sql`AND (name COLLATE "C", id) ${beyond} (${position.name}::text COLLATE "C", ${position.id}::int8)`
      : sql`AND id ${beyond} ${position.id}`;
  }

  function orderBy(order: PlantOrder) {
    const { byName, descending } = ORDERS[order];
    const columns = byName ? ['name COLLATE "C"', 'id'] : ['id'];
    return sql.unsafe(`ORDER BY ${columns.map((column) => (descending ? `${column} DESC` : column)).join(', ')}`);
  }

  return {
    /** The listing's query; `limit` null for every row. */
    select(account: string, listing: PlantListing, limit: number | null) {
      const bound = limit === null ? sql`` : sql`LIMIT ${limit}`;
      const { filter, order } = listing;
      if (onlyFilter(filter, 'tags') && !ORDERS[order].byName) {
        // One arm per tag, each in id order from plants_by_tag, merged (Merge Append): `tag = ANY`
        // cannot give the id order from the index, and the planner walked the account instead.
        const arms = [...new Set(filter.tags!)].map(
          (tag) => sql`(SELECT ${sql(PLANT_COLUMNS)} FROM plants WHERE account = ${account} AND tag = ${tag}
                        ${after(listing)} ${orderBy(order)} ${bound})`,
        );
        const union = arms.reduce((all, arm) => sql`${all} UNION ALL ${arm}`);
        return sql`SELECT ${sql(PLANT_COLUMNS)} FROM (${union}) AS arms ${orderBy(order)} ${bound}`;
      }
      const query = sql`SELECT ${sql(PLANT_COLUMNS)} FROM plants WHERE ${where(account, filter)} ${after(listing)}
                 ${orderBy(order)} ${bound}`;
      return planned(filter, query);
    },
    count(account: string, filter: PlantFilter) {
      const query = sql<[{ count: bigint }]>`SELECT count(*) AS count FROM plants WHERE ${where(account, filter)}`;
      return planned(filter, query);
    },
  };
}

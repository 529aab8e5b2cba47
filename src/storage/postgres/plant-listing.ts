import { foldCase } from '../case-fold.js';
import type { PlantFilter, PlantListing, PlantOrder } from '../plant-query.js';
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
  function where(account: string, filter: PlantFilter) {
    const tags = filter.tags === null ? sql`` : sql`AND tag = ANY (${sql.array(filter.tags)}::text[])`;
    if (filter.text === null) return sql`account = ${account} ${tags}`;
    const folded = foldCase(filter.text);
    // LIKE lets the planner use the pg_trgm index (for 3+ characters); strpos states the exact test.
    return sql`account = ${account} ${tags}
      AND name_folded LIKE ${`%${likeEscaped(folded)}%`} ESCAPE '\\' AND strpos(name_folded, ${folded}) > 0`;
  }

  function after(listing: PlantListing) {
    const { after: position, order } = listing;
    if (position === null) return sql``;
    const byOrder: Record<PlantOrder, () => ReturnType<Sql>> = {
      id: () => sql`AND id > ${position.id}`,
      '-id': () => sql`AND id < ${position.id}`,
      name: () => sql`AND (name COLLATE "C", id) > (${position.name}::text COLLATE "C", ${position.id}::int8)`,
      '-name': () => sql`AND (name COLLATE "C", id) < (${position.name}::text COLLATE "C", ${position.id}::int8)`,
    };
    return byOrder[order]();
  }

  const ORDER_BY: Record<PlantOrder, () => ReturnType<Sql>> = {
    id: () => sql`ORDER BY id`,
    '-id': () => sql`ORDER BY id DESC`,
    name: () => sql`ORDER BY name COLLATE "C", id`,
    '-name': () => sql`ORDER BY name COLLATE "C" DESC, id DESC`,
  };

  return {
    /** The listing's query; `limit` null for every row. */
    select(account: string, listing: PlantListing, limit: number | null) {
      const bound = limit === null ? sql`` : sql`LIMIT ${limit}`;
      const { filter, order } = listing;
      if (filter.tags !== null && filter.text === null && (order === 'id' || order === '-id')) {
        // One arm per tag, each in id order from plants_by_tag, merged (Merge Append): `tag = ANY`
        // cannot give the id order from the index, and the planner walked the account instead.
        const arms = [...new Set(filter.tags)].map(
          (tag) => sql`(SELECT id, name, tag FROM plants WHERE account = ${account} AND tag = ${tag}
                        ${after(listing)} ${ORDER_BY[order]()} ${bound})`,
        );
        const union = arms.reduce((all, arm) => sql`${all} UNION ALL ${arm}`);
        return sql`SELECT id, name, tag FROM (${union}) AS arms ${ORDER_BY[order]()} ${bound}`;
      }
      const query = sql`SELECT id, name, tag FROM plants WHERE ${where(account, filter)} ${after(listing)}
                 ${ORDER_BY[order]()} ${bound}`;
      return filter.text === null ? query : plannedWithItsValues(query);
    },
    count(account: string, filter: PlantFilter) {
      const query = sql<[{ count: bigint }]>`SELECT count(*) AS count FROM plants WHERE ${where(account, filter)}`;
      return filter.text === null ? query : plannedWithItsValues(query);
    },
  };
}

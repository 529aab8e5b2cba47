import type { FeedEvent, FeedStorage } from '../types/feed.js';
import type { Sql } from './connection.js';
import { PRUNE_CHUNK_ROWS } from '../chunks.js';

export function postgresEvents(sql: Sql) {
  return {
    async feedKey() {
      const [row] = await sql<{ key: string }[]>`SELECT key FROM feed_key WHERE id = 1`;
      return Buffer.from(row!.key, 'hex');
    },
    async feedHead(account) {
      const [row] = await sql<{ last_seq: bigint; pruned_through: bigint }[]>`
        SELECT last_seq, pruned_through FROM account_events WHERE account = ${account}`;
      return { lastSeq: row?.last_seq ?? 0n, prunedThrough: row?.pruned_through ?? 0n };
    },
    async feedHeads(accounts) {
      const rows = await sql<{ account: string; last_seq: bigint }[]>`
        SELECT account, last_seq FROM account_events WHERE account = ANY (${sql.array(accounts)}::text[])`;
      return new Map(rows.map((row) => [row.account, row.last_seq]));
    },
    async feedEvents(account, afterSeq, limit) {
      const rows = await sql<{ seq: bigint; event_id: string; event_type: FeedEvent['type']; payload: string }[]>`
        SELECT seq, event_id, event_type, payload FROM events
        WHERE account = ${account} AND seq > ${afterSeq} ORDER BY seq LIMIT ${limit}`;
      return rows.map((row) => ({ seq: row.seq, eventId: row.event_id, type: row.event_type, payload: row.payload }));
    },
    async pruneEvents(before) {
      let removed = 0;
      for (;;) {
        // pruned_through is raised in the same statement, so no reader sees the events gone and
        // its cursor still accepted.
        const [{ count }] = await sql<[{ count: number }]>`
          WITH gone AS (
            DELETE FROM events WHERE (account, seq) IN (
              SELECT account, seq FROM events WHERE created_at < ${before} LIMIT ${PRUNE_CHUNK_ROWS})
            RETURNING account, seq),
          raised AS (
            UPDATE account_events a SET pruned_through = greatest(a.pruned_through, g.top)
            FROM (SELECT account, max(seq) AS top FROM gone GROUP BY account) g
            WHERE a.account = g.account)
          SELECT count(*)::int AS count FROM gone`;
        removed += count;
        if (count < PRUNE_CHUNK_ROWS) return removed;
      }
    },
  } satisfies FeedStorage;
}

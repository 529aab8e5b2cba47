import { plantEventPayload } from '../../events/plant-event.js';
import { testDelay, type FeedEvent, type FeedStorage } from '../types/feed.js';
import type { Sql, Tx } from './connection.js';
import type { QueuedEvent } from './outbox.js';

const PRUNE_CHUNK = 1000;

/**
 * Appends a transaction's events to the change feed; call it LAST in the transaction, just before
 * the commit.
 *
 * A sequence number is not commit order on PostgreSQL: a transaction can take 7 and commit before
 * the one that took 6, and a reader that saw 7 would then never read 6. So the numbers come from
 * the account's row in `account_events`, raised by this transaction's count of events: the row
 * lock it takes is held until the commit, so the next transaction of that account gets its numbers
 * only once this one has committed (or rolled back, which gives its numbers back). Per account,
 * numbers are handed out in commit order with no gaps. The accounts are locked in one order
 * (sorted) by every process, so two transactions that share accounts wait instead of deadlocking;
 * and nothing is locked after it, so the wait is only for the other's commit.
 *
 * `delayMs` (tests only) waits before and after the numbering, so concurrent transactions
 * interleave as badly as they can.
 */
export async function appendEvents(tx: Tx, events: QueuedEvent[], delayMs: number): Promise<void> {
  if (events.length === 0) return;
  await testDelay(delayMs);
  const counts = new Map<string, number>();
  for (const event of events) counts.set(event.account, (counts.get(event.account) ?? 0) + 1);
  const accounts = [...counts.keys()].sort();
  const rows = await tx<{ account: string; last_seq: bigint }[]>`
    INSERT INTO account_events (account, last_seq, pruned_through)
    SELECT account, n, 0 FROM unnest(${tx.array(accounts)}::text[], ${tx.array(accounts.map((a) => counts.get(a)!))}::int8[])
      AS t(account, n)
    ON CONFLICT (account) DO UPDATE SET last_seq = account_events.last_seq + EXCLUDED.last_seq
    RETURNING account, last_seq`;
  // Each account's events take the numbers just below its new last_seq, in the order they happened.
  const next = new Map(rows.map((row) => [row.account, row.last_seq - BigInt(counts.get(row.account)!) + 1n]));
  const seqs = events.map((event) => {
    const seq = next.get(event.account)!;
    next.set(event.account, seq + 1n);
    return seq;
  });
  await tx`
    INSERT INTO events (account, seq, event_id, event_type, payload, created_at)
    SELECT *, now() FROM unnest(${tx.array(events.map((e) => e.account))}::text[],
                                ${tx.array(seqs)}::int8[],
                                ${tx.array(events.map((e) => e.eventId))}::text[],
                                ${tx.array(events.map((e) => e.type))}::text[],
                                ${tx.array(events.map((e) => plantEventPayload(e.plant)))}::text[])`;
  await testDelay(delayMs);
}

export function postgresEvents(sql: Sql): FeedStorage {
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
              SELECT account, seq FROM events WHERE created_at < ${before} LIMIT ${PRUNE_CHUNK})
            RETURNING account, seq),
          raised AS (
            UPDATE account_events a SET pruned_through = greatest(a.pruned_through, g.top)
            FROM (SELECT account, max(seq) AS top FROM gone GROUP BY account) g
            WHERE a.account = g.account)
          SELECT count(*)::int AS count FROM gone`;
        removed += count;
        if (count < PRUNE_CHUNK) return removed;
      }
    },
  };
}

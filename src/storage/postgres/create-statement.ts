import { EVENT_OF, plantEventPayload } from '../../events/plant-event.js';
import type { ChangeOutcome, PlantChange, StoredPlant } from '../types/plants.js';
import type { Sql } from './connection.js';
import { feedCtes, outboxInsert } from './outbox.js';
import { firstsInArrivalOrder, insertNew, keyOf, outcomesInOrder, readTaken, sortedByKey } from './plant-creates.js';

type Create = Extract<PlantChange, { kind: 'create' }>;

/** A plant that was taken when the creates were inserted and deleted before it could be read: tried again. */
const TRIES = 3;

/**
 * A group commit of creates only, in one statement and so one round trip: the plants inserted, and
 * for those that were new (RETURNING), their events numbered in the change feed and queued in the
 * webhook outbox, all as common table expressions of one INSERT that PostgreSQL commits on its own.
 * A transaction around the same statements costs four round trips (BEGIN, the insert, the events,
 * COMMIT), and the account's feed row is locked across the last of them: over a network with a
 * 10 ms round trip that, not the database, bounded one account's creates a second. Here the row is
 * locked only while the server commits.
 *
 * The ids that were taken (a replay, or another instance's plant) are read afterwards, as a
 * second statement must (under READ COMMITTED, one statement's snapshot would not see what
 * another instance committed while the insert waited on it). The rows go in sorted by key and the
 * accounts' heads are raised in account order, as in createAll, so concurrent statements wait on
 * each other instead of deadlocking; the heads are raised only once the insert is whole (they
 * count its rows). A failure is the statement's: nothing of it is kept.
 */
export async function createInOneStatement(
  sql: Sql,
  creates: Create[],
  feed: boolean,
  tries = TRIES,
): Promise<ChangeOutcome[]> {
  // Events in the order the creates came; the rows go in sorted by key, for the locks.
  const events = firstsInArrivalOrder(creates);
  const firsts = sortedByKey(events);
  const inserted = await sql<{ account: string; id: bigint }[]>`
    WITH ins AS (${insertNew(sql, firsts)}),
    q AS (
      SELECT c.account, c.event_id, c.event_type, c.payload, c.position
      FROM unnest(${sql.array(events.map((c) => c.account))}::text[],
                  ${sql.array(events.map((c) => c.plant.id))}::int8[],
                  ${sql.array(events.map((c) => c.eventId))}::text[],
                  ${sql.array(events.map(() => EVENT_OF.create))}::text[],
                  ${sql.array(events.map((c) => plantEventPayload(c.plant)))}::text[])
        WITH ORDINALITY AS c(account, id, event_id, event_type, payload, position)
      JOIN ins ON ins.account = c.account AND ins.id = c.id
    ),
    ${feed ? sql`${feedCtes(sql)},` : sql``}
    outbox AS (${outboxInsert(sql)})
    SELECT account, id FROM ins`;
  const created = new Set(inserted.map((row) => keyOf(row.account, row.id)));
  const stored = new Map<string, StoredPlant>();
  for (const c of firsts)
    if (created.has(keyOf(c.account, c.plant.id))) stored.set(keyOf(c.account, c.plant.id), c.plant);

  const taken = firsts.filter((c) => !created.has(keyOf(c.account, c.plant.id)));
  if (taken.length > 0) {
    await readTaken(sql, taken, stored);
    const gone = taken.filter((c) => !stored.has(keyOf(c.account, c.plant.id)));
    if (gone.length > 0) {
      if (tries <= 1) throw new Error('plants taken at insert were deleted before they could be read, again and again');
      const again = await createInOneStatement(sql, gone, feed, tries - 1);
      gone.forEach((c, i) => {
        const outcome = again[i] as { status: 'applied' | 'unchanged'; plant: StoredPlant };
        stored.set(keyOf(c.account, c.plant.id), outcome.plant);
        if (outcome.status === 'applied') created.add(keyOf(c.account, c.plant.id));
      });
    }
  }

  return outcomesInOrder(creates, created, stored);
}

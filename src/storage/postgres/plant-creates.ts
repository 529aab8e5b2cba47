import { EVENT_OF } from '../../events/plant-event.js';
import { foldCase } from '../case-fold.js';
import { firstConflict, itemsOf } from '../changes.js';
import type { ChangeOutcome, PlantChange, StoredPlant } from '../types/plants.js';
import type { Tx } from './connection.js';
import type { QueuedEvent } from './outbox.js';

/** Creates, in bulk: a group commit of creates only, and a batch (all or nothing, in a savepoint). */

type Create = Extract<PlantChange, { kind: 'create' }>;
type CreateMany = Extract<PlantChange, { kind: 'create-many' }>;

/** Writes a transaction's events: to the webhook outbox, then (last) to the change feed. */
export type RecordEvents = (tx: Tx, events: QueuedEvent[]) => Promise<void>;

/** Unambiguous: the id part never contains a space. */
const keyOf = (account: string, id: bigint) => `${id} ${account}`;

/**
 * The first create of each (account, id), sorted by key. Every instance inserts in the same key
 * order, so two batches that share keys wait on each other instead of deadlocking.
 */
function firstOfEachKey(creates: Create[]): Create[] {
  const firsts = new Map<string, Create>();
  for (const create of creates) {
    const key = keyOf(create.account, create.plant.id);
    if (!firsts.has(key)) firsts.set(key, create);
  }
  return [...firsts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, create]) => create);
}

/** A batch of creates only (the common case) in two statements plus the outbox, whatever its size. */
export async function createAll(tx: Tx, creates: Create[], record: RecordEvents): Promise<ChangeOutcome[]> {
  const firsts = firstOfEachKey(creates);
  const inserted = await tx<{ account: string; id: bigint }[]>`
    INSERT INTO plants (account, id, name, tag, revision, name_folded)
    SELECT * FROM unnest(${tx.array(firsts.map((c) => c.account))}::text[],
                         ${tx.array(firsts.map((c) => c.plant.id))}::int8[],
                         ${tx.array(firsts.map((c) => c.plant.name))}::text[],
                         ${tx.array(firsts.map((c) => c.plant.tag))}::text[],
                         ${tx.array(firsts.map((c) => c.plant.revision))}::int8[],
                         ${tx.array(firsts.map((c) => foldCase(c.plant.name)))}::text[])
    ON CONFLICT (account, id) DO NOTHING
    RETURNING account, id`;
  const created = new Set(inserted.map((row) => keyOf(row.account, row.id)));
  const stored = new Map<string, StoredPlant>();
  for (const c of firsts) stored.set(keyOf(c.account, c.plant.id), c.plant);

  // A separate statement, so under READ COMMITTED it sees rows that another instance
  // committed while the INSERT above waited on them.
  const taken = firsts.filter((c) => !created.has(keyOf(c.account, c.plant.id)));
  if (taken.length > 0) {
    const rows = await tx<(StoredPlant & { account: string })[]>`
      SELECT account, id, name, tag, revision FROM plants
      WHERE (account, id) IN (SELECT * FROM unnest(${tx.array(taken.map((c) => c.account))}::text[],
                                                   ${tx.array(taken.map((c) => c.plant.id))}::int8[]))`;
    for (const { account, ...plant } of rows) stored.set(keyOf(account, plant.id), plant);
  }
  // Events in the order the creates came (the rows went in sorted by key, for the locks): the feed
  // reports a batch's changes in the order they were made.
  const reported = new Set<string>();
  await record(
    tx,
    creates
      .filter((c) => {
        const key = keyOf(c.account, c.plant.id);
        if (!created.has(key) || reported.has(key)) return false;
        reported.add(key);
        return true;
      })
      .map((c) => ({ account: c.account, type: EVENT_OF.create, eventId: c.eventId, plant: c.plant })),
  );

  // Only the first create of a key can have created it; a repeat in the same batch is a replay.
  return creates.map((c): ChangeOutcome => {
    const key = keyOf(c.account, c.plant.id);
    return { status: created.delete(key) ? 'applied' : 'unchanged', plant: stored.get(key)! };
  });
}

class Conflict extends Error {
  constructor(readonly index: number) {
    super(`item ${index} conflicts with a stored plant`);
  }
}

/**
 * Its items go through `createAll`, as a group of single creates does (their events included),
 * inside a savepoint: an item that meets another plant under its id rolls all of them back.
 * Comparing after the insert, not before, sees what other instances committed meanwhile.
 */
export async function createMany(tx: Tx, change: CreateMany, events: QueuedEvent[]): Promise<ChangeOutcome> {
  // Its events join the transaction's only once the savepoint holds: a rolled-back batch reports nothing.
  const own: QueuedEvent[] = [];
  const collect: RecordEvents = async (_tx, batch) => void own.push(...batch);
  try {
    const outcome = await tx.savepoint(async (sp) => {
      const outcomes = await createAll(sp as Tx, itemsOf(change), collect);
      const stored = outcomes.map((outcome) => (outcome as { plant: StoredPlant }).plant);
      const index = firstConflict(change.plants, stored);
      if (index !== -1) throw new Conflict(index);
      const created = outcomes.map((outcome) => outcome.status === 'applied');
      return { status: 'all-applied', plants: stored, created } satisfies ChangeOutcome;
    });
    events.push(...own);
    return outcome;
  } catch (error) {
    if (error instanceof Conflict) return { status: 'conflict', index: error.index };
    throw error;
  }
}

import { EVENT_OF } from '../../events/plant-event.js';
import { STORED_PLANT_COLUMNS } from '../../plant-fields.js';
import { firstConflict, itemsOf } from '../changes.js';
import { PLANT_TABLE_COLUMNS, PLANTS_TABLE, plantRow } from '../plant-rows.js';
import type { ChangeOutcome, PlantChange, StoredPlant } from '../types/plants.js';
import type { Sql, Tx } from './connection.js';
import type { QueuedEvent } from './outbox.js';

/** Creates, in bulk: a batch (all or nothing, in a savepoint), and what a group of creates in one statement shares with it (create-statement.ts). */

type Create = Extract<PlantChange, { kind: 'create' }>;
type CreateMany = Extract<PlantChange, { kind: 'create-many' }>;

/** Writes a transaction's events: to the webhook outbox, then (last) to the change feed. */
export type RecordEvents = (tx: Tx, events: QueuedEvent[]) => Promise<void>;

/** Unambiguous: the id part never contains a space. */
export const keyOf = (account: string, id: bigint) => `${id} ${account}`;

/**
 * The first create of each (account, id), in the order the creates came: the order their events
 * are reported in (the feed reports a group's changes in the order they were made).
 */
export function firstsInArrivalOrder(creates: Create[]): Create[] {
  const firsts = new Map<string, Create>();
  for (const create of creates) {
    const key = keyOf(create.account, create.plant.id);
    if (!firsts.has(key)) firsts.set(key, create);
  }
  return [...firsts.values()];
}

/**
 * The creates sorted by key: the order their rows are inserted in. Every instance inserts in the
 * same key order, so two batches that share keys wait on each other instead of deadlocking.
 */
export function sortedByKey(creates: Create[]): Create[] {
  return creates
    .map((create) => [keyOf(create.account, create.plant.id), create] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, create]) => create);
}

/**
 * The INSERT of the creates' rows, those whose id is taken left alone, RETURNING the new ones'
 * keys: the transaction's statement, and the heart of create-statement.ts's. One array per column,
 * whatever the batch's size: one statement text, prepared once.
 */
export function insertNew(sql: Sql | Tx, firsts: Create[]) {
  const rows = firsts.map((c) => plantRow(c.account, c.plant));
  const arrays = PLANT_TABLE_COLUMNS.map((column) => {
    const values = sql.array(rows.map((row) => row[column]) as string[]);
    return PLANTS_TABLE[column] === 'int64' ? (sql as Sql)`${values}::int8[]` : (sql as Sql)`${values}::text[]`;
  }).reduce((all, array) => (sql as Sql)`${all}, ${array}`);
  return (sql as Sql)`
    INSERT INTO plants (${sql(PLANT_TABLE_COLUMNS)}) SELECT * FROM unnest(${arrays})
    ON CONFLICT (account, id) DO NOTHING
    RETURNING account, id`;
}

/** Reads the stored plants under the ids the creates found taken into `stored`, by keyOf. */
export async function readTaken(sql: Sql | Tx, taken: Create[], stored: Map<string, StoredPlant>): Promise<void> {
  const rows = await (sql as Sql)<(StoredPlant & { account: string })[]>`
    SELECT account, ${sql(STORED_PLANT_COLUMNS)} FROM plants
    WHERE (account, id) IN (SELECT * FROM unnest(${sql.array(taken.map((c) => c.account))}::text[],
                                                 ${sql.array(taken.map((c) => c.plant.id))}::int8[]))`;
  for (const { account, ...plant } of rows) stored.set(keyOf(account, plant.id), plant);
}

/**
 * Each create's outcome, in the order the creates came: only the first create of a key can have
 * created it (it is in `created`); a repeat in the same batch is a replay.
 */
export function outcomesInOrder(
  creates: Create[],
  created: Set<string>,
  stored: Map<string, StoredPlant>,
): ChangeOutcome[] {
  return creates.map((c): ChangeOutcome => {
    const key = keyOf(c.account, c.plant.id);
    return { status: created.delete(key) ? 'applied' : 'unchanged', plant: stored.get(key)! };
  });
}

/** A batch's creates in two statements plus its events, whatever its size. */
export async function createAll(tx: Tx, creates: Create[], record: RecordEvents): Promise<ChangeOutcome[]> {
  const arrived = firstsInArrivalOrder(creates);
  const firsts = sortedByKey(arrived);
  const inserted = await tx<{ account: string; id: bigint }[]>`${insertNew(tx, firsts)}`;
  const created = new Set(inserted.map((row) => keyOf(row.account, row.id)));
  const stored = new Map<string, StoredPlant>();
  for (const c of firsts) stored.set(keyOf(c.account, c.plant.id), c.plant);

  // A separate statement, so under READ COMMITTED it sees rows that another instance
  // committed while the INSERT above waited on them.
  const taken = firsts.filter((c) => !created.has(keyOf(c.account, c.plant.id)));
  if (taken.length > 0) await readTaken(tx, taken, stored);
  await record(
    tx,
    arrived
      .filter((c) => created.has(keyOf(c.account, c.plant.id)))
      .map((c) => ({ account: c.account, type: EVENT_OF.create, eventId: c.eventId, plant: c.plant })),
  );

  return outcomesInOrder(creates, created, stored);
}

class Conflict extends Error {
  constructor(readonly index: number) {
    super(`item ${index} conflicts with a stored plant`);
  }
}

/**
 * Its items go through `createAll` (their events included), inside a savepoint: an item that
 * meets another plant under its id rolls all of them back. Comparing after the insert, not
 * before, sees what other instances committed meanwhile.
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

import { EVENT_OF, plantEventPayload } from '../../events/plant-event.js';
import { STORED_PLANT_COLUMNS } from '../../plant-fields.js';
import { applyAsync, firstConflict, itemsOf } from '../changes.js';
import { PLANT_TABLE_COLUMNS, PLANT_UPDATE_COLUMNS, PLANTS_TABLE, plantRow } from '../plant-rows.js';
import type { ChangeOutcome, PlantChange, StoredPlant } from '../types/plants.js';
import type { Sql, Tx } from './connection.js';
import { feedCtes, outboxInsert, recordEvents, type QueuedEvent } from './outbox.js';

/**
 * The plants' writes on PostgreSQL (PlantStorage.applyChanges). Every create goes through
 * `createPlants`: a group of creates alone, a create among other changes, a batch's items, and
 * the retry of any of them (a plant already stored as sent is a replay: `unchanged`).
 */

type Create = Extract<PlantChange, { kind: 'create' }>;
type CreateMany = Extract<PlantChange, { kind: 'create-many' }>;

/**
 * One group commit's changes. A group of creates only is one statement that PostgreSQL commits on
 * its own, events included (createPlants). Any other group is a transaction whose events are
 * queued as its changes are made and written by its last statement, sent with COMMIT right behind
 * it, in the same round trip instead of after its answer: so the account's feed row (outbox.ts)
 * is locked one round trip instead of two, which is what bounds one account's commits a second
 * over a slow network. That statement's answer is read after the commit: PostgreSQL answers
 * COMMIT in a failed transaction with a rollback, not an error, so a failure shows there.
 */
export async function applyChanges(sql: Sql, changes: PlantChange[], feed: boolean): Promise<ChangeOutcome[]> {
  if (changes.every((c): c is Create => c.kind === 'create')) return createPlants(sql, changes, { feed });
  let recorded: Promise<void> = Promise.resolve();
  const outcomes = await sql.begin(async (tx) => {
    const events: QueuedEvent[] = [];
    const outcomes: ChangeOutcome[] = [];
    for (const change of changes) outcomes.push(await applyOne(tx, change, events));
    recorded = recordEvents(tx, events, feed);
    recorded.catch(() => {});
    return outcomes;
  });
  await recorded;
  return outcomes;
}

/** One change of a transaction, in order; the events of what it did are queued in `events`. */
async function applyOne(tx: Tx, change: PlantChange, events: QueuedEvent[]): Promise<ChangeOutcome> {
  if (change.kind === 'create') {
    const [outcome] = await createPlants(tx, [change], null);
    queueCreated([change], [outcome!], events);
    return outcome!;
  }
  if (change.kind === 'create-many') return createBatch(tx, change, events);
  const { account } = change;
  return applyAsync(change, async (step) => {
    switch (step.kind) {
      case 'read': {
        const [row] = await tx<StoredPlant[]>`
          SELECT ${tx(STORED_PLANT_COLUMNS)} FROM plants WHERE account = ${account} AND id = ${step.id} FOR UPDATE`;
        return row;
      }
      case 'delete':
        return tx`DELETE FROM plants WHERE account = ${account} AND id = ${step.plant.id}`;
      case 'update':
        return tx`UPDATE plants SET ${tx(plantRow(account, step.after), PLANT_UPDATE_COLUMNS)}
                  WHERE account = ${account} AND id = ${step.after.id}`;
      case 'event':
        return events.push({ account, type: step.type, eventId: step.eventId, plant: step.plant });
    }
  });
}

/** The created ones' events, in the order the creates came (the feed reports them in the order they were made). */
function queueCreated(creates: Create[], outcomes: ChangeOutcome[], events: QueuedEvent[]): void {
  creates.forEach((c, i) => {
    if (outcomes[i]!.status === 'applied')
      events.push({ account: c.account, type: EVENT_OF.create, eventId: c.eventId, plant: c.plant });
  });
}

class Conflict extends Error {
  constructor(readonly index: number) {
    super(`item ${index} conflicts with a stored plant`);
  }
}

/**
 * A batch (POST /plants/batch): its items are created as any create is, inside a savepoint, and an
 * item that meets another plant under its id rolls all of them back. Comparing after the insert,
 * not before, sees what other instances committed meanwhile. Its events join the transaction's
 * only once the savepoint holds: a rolled-back batch reports nothing.
 */
async function createBatch(tx: Tx, change: CreateMany, events: QueuedEvent[]): Promise<ChangeOutcome> {
  const items = itemsOf(change);
  try {
    const outcomes = await tx.savepoint(async (sp) => {
      const outcomes = await createPlants(sp as Tx, items, null);
      const index = firstConflict(change.plants, outcomes.map(plantOf));
      if (index !== -1) throw new Conflict(index);
      return outcomes;
    });
    queueCreated(items, outcomes, events);
    return {
      status: 'all-applied',
      plants: outcomes.map(plantOf),
      created: outcomes.map((outcome) => outcome.status === 'applied'),
    };
  } catch (error) {
    if (error instanceof Conflict) return { status: 'conflict', index: error.index };
    throw error;
  }
}

/** A create's outcome is always `applied` or `unchanged`, with its plant. */
const plantOf = (outcome: ChangeOutcome) => (outcome as { plant: StoredPlant }).plant;

/** A plant that was taken when the creates were inserted and deleted before it could be read: tried again. */
const TRIES = 3;

/**
 * The one create path: the creates' plants inserted, those whose id is taken (a replay, an earlier
 * create of the same group, another instance's plant) read back as they are stored, and each
 * create's outcome in the order they came.
 *
 * `alone` (`{ feed }`): the creates are a group commit of their own, written as one statement and
 * so one round trip: for the plants that were new (RETURNING), their events numbered in the change
 * feed and queued in the webhook outbox as common table expressions of the INSERT, which
 * PostgreSQL commits on its own. A transaction around the same statements costs four round trips
 * (BEGIN, the insert, the events, COMMIT), and the account's feed row is locked across the last of
 * them: over a network with a 10 ms round trip that, not the database, bounded one account's
 * creates a second. Here the row is locked only while the server commits; the heads are raised
 * only once the insert is whole (they count its rows). A failure is the statement's: nothing of it
 * is kept. Null: `db` is a transaction, which queues the events itself (queueCreated).
 *
 * The ids that were taken are read by a second statement, as they must be (under READ COMMITTED,
 * one statement's snapshot would not see what another instance committed while the insert waited
 * on it). The rows go in sorted by key and the accounts' heads are raised in account order, so
 * concurrent writers wait on each other instead of deadlocking.
 */
async function createPlants(
  db: Sql | Tx,
  creates: Create[],
  alone: { feed: boolean } | null,
  tries = TRIES,
): Promise<ChangeOutcome[]> {
  const sql = db as Sql;
  const arrived = firstsInArrivalOrder(creates);
  const firsts = sortedByKey(arrived);
  const insert = insertNew(sql, firsts);
  const inserted = await (alone === null
    ? insert
    : sql<{ account: string; id: bigint }[]>`
        WITH ins AS (${insert}),
        q AS (
          SELECT c.account, c.event_id, c.event_type, c.payload, c.position
          FROM unnest(${sql.array(arrived.map((c) => c.account))}::text[],
                      ${sql.array(arrived.map((c) => c.plant.id))}::int8[],
                      ${sql.array(arrived.map((c) => c.eventId))}::text[],
                      ${sql.array(arrived.map(() => EVENT_OF.create))}::text[],
                      ${sql.array(arrived.map((c) => plantEventPayload(c.plant)))}::text[])
            WITH ORDINALITY AS c(account, id, event_id, event_type, payload, position)
          JOIN ins ON ins.account = c.account AND ins.id = c.id
        ),
        ${alone.feed ? sql`${feedCtes(sql)},` : sql``}
        outbox AS (${outboxInsert(sql)})
        SELECT account, id FROM ins`);
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
      const again = await createPlants(db, gone, alone, tries - 1);
      gone.forEach((c, i) => {
        stored.set(keyOf(c.account, c.plant.id), plantOf(again[i]!));
        if (again[i]!.status === 'applied') created.add(keyOf(c.account, c.plant.id));
      });
    }
  }

  // Only the first create of a key can have created it; a repeat in the same group is a replay.
  return creates.map((c): ChangeOutcome => {
    const key = keyOf(c.account, c.plant.id);
    return { status: created.delete(key) ? 'applied' : 'unchanged', plant: stored.get(key)! };
  });
}

/** Unambiguous: the id part never contains a space. */
const keyOf = (account: string, id: bigint) => `${id} ${account}`;

/** The first create of each (account, id), in the order the creates came: the order their events are reported in. */
function firstsInArrivalOrder(creates: Create[]): Create[] {
  const firsts = new Map<string, Create>();
  for (const create of creates) {
    const key = keyOf(create.account, create.plant.id);
    if (!firsts.has(key)) firsts.set(key, create);
  }
  return [...firsts.values()];
}

/**
 * The creates sorted by key: the order their rows are inserted in. Every instance inserts in the
 * same key order, so two writers that share keys wait on each other instead of deadlocking.
 */
function sortedByKey(creates: Create[]): Create[] {
  return creates
    .map((create) => [keyOf(create.account, create.plant.id), create] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, create]) => create);
}

/**
 * The INSERT of the creates' rows, those whose id is taken left alone, RETURNING the new ones'
 * keys. One array per column, whatever the number of creates: one statement text, prepared once.
 */
function insertNew(sql: Sql, firsts: Create[]) {
  const rows = firsts.map((c) => plantRow(c.account, c.plant));
  const arrays = PLANT_TABLE_COLUMNS.map((column) => {
    const values = sql.array(rows.map((row) => row[column]) as string[]);
    return PLANTS_TABLE[column] === 'int64' ? sql`${values}::int8[]` : sql`${values}::text[]`;
  }).reduce((all, array) => sql`${all}, ${array}`);
  return sql<{ account: string; id: bigint }[]>`
    INSERT INTO plants (${sql(PLANT_TABLE_COLUMNS)}) SELECT * FROM unnest(${arrays})
    ON CONFLICT (account, id) DO NOTHING
    RETURNING account, id`;
}

/** Reads the stored plants under the ids the creates found taken into `stored`, by keyOf. */
async function readTaken(sql: Sql, taken: Create[], stored: Map<string, StoredPlant>): Promise<void> {
  const rows = await sql<(StoredPlant & { account: string })[]>`
    SELECT account, ${sql(STORED_PLANT_COLUMNS)} FROM plants
    WHERE (account, id) IN (SELECT * FROM unnest(${sql.array(taken.map((c) => c.account))}::text[],
                                                 ${sql.array(taken.map((c) => c.plant.id))}::int8[]))`;
  for (const { account, ...plant } of rows) stored.set(keyOf(account, plant.id), plant);
}

import { EVENT_OF, plantEventPayload } from '../../events/plant-event.js';
import { updated } from '../changes.js';
import type { Storage } from '../types.js';
import type { ChangeOutcome, PlantChange, PlantRecord, StoredPlant } from '../types/plants.js';
import type { Sql, Tx } from './connection.js';
import { outboxInsert, queueEvents, type QueuedEvent } from './outbox.js';

const STREAM_CHUNK_ROWS = 1000;

type Create = Extract<PlantChange, { kind: 'create' }>;
type PlantStorage = Pick<Storage, 'applyChanges' | 'getPlant' | 'listPlants' | 'streamPlants' | 'plantsVersion'>;

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

/**
 * A batch of creates only (the common case) in one statement, whatever its size: the plants and
 * their events (the outbox rows of the subscribed endpoints) go in together, atomically, so the
 * batch needs no BEGIN and COMMIT of its own: one round trip instead of four.
 */
async function createAll(sql: Sql, creates: Create[]): Promise<ChangeOutcome[]> {
  const firsts = firstOfEachKey(creates);
  const column = <T>(pick: (c: Create) => T) => sql.array(firsts.map(pick) as never);
  const inserted = await sql<{ account: string; id: bigint }[]>`
    WITH input AS (
      SELECT * FROM unnest(${column((c) => c.account)}::text[],
                           ${column((c) => c.plant.id)}::int8[],
                           ${column((c) => c.plant.name)}::text[],
                           ${column((c) => c.plant.tag)}::text[],
                           ${column((c) => c.plant.revision)}::int8[],
                           ${column((c) => c.eventId)}::text[],
                           ${column((c) => plantEventPayload(c.plant))}::text[])
        AS i(account, id, name, tag, revision, event_id, payload)
    ), inserted AS (
      INSERT INTO plants (account, id, name, tag, revision)
      SELECT account, id, name, tag, revision FROM input
      ON CONFLICT (account, id) DO NOTHING
      RETURNING account, id
    ), queued AS (
      ${outboxInsert(sql)}
      SELECT e.account, e.id, i.event_id, ${EVENT_OF.create}, i.payload, now(), 'pending', 0, now(), now()
      FROM inserted n
      JOIN input i ON i.account = n.account AND i.id = n.id
      JOIN webhook_endpoints e ON e.account = n.account AND e.enabled AND ${EVENT_OF.create}::text = ANY (e.events)
    )
    SELECT account, id FROM inserted`;
  const created = new Set(inserted.map((row) => keyOf(row.account, row.id)));
  const stored = new Map<string, StoredPlant>();
  for (const c of firsts) stored.set(keyOf(c.account, c.plant.id), c.plant);

  // A separate statement, so under READ COMMITTED it sees rows that another instance
  // committed while the INSERT above waited on them.
  const taken = firsts.filter((c) => !created.has(keyOf(c.account, c.plant.id)));
  if (taken.length > 0) {
    const rows = await sql<(StoredPlant & { account: string })[]>`
      SELECT account, id, name, tag, revision FROM plants
      WHERE (account, id) IN (SELECT * FROM unnest(${sql.array(taken.map((c) => c.account))}::text[],
                                                   ${sql.array(taken.map((c) => c.plant.id))}::int8[]))`;
    for (const { account, ...plant } of rows) stored.set(keyOf(account, plant.id), plant);
  }

  // Only the first create of a key can have created it; a repeat in the same batch is a replay.
  return creates.map((c): ChangeOutcome => {
    const key = keyOf(c.account, c.plant.id);
    return { status: created.delete(key) ? 'applied' : 'unchanged', plant: stored.get(key)! };
  });
}

/** One change of a mixed batch, in order; its event is queued once the batch is done. */
async function applyOne(tx: Tx, change: PlantChange, events: QueuedEvent[]): Promise<ChangeOutcome> {
  const { account } = change;
  const event = (plant: PlantRecord) =>
    events.push({ account, type: EVENT_OF[change.kind], eventId: change.eventId, plant });
  if (change.kind === 'create') {
    const { plant } = change;
    const inserted = await tx`
      INSERT INTO plants (account, id, name, tag, revision)
      VALUES (${account}, ${plant.id}, ${plant.name}, ${plant.tag}, ${plant.revision})
      ON CONFLICT (account, id) DO NOTHING RETURNING id`;
    if (inserted.length === 1) {
      event(plant);
      return { status: 'applied', plant };
    }
  }
  const id = change.kind === 'create' ? change.plant.id : change.id;
  const [before] = await tx<StoredPlant[]>`
    SELECT id, name, tag, revision FROM plants WHERE account = ${account} AND id = ${id} FOR UPDATE`;
  if (change.kind === 'create') return { status: 'unchanged', plant: before! };
  if (before === undefined) return { status: 'missing' };
  if (change.precondition && !change.precondition(before)) return { status: 'precondition-failed' };
  if (change.kind === 'delete') {
    await tx`DELETE FROM plants WHERE account = ${account} AND id = ${id}`;
    event(before);
    return { status: 'applied', plant: before };
  }
  const after = updated(before, change);
  if (after === null) return { status: 'unchanged', plant: before };
  await tx`UPDATE plants SET name = ${after.name}, tag = ${after.tag}, revision = ${after.revision}
           WHERE account = ${account} AND id = ${id}`;
  event(after);
  return { status: 'applied', plant: after };
}

export function postgresPlants(sql: Sql): PlantStorage {
  const afterIdFilter = (afterId: bigint | null) => (afterId === null ? sql`` : sql`AND id > ${afterId}`);

  return {
    async applyChanges(changes) {
      if (changes.every((c): c is Create => c.kind === 'create')) return createAll(sql, changes);
      return sql.begin(async (tx) => {
        const events: QueuedEvent[] = [];
        const outcomes: ChangeOutcome[] = [];
        for (const change of changes) outcomes.push(await applyOne(tx, change, events));
        await queueEvents(tx, events);
        return outcomes;
      });
    },

    async getPlant(account, id) {
      const [row] = await sql<StoredPlant[]>`
        SELECT id, name, tag, revision FROM plants WHERE account = ${account} AND id = ${id}`;
      return row ?? null;
    },

    async listPlants(account, afterId, limit) {
      const rows = await sql<PlantRecord[]>`
        SELECT id, name, tag FROM plants WHERE account = ${account} ${afterIdFilter(afterId)} ORDER BY id LIMIT ${limit}`;
      return [...rows]; // a plain array, not the driver's result with its statement details
    },

    async *streamPlants(account, afterId) {
      // A server-side cursor: one snapshot for the whole listing, STREAM_CHUNK_ROWS in memory at a
      // time. It holds a pooled connection until the listing ends or the client goes away.
      const query = sql<PlantRecord[]>`
        SELECT id, name, tag FROM plants WHERE account = ${account} ${afterIdFilter(afterId)} ORDER BY id`;
      for await (const rows of query.cursor(STREAM_CHUNK_ROWS)) yield [...rows];
    },

    plantsVersion() {
      // Other instances commit without telling this one; every read goes to the database.
      return null;
    },
  };
}

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { newToken } from '../../src/auth/api-tokens.js';
import { groupCommit } from '../../src/storage/group-commit.js';
import type { PlantListing } from '../../src/storage/plant-query.js';
import { openStorage, type StorageOptions } from '../../src/storage/open.js';
import { sqlitePath } from '../../src/storage/sqlite/index.js';
import type { Storage } from '../../src/storage/types.js';
import type { PlantChange, PlantRecord, StoredPlant } from '../../src/storage/types/plants.js';
import type { ClaimShare, ClaimedDelivery } from '../../src/storage/types/webhooks.js';
import { claimWindow } from '../../src/webhooks/fair-share.js';
import { ENGINES_AND_POOLER, type Engine } from '../helpers/engines.js';
import { insertPlants, type PlantWrite } from '../helpers/plants.js';

/** The Storage interface, checked the same way on every engine. */

/** A claim that takes any number of one endpoint's events. */
const ANY_SHARE: ClaimShare = {
  perAccount: Number.MAX_SAFE_INTEGER,
  perEndpoint: Number.MAX_SAFE_INTEGER,
  accounts: [],
  endpoints: [],
  window: 1,
};
const INT64_MIN = -9223372036854775808n;
const INT64_MAX = 9223372036854775807n;
const TWO_POW_53 = 9007199254740992n;
/** An id no engine can bind (past int64): the change that names it throws inside the transaction. */
const OUT_OF_RANGE = INT64_MAX + 1n;

const plant = (id: bigint, name = `plant ${id}`, tag: string | null = null): PlantRecord => ({ id, name, tag });
const write = (account: string, p: PlantRecord): PlantWrite => ({ account, plant: p });
/** The plain listing: every plant in id order, after `afterId`. */
const idOrder = (afterId: bigint | null): PlantListing => ({
  filter: { tags: null, text: null },
  order: 'id',
  after: afterId === null ? null : { id: afterId, name: '' },
});
const create = (account: string, p: PlantRecord, n = 0): Extract<PlantChange, { kind: 'create' }> => ({
  kind: 'create',
  account,
  plant: { ...p, revision: BigInt(n + 1) },
  eventId: `msg_${n}`,
});
type Update = Extract<PlantChange, { kind: 'update' }>;
type Delete = Extract<PlantChange, { kind: 'delete' }>;
const update = (
  account: string,
  id: bigint,
  set: { name?: string; tag?: string | null },
  revision: bigint,
): Update => ({
  kind: 'update',
  account,
  id,
  set,
  revision,
  eventId: `msg_update_${revision}`,
});
const remove = (account: string, id: bigint): Delete => ({
  kind: 'delete',
  account,
  id,
  eventId: `msg_delete_${id}`,
});
/**
 * A claim's "now": a Date has milliseconds and PostgreSQL's now() microseconds, so an event
 * committed within the claim's own millisecond is not due at `new Date()` (a test failed so).
 */
const claimNow = () => new Date(Date.now() + 1);
const byId = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

async function everything(storage: Storage, account: string): Promise<{ chunks: number; rows: PlantRecord[] }> {
  let chunks = 0;
  const rows: PlantRecord[] = [];
  for await (const chunk of storage.streamPlants(account, idOrder(null))) {
    chunks++;
    rows.push(...chunk);
  }
  return { chunks, rows };
}

/** The schema versions the engine's own bookkeeping says have run. */
async function migrationsRecorded(engine: Engine, url: string): Promise<number[]> {
  if (engine.name === 'sqlite') {
    const db = new Database(sqlitePath(url), { readonly: true });
    const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[];
    db.close();
    return versions;
  }
  const sql = postgres(url, { max: 1 });
  try {
    return (await sql<{ version: number }[]>`SELECT version FROM schema_migrations ORDER BY version`).map(
      (r) => r.version,
    );
  } finally {
    await sql.end();
  }
}

/** A fresh store for the enclosing describe, opened `count` times (as `count` processes would). */
function freshStores(engine: Engine, options: StorageOptions, count = 1) {
  const context = { url: '', stores: [] as Storage[] };
  let drop = async () => {};
  before(async () => {
    const fresh = await engine.fresh();
    drop = fresh.drop;
    context.url = fresh.url;
    // All at once: migrations must be safe when several processes start together.
    context.stores = await Promise.all(Array.from({ length: count }, () => openStorage(fresh.url, options)));
  });
  after(async () => {
    await Promise.all(context.stores.map((s) => s.close()));
    await drop();
  });
  return context;
}

/** Every engine; SQLite with its write transactions in the writer thread (the default) and inline. */
const VARIANTS = ENGINES_AND_POOLER.flatMap((engine) => [
  { engine, options: {}, label: engine.name },
  ...(engine.name === 'sqlite'
    ? [{ engine, options: { sqliteWriter: 'inline' } satisfies StorageOptions, label: 'sqlite, inline writer' }]
    : []),
]);

for (const { engine, options, label } of VARIANTS) {
  describe(`storage contract (${label})`, { skip: engine.skip }, () => {
    const store = freshStores(engine, options);
    const storage = () => store.stores[0]!;

    it('keeps int64 ids exact at both ends of the range and around 2^53', async () => {
      const ids = [INT64_MIN, INT64_MIN + 1n, -1n, 0n, TWO_POW_53, TWO_POW_53 + 1n, INT64_MAX - 1n, INT64_MAX];
      const outcomes = await insertPlants(
        storage(),
        ids.map((id) => write('exact', plant(id))),
      );
      assert.ok(
        outcomes.every((o) => o.created),
        '2^53 and 2^53 + 1 are two different plants',
      );
      const listed = await storage().listPlants('exact', idOrder(null), 100);
      assert.deepEqual(
        listed.map((p) => p.id),
        ids,
      );
      assert.deepEqual(
        listed.map((p) => p.name),
        ids.map((id) => `plant ${id}`),
      );
      assert.ok(listed.every((p) => typeof p.id === 'bigint'));
    });

    it('orders by numeric id, negatives first, not as text', async () => {
      const ids = [10n, -3n, 9n, INT64_MAX, -10n, 100n, INT64_MIN, 0n, -(2n ** 40n), 2n ** 40n, 1n];
      await insertPlants(
        storage(),
        ids.map((id) => write('order', plant(id))),
      );
      const sorted = [...ids].sort(byId);
      assert.deepEqual(
        (await storage().listPlants('order', idOrder(null), 100)).map((p) => p.id),
        sorted,
      );
      assert.deepEqual(
        (await everything(storage(), 'order')).rows.map((p) => p.id),
        sorted,
      );
      assert.deepEqual(
        (await storage().listPlants('order', idOrder(-3n), 3)).map((p) => p.id),
        [0n, 1n, 9n],
      );
    });

    it('keeps accounts apart: the same id in two accounts is two plants', async () => {
      const [a, b] = await insertPlants(storage(), [write('iso-a', plant(7n, 'A')), write('iso-b', plant(7n, 'B'))]);
      assert.deepEqual([a!.created, b!.created], [true, true]);
      assert.deepEqual(await storage().listPlants('iso-a', idOrder(null), 10), [plant(7n, 'A')]);
      assert.deepEqual(await storage().listPlants('iso-b', idOrder(null), 10), [plant(7n, 'B')]);
      assert.deepEqual((await everything(storage(), 'iso-a')).rows, [plant(7n, 'A')]);
      assert.deepEqual(await storage().listPlants('iso-nobody', idOrder(null), 10), []);
    });

    it('reports an existing id as not created, with the plant already stored', async () => {
      const original = plant(42n, 'Fern', '');
      assert.deepEqual(await insertPlants(storage(), [write('replay', original)]), [
        { created: true, stored: original },
      ]);
      assert.deepEqual(await insertPlants(storage(), [write('replay', original)]), [
        { created: false, stored: original },
      ]);
      assert.deepEqual(await insertPlants(storage(), [write('replay', plant(42n, 'Fern', null))]), [
        { created: false, stored: original },
      ]);
      assert.deepEqual(await storage().listPlants('replay', idOrder(null), 10), [original]);
    });

    it('answers a batch in input order, a repeated id in the batch being a replay of the first', async () => {
      const outcomes = await insertPlants(storage(), [
        write('batch', plant(3n, 'first')),
        write('batch', plant(1n, 'one')),
        write('batch', plant(3n, 'second')),
        write('other', plant(3n, 'elsewhere')),
        write('batch', plant(3n, 'first')),
      ]);
      assert.deepEqual(outcomes, [
        { created: true, stored: plant(3n, 'first') },
        { created: true, stored: plant(1n, 'one') },
        { created: false, stored: plant(3n, 'first') },
        { created: true, stored: plant(3n, 'elsewhere') },
        { created: false, stored: plant(3n, 'first') },
      ]);
    });

    it('stores names and tags exactly, characters that need quoting included', async () => {
      const odd = [
        '"quoted"',
        'back\\slash',
        '{brace,comma}',
        'NULL',
        'null',
        ' padded ',
        '🌵 e\u0301',
        "it's",
        '\n\t',
      ];
      const plants = odd.map((text, i) => plant(BigInt(i), text, text));
      await insertPlants(
        storage(),
        plants.map((p) => write('exact-text', p)),
      );
      assert.deepEqual(await storage().listPlants('exact-text', idOrder(null), 100), plants);
    });

    it('pages and streams 2,600 plants, each exactly once and in order', async () => {
      // 7919 is prime to 2,600, so this visits every slot once, out of order, negatives included.
      const ids = Array.from({ length: 2_600 }, (_, i) => BigInt(((i * 7919) % 2_600) * 1_000 - 1_300_000));
      await insertPlants(
        storage(),
        ids.map((id) => write('many', plant(id))),
      );
      const expected = [...ids].sort(byId);

      const paged: bigint[] = [];
      for (let after: bigint | null = null; ;) {
        const page = await storage().listPlants('many', idOrder(after), 250);
        paged.push(...page.map((p) => p.id));
        if (page.length < 250) break;
        after = page[page.length - 1]!.id;
      }
      assert.deepEqual(paged, expected);

      const { chunks, rows } = await everything(storage(), 'many');
      assert.deepEqual(
        rows.map((p) => p.id),
        expected,
      );
      assert.ok(chunks > 1, 'the stream arrives in chunks, never all rows at once');

      const rest: bigint[] = [];
      for await (const chunk of storage().streamPlants('many', idOrder(expected[1_000]!)))
        rest.push(...chunk.map((p) => p.id));
      assert.deepEqual(rest, expected.slice(1_001));
    });

    it(
      'frees the store when a stream is abandoned half-way (a client that goes away)',
      { timeout: 30_000 },
      async () => {
        await insertPlants(
          storage(),
          Array.from({ length: 2_500 }, (_, i) => write('abandon', plant(BigInt(i)))),
        );
        // More abandoned streams than a default connection pool holds: none may keep its connection.
        for (let i = 0; i < 15; i++) {
          for await (const chunk of storage().streamPlants('abandon', idOrder(null))) {
            assert.ok(chunk.length > 0);
            break;
          }
        }
        assert.equal((await storage().listPlants('abandon', idOrder(2_000n), 1_000)).length, 499);
      },
    );

    it('answers 50 concurrent creates of one id through group commit with exactly one row', async () => {
      const commit = groupCommit(storage());
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, (_, i) => commit(create('race', plant(77n, 'Same'), i))),
      );
      assert.equal(outcomes.filter((o) => o.status === 'applied').length, 1);
      assert.ok(
        outcomes.every((o) => 'plant' in o && o.plant.id === 77n && o.plant.name === 'Same' && o.plant.tag === null),
      );
      assert.deepEqual(await storage().listPlants('race', idOrder(null), 10), [plant(77n, 'Same')]);
    });

    it("keeps at most the engine's commitsAtOnce transactions in flight, and a change acknowledged first is seen by the next", async () => {
      const real = storage();
      let inFlight = 0;
      let most = 0;
      const counted = {
        commitsAtOnce: real.commitsAtOnce,
        async applyChanges(changes: PlantChange[]) {
          most = Math.max(most, ++inFlight);
          try {
            return await real.applyChanges(changes);
          } finally {
            inFlight--;
          }
        },
      };
      const commit = groupCommit(counted);
      const outcomes = await Promise.all(
        Array.from({ length: 300 }, (_, i) => commit(create('in-flight', plant(BigInt(i)), i))),
      );
      assert.ok(outcomes.every((o) => o.status === 'applied'));
      const atOnce = real.commitsAtOnce ?? 1;
      assert.ok(most <= atOnce, `${most} transactions at once, more than ${atOnce}`);
      for (let i = 0; i < 20; i++) {
        await commit(create('in-flight', plant(1_000n + BigInt(i)), i));
        const renamed = await commit({
          kind: 'update',
          account: 'in-flight',
          id: 1_000n + BigInt(i),
          set: { name: `renamed ${i}` },
          revision: 9n,
          eventId: `msg_rename_${i}`,
        });
        assert.equal(renamed.status, 'applied', 'the update saw the create acknowledged before it');
      }
    });

    describe('tokens', () => {
      const alice = newToken('tok-alice', ['plants:read'], new Date(Date.now() + 86_400_000)).token;
      const bob = newToken('tok-bob', ['plants:read', 'plants:write'], null).token;

      it('creates and finds a token by its hash, every field intact', async () => {
        await storage().createToken(alice);
        const { secretHash: _, ...fields } = alice;
        assert.deepEqual(await storage().findTokenByHash(alice.secretHash), { ...fields, revokedAt: null });
        assert.equal(await storage().findTokenByHash('no-such-hash'), null);
      });

      it('lists tokens, all or one account, oldest first, without secrets', async () => {
        await storage().createToken({ ...bob, createdAt: new Date(alice.createdAt.getTime() + 1) });
        const all = await storage().listTokens();
        assert.deepEqual(
          all.map((t) => t.id),
          [alice.id, bob.id],
        );
        assert.ok(all.every((t) => !('secretHash' in t)));
        assert.deepEqual(
          (await storage().listTokens('tok-bob')).map((t) => t.id),
          [bob.id],
        );
        assert.deepEqual(await storage().listTokens('tok-nobody'), []);
      });

      it('revokes by id, keeping the first revocation time', async () => {
        const first = new Date(Date.now() - 1_000);
        assert.equal(await storage().revokeToken(alice.id, first), true);
        assert.equal(await storage().revokeToken(alice.id, new Date()), true);
        assert.deepEqual((await storage().findTokenByHash(alice.secretHash))?.revokedAt, first);
        assert.equal((await storage().findTokenByHash(bob.secretHash))?.revokedAt, null);
        assert.equal(await storage().revokeToken('tok_unknown', new Date()), false);
      });

      it('creates no first token once the store has held one', async () => {
        assert.equal(await storage().createFirstToken(newToken('default', ['plants:read'], null).token), false);
      });

      it("moves the tokens' version with every created or revoked token, and only then", async () => {
        const versions = [await storage().tokensVersion()];
        await storage().findTokenByHash(bob.secretHash);
        await storage().listTokens();
        await storage().revokeToken('tok_unknown', new Date());
        versions.push(await storage().tokensVersion());
        assert.equal(versions[1], versions[0], 'reads and a revocation of nothing leave it');
        await storage().createToken(newToken('tok-carol', ['plants:read'], null).token);
        versions.push(await storage().tokensVersion());
        await storage().revokeToken(bob.id, new Date());
        versions.push(await storage().tokensVersion());
        assert.equal(new Set(versions.slice(1)).size, 3, `versions ${versions.join(', ')}`);
      });
    });
  });

  const inOrder = `applyChanges: creates, updates and deletes of one batch apply in order, each with its own outcome (${label})`;
  describe(inOrder, { skip: engine.skip }, () => {
    const store = freshStores(engine, options);
    const storage = () => store.stores[0]!;
    const stored = (p: PlantRecord, revision: bigint): StoredPlant => ({ ...p, revision });

    it('keeps each outcome of create, update, delete and create again of one id in one batch', async () => {
      const outcomes = await storage().applyChanges([
        create('mixed', plant(5n, 'first', 'a'), 0),
        update('mixed', 5n, { name: 'second' }, 11n),
        update('mixed', 5n, { tag: null }, 12n),
        remove('mixed', 5n),
        update('mixed', 5n, { name: 'ghost' }, 13n),
        remove('mixed', 5n),
        create('mixed', plant(5n, 'reborn'), 20),
        create('mixed', plant(5n, 'reborn again'), 21),
        create('other', plant(5n, 'elsewhere'), 22),
      ]);
      assert.deepEqual(outcomes, [
        { status: 'applied', plant: stored(plant(5n, 'first', 'a'), 1n) },
        { status: 'applied', plant: stored(plant(5n, 'second', 'a'), 11n) },
        { status: 'applied', plant: stored(plant(5n, 'second'), 12n) },
        { status: 'applied', plant: stored(plant(5n, 'second'), 12n) },
        { status: 'missing' },
        { status: 'missing' },
        { status: 'applied', plant: stored(plant(5n, 'reborn'), 21n) },
        { status: 'unchanged', plant: stored(plant(5n, 'reborn'), 21n) },
        { status: 'applied', plant: stored(plant(5n, 'elsewhere'), 23n) },
      ]);
      assert.deepEqual(await storage().getPlant('mixed', 5n), stored(plant(5n, 'reborn'), 21n));
      assert.deepEqual(await storage().getPlant('other', 5n), stored(plant(5n, 'elsewhere'), 23n));
    });

    it('reports an update that changes no field as unchanged, keeping the revision', async () => {
      await storage().applyChanges([create('same', plant(1n, 'kept', 't'), 0)]);
      const [outcome] = await storage().applyChanges([update('same', 1n, { name: 'kept', tag: 't' }, 99n)]);
      assert.deepEqual(outcome, { status: 'unchanged', plant: stored(plant(1n, 'kept', 't'), 1n) });
      assert.deepEqual(await storage().getPlant('same', 1n), stored(plant(1n, 'kept', 't'), 1n));
    });

    it('checks each precondition against the plant as the earlier changes of the batch left it', async () => {
      const at = (revision: bigint) => ({ revisions: [revision] });
      const outcomes = await storage().applyChanges([
        create('pre', plant(9n, 'v1'), 0),
        { ...update('pre', 9n, { name: 'v2' }, 2n), precondition: at(1n) },
        { ...update('pre', 9n, { name: 'lost' }, 3n), precondition: at(1n) },
        { ...remove('pre', 9n), precondition: at(1n) },
        { ...update('pre', 10n, { name: 'nobody' }, 4n), precondition: 'any' },
        { ...remove('pre', 9n), precondition: at(2n) },
      ]);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['applied', 'applied', 'precondition-failed', 'precondition-failed', 'missing', 'applied'],
      );
      assert.equal(await storage().getPlant('pre', 9n), null);
    });

    it('leaves the store as it was when a change of the batch throws (one transaction)', async () => {
      await storage().applyChanges([create('atomic', plant(1n, 'before'), 0)]);
      await assert.rejects(
        storage().applyChanges([
          create('atomic', plant(2n, 'never'), 1),
          update('atomic', 1n, { name: 'never' }, 7n),
          remove('atomic', OUT_OF_RANGE),
        ]),
      );
      assert.deepEqual(await storage().listPlants('atomic', idOrder(null), 10), [plant(1n, 'before')]);
    });

    describe('the outbox: each event queued for every subscribed, enabled endpoint, in the same transaction', () => {
      /** Endpoint rows written straight into the table, as the webhooks feature would. */
      async function addEndpoints(endpoints: { account: string; id: string; events: string[]; enabled: boolean }[]) {
        if (engine.name === 'sqlite') {
          const db = new Database(sqlitePath(store.url));
          try {
            const insert = db.prepare(
              `INSERT INTO webhook_endpoints (account, id, url, events, enabled, secret, created_at)
               VALUES (?, ?, 'https://example.com/hook', ?, ?, 'whsec_test', ?)`,
            );
            for (const e of endpoints) insert.run(e.account, e.id, ` ${e.events.join(' ')} `, e.enabled ? 1 : 0, 0);
          } finally {
            db.close();
          }
          return;
        }
        const sql = postgres(store.url, { max: 1 });
        try {
          for (const e of endpoints) {
            await sql`INSERT INTO webhook_endpoints (account, id, url, events, enabled, secret, created_at)
                      VALUES (${e.account}, ${e.id}, 'https://example.com/hook', string_to_array(${e.events.join(' ')}, ' '), ${e.enabled},
                              'whsec_test', now())`;
          }
        } finally {
          await sql.end();
        }
      }

      type Delivery = { endpoint: string; event: string; type: string; payload: string; state: string };
      async function deliveries(account: string): Promise<Delivery[]> {
        // Both engines keep a transaction's events for an endpoint packed in one outbox row until
        // the deliverer unpacks them: both count.
        if (engine.name === 'sqlite') {
          const withOutbox = `SELECT endpoint_id AS endpoint, event_id AS event, event_type AS type, payload, state
                              FROM webhook_deliveries WHERE account = ?
                              UNION ALL
                              SELECT o.endpoint_id, e.value ->> 0, e.value ->> 1, e.value ->> 2, 'pending'
                              FROM webhook_outbox o, json_each(o.events) e WHERE o.account = ?
                              ORDER BY endpoint, event`;
          const db = new Database(sqlitePath(store.url), { readonly: true });
          try {
            return db.prepare(withOutbox).all(account, account) as Delivery[];
          } finally {
            db.close();
          }
        }
        const query = `SELECT endpoint_id AS endpoint, event_id AS event, event_type AS type, payload, state
                       FROM webhook_deliveries WHERE account = $1
                       UNION ALL
                       SELECT o.endpoint_id, e ->> 0, e ->> 1, e ->> 2, 'pending'
                       FROM webhook_outbox o, json_array_elements(o.events) e WHERE o.account = $1
                       ORDER BY endpoint, event`;
        const sql = postgres(store.url, { max: 1 });
        try {
          return [...(await sql.unsafe<Delivery[]>(query, [account]))];
        } finally {
          await sql.end();
        }
      }

      const ALL = ['plant.created', 'plant.updated', 'plant.deleted'];
      const BIG = TWO_POW_53 + 1n;

      it('queues an event per acknowledged change, none for replays, no-op updates, missing ids or failed preconditions', async () => {
        await addEndpoints([
          { account: 'hooked', id: 'ep_all', events: ALL, enabled: true },
          { account: 'hooked', id: 'ep_created', events: ['plant.created'], enabled: true },
          { account: 'hooked', id: 'ep_off', events: ALL, enabled: false },
          { account: 'unhooked', id: 'ep_theirs', events: ALL, enabled: true },
        ]);
        const changes: PlantChange[] = [
          { ...create('hooked', plant(BIG, 'Fern', 'green'), 0), eventId: 'evt_create' },
          { ...create('hooked', plant(BIG, 'Fern', 'green'), 1), eventId: 'evt_replay' },
          { ...update('hooked', BIG, { name: 'Fern' }, 5n), eventId: 'evt_noop' },
          { ...update('hooked', BIG, { tag: null }, 6n), eventId: 'evt_update' },
          { ...update('hooked', 404n, { name: 'x' }, 7n), eventId: 'evt_missing_update' },
          { ...remove('hooked', 404n), eventId: 'evt_missing_delete' },
          { ...remove('hooked', BIG), precondition: { revisions: [] }, eventId: 'evt_refused' },
          { ...remove('hooked', BIG), eventId: 'evt_delete' },
        ];
        const outcomes = await storage().applyChanges(changes);
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['applied', 'unchanged', 'unchanged', 'applied', 'missing', 'missing', 'precondition-failed', 'applied'],
        );
        const created = '{"id":9007199254740993,"name":"Fern","tag":"green"}';
        const untagged = '{"id":9007199254740993,"name":"Fern"}';
        assert.deepEqual(await deliveries('hooked'), [
          { endpoint: 'ep_all', event: 'evt_create', type: 'plant.created', payload: created, state: 'pending' },
          { endpoint: 'ep_all', event: 'evt_delete', type: 'plant.deleted', payload: untagged, state: 'pending' },
          { endpoint: 'ep_all', event: 'evt_update', type: 'plant.updated', payload: untagged, state: 'pending' },
          { endpoint: 'ep_created', event: 'evt_create', type: 'plant.created', payload: created, state: 'pending' },
        ]);
        assert.deepEqual(await deliveries('unhooked'), [], "another account's endpoint hears nothing");
      });

      it('queues nothing when the batch fails', async () => {
        await assert.rejects(
          storage().applyChanges([
            { ...create('hooked', plant(1n, 'rolled back'), 0), eventId: 'evt_rolled_back' },
            remove('hooked', OUT_OF_RANGE),
          ]),
        );
        assert.ok((await deliveries('hooked')).every((d) => d.event !== 'evt_rolled_back'));
        assert.equal(await storage().getPlant('hooked', 1n), null);
      });

      it('queues the events of a batch of creates alone (the fast path) too', async () => {
        await storage().applyChanges([
          { ...create('hooked', plant(2n, 'two'), 0), eventId: 'evt_two' },
          { ...create('hooked', plant(2n, 'two'), 1), eventId: 'evt_two_replay' },
          { ...create('hooked', plant(3n, 'three'), 2), eventId: 'evt_three' },
        ]);
        const events = (await deliveries('hooked')).filter((d) => /two|three/.test(d.event));
        assert.deepEqual(
          events.map((d) => `${d.endpoint} ${d.event}`),
          ['ep_all evt_three', 'ep_all evt_two', 'ep_created evt_three', 'ep_created evt_two'],
        );
      });

      it('lists queued events newest first and hands each to exactly one claim, its payload exact', async () => {
        await addEndpoints([{ account: 'claimed', id: 'ep_c', events: ALL, enabled: true }]);
        await storage().applyChanges([
          { ...create('claimed', plant(BIG, 'Exact', 'x'), 0), eventId: 'evt_c1' },
          { ...create('claimed', plant(-BIG, 'Negative'), 1), eventId: 'evt_c2' },
        ]);
        const listed = async () =>
          (await storage().listDeliveries('claimed', 'ep_c', 10)).map((d) => [d.eventId, d.state, d.attempts]);
        const expected = [
          ['evt_c2', 'pending', 0],
          ['evt_c1', 'pending', 0],
        ];
        assert.deepEqual(await listed(), expected);
        assert.ok((await storage().deliveryBacklog()).pending >= 2);

        const now = claimNow();
        const claimed: ClaimedDelivery[] = [];
        for (let round = 0; round < 1000; round++) {
          const batch = await storage().claimDeliveries('owner', now, new Date(now.getTime() + 60_000), 1, ANY_SHARE);
          if (batch.length === 0) break;
          claimed.push(...batch);
        }
        const keys = claimed.map((d) => `${d.account} ${d.endpointId} ${d.eventId}`);
        assert.equal(new Set(keys).size, keys.length, 'no event claimed twice');
        assert.deepEqual(
          claimed
            .filter((d) => d.account === 'claimed')
            .map((d) => [d.eventId, d.payload])
            .sort(),
          [
            ['evt_c1', '{"id":9007199254740993,"name":"Exact","tag":"x"}'],
            ['evt_c2', '{"id":-9007199254740993,"name":"Negative"}'],
          ],
        );
        assert.deepEqual(await listed(), expected, 'claimed, the events are listed as before');
      });

      it('shares a claim among accounts and endpoints: each within its room, none of a full one', async () => {
        await addEndpoints([
          { account: 'backlogged', id: 'ep_b', events: ALL, enabled: true },
          { account: 'backlogged', id: 'ep_b2', events: ALL, enabled: true },
          { account: 'other', id: 'ep_o', events: ALL, enabled: true },
        ]);
        await storage().applyChanges(
          [1n, 2n, 3n, 4n, 5n].map((id, n) => ({ ...create('backlogged', plant(id), n), eventId: `evt_b${id}` })),
        );
        await storage().applyChanges([{ ...create('other', plant(1n), 0), eventId: 'evt_o1' }]);
        // Events of one commit are due at the same moment: which of them comes first is not fixed.
        const claim = async (share: Omit<ClaimShare, 'window'>) => {
          const now = claimNow();
          const window = claimWindow(100, share.perEndpoint);
          const batch = await storage().claimDeliveries('owner', now, new Date(now.getTime() + 60_000), 100, {
            ...share,
            window,
          });
          // An event of the account is one delivery per endpoint: named by both.
          const of = (endpoint: string) =>
            batch.filter((d) => d.endpointId === endpoint).map((d) => `${endpoint}/${d.eventId}`);
          return { b: of('ep_b'), b2: of('ep_b2'), other: of('ep_o') };
        };
        const none = { accounts: [], endpoints: [] };
        const first = await claim({ perAccount: 3, perEndpoint: 1, ...none });
        assert.equal(first.b.length, 1, 'one of each endpoint of the backlog');
        assert.equal(first.b2.length, 1);
        assert.deepEqual(first.other, ['ep_o/evt_o1'], 'and the other account is not kept waiting');
        const full = await claim({
          perAccount: 3,
          perEndpoint: 3,
          accounts: [{ account: 'backlogged', room: 0 }],
          endpoints: [],
        });
        assert.deepEqual(full, { b: [], b2: [], other: [] }, 'nothing of a full account');
        const fullEndpoint = await claim({
          perAccount: 3,
          perEndpoint: 3,
          accounts: [],
          endpoints: [{ account: 'backlogged', endpointId: 'ep_b', room: 0 }],
        });
        assert.deepEqual(fullEndpoint.b, [], 'nothing of a full endpoint');
        assert.equal(fullEndpoint.b2.length, 3, 'its neighbour takes its own room');
        const next = await claim({
          perAccount: 2,
          perEndpoint: 5,
          accounts: [],
          endpoints: [{ account: 'backlogged', endpointId: 'ep_b', room: 1 }],
        });
        assert.equal(next.b.length + next.b2.length, 2, "within the account's room");
        assert.ok(next.b.length <= 1, "within the endpoint's room");
        const claimed = [...first.b, ...first.b2, ...fullEndpoint.b2, ...next.b, ...next.b2];
        assert.equal(new Set(claimed).size, claimed.length, 'each event claimed once');
      });

      it(
        'leaves nothing packed when a PostgreSQL process stops: a release before the packed outbox finds every event',
        {
          skip:
            engine.name === 'sqlite' ? 'SQLite has had its packed outbox since before releases were numbered' : false,
        },
        async () => {
          await addEndpoints([{ account: 'stopping', id: 'ep_s', events: ALL, enabled: true }]);
          const stopping = await openStorage(store.url, options);
          await stopping.applyChanges([{ ...create('stopping', plant(1n, 'one'), 0), eventId: 'evt_s1' }]);
          const sql = postgres(store.url, { max: 1 });
          try {
            const packed = () => sql`SELECT event_count FROM webhook_outbox WHERE account = 'stopping'`;
            assert.deepEqual([...(await packed())], [{ event_count: 1 }], 'written packed');
            await stopping.close();
            assert.deepEqual([...(await packed())], [], 'the outbox is empty once it stopped');
            assert.deepEqual(
              [...(await sql`SELECT event_id, state FROM webhook_deliveries WHERE account = 'stopping'`)],
              [{ event_id: 'evt_s1', state: 'pending' }],
              'the event is a pending delivery row, as releases before 1.2.0 read them',
            );
          } finally {
            await sql.end();
          }
        },
      );

      it('claims again while earlier claims are in flight: an endpoint takes the room it has left', async () => {
        await addEndpoints([{ account: 'busy', id: 'ep_busy', events: ALL, enabled: true }]);
        for (const id of [1n, 2n, 3n, 4n, 5n, 6n])
          await storage().applyChanges([{ ...create('busy', plant(id), 0), eventId: `evt_busy${id}` }]);
        const claim = async (room: number) => {
          const now = claimNow();
          const share: ClaimShare = {
            perAccount: 100,
            perEndpoint: 2,
            accounts: [],
            endpoints: [{ account: 'busy', endpointId: 'ep_busy', room }],
            window: claimWindow(100, 2),
          };
          const batch = await storage().claimDeliveries('owner', now, new Date(now.getTime() + 60_000), 100, share);
          return batch.filter((d) => d.account === 'busy').map((d) => d.eventId);
        };
        const first = await claim(2);
        assert.equal(first.length, 2, `the first claim takes the endpoint's room of 2, took ${first}`);
        // Its pace grew to 4 while those 2 are in flight (leased, their results not yet written): room 2.
        const second = await claim(2);
        assert.equal(second.length, 2, `the second takes the 2 it has left beside those in flight, took ${second}`);
        assert.equal(new Set([...first, ...second]).size, 4, 'four different events');
      });

      it("fails the endpoint's queued events when it is disabled, and drops them with it", async () => {
        await addEndpoints([
          { account: 'gone', id: 'ep_off', events: ALL, enabled: true },
          { account: 'gone', id: 'ep_del', events: ALL, enabled: true },
        ]);
        await storage().applyChanges([{ ...create('gone', plant(1n, 'one'), 0), eventId: 'evt_g1' }]);
        await storage().disableEndpoint('gone', 'ep_off', 'turned off');
        assert.deepEqual(
          (await storage().listDeliveries('gone', 'ep_off', 10)).map((d) => [d.eventId, d.state, d.lastError]),
          [['evt_g1', 'failed', 'turned off']],
        );
        assert.equal(await storage().deleteEndpoint('gone', 'ep_del'), true);
        assert.deepEqual(await storage().listDeliveries('gone', 'ep_del', 10), []);
        assert.ok((await deliveries('gone')).every((d) => d.endpoint !== 'ep_del'));
      });
    });
  });

  describe(`several processes on one fresh store (${label})`, { skip: engine.skip }, () => {
    const store = freshStores(engine, options, 5);

    it('migrates exactly once when they all open at the same moment', async () => {
      // SQLite's fourth is its packed outbox (src/storage/sqlite/migrations.ts); then search, the
      // change feed, the search triggers dropped, the plants' clock, the search counter, the
      // outbox's heads, the disk probe, the tokens' version and the deliveries by endpoint and due time.
      // PostgreSQL's eighth is its packed outbox.
      assert.deepEqual(
        await migrationsRecorded(engine, store.url),
        engine.name === 'sqlite' ? [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13] : [1, 2, 3, 4, 5, 6, 7, 8],
      );
    });

    it('creates exactly one first token when they all ask at once', async () => {
      const firstToken = () => newToken('default', ['plants:read'], null).token;
      const results = await Promise.all(store.stores.map((s) => s.createFirstToken(firstToken())));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal((await store.stores[1]!.listTokens()).length, 1);
    });

    it('keeps one row when 50 creates of one id race across processes', async () => {
      const commits = store.stores.map((one) => groupCommit(one));
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, (_, i) => commits[i % commits.length]!(create('race', plant(-5n, 'Same', 'x'), i))),
      );
      assert.equal(outcomes.filter((o) => o.status === 'applied').length, 1);
      assert.ok(outcomes.every((o) => 'plant' in o && o.plant.name === 'Same' && o.plant.tag === 'x'));
      assert.deepEqual(await store.stores[4]!.listPlants('race', idOrder(null), 10), [plant(-5n, 'Same', 'x')]);
    });

    it('commits overlapping batches sent in opposite orders without a deadlock', async () => {
      for (let round = 0; round < 5; round++) {
        const batch = Array.from({ length: 40 }, (_, i) => write('crossed', plant(BigInt(round * 100 + i))));
        const [forward, backward] = await Promise.all([
          insertPlants(store.stores[0]!, batch),
          insertPlants(store.stores[1]!, [...batch].reverse()),
        ]);
        const createdTwice = forward!.filter((o, i) => o.created && backward![batch.length - 1 - i]!.created);
        assert.deepEqual(createdTwice, []);
        assert.equal([...forward!, ...backward!].filter((o) => o.created).length, batch.length);
      }
    });
  });
}

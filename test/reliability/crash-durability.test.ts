import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { ENGINES, type Engine } from '../helpers/engines.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { LoadClient, lanes, scaled } from '../helpers/load.js';

/**
 * Contract: "A 200 means the plant is durably stored: it survives kill -9 of the server."
 * 64 creates stay in flight; the server is killed with SIGKILL once enough of them have been
 * answered, so requests are mid-way at every stage (parsed, queued for the group commit,
 * committing, answered). After a restart on the same store, every plant that got a 200 is there
 * with its exact name and tag.
 */

const IN_FLIGHT = 64;
/** Kill/restart cycles on one store; each kill lands at a different point of the stream. */
const ROUNDS = scaled(1, 5);
/** Roughly how many 200s a round collects before the kill (a random part is added). */
const ACKS_PER_ROUND = scaled(400, 3_000);

interface Sent {
  id: bigint;
  name: string;
  tag?: string;
}

/** Names and tags that are easy to get subtly wrong: unicode, an empty tag, no tag. */
function plantFor(id: bigint): Sent {
  const name = `crash ${id} 🌱 Grüne Minze ${'ß'.repeat(Number(id % 7n))}`;
  switch (id % 3n) {
    case 0n:
      return { id, name };
    case 1n:
      return { id, name, tag: '' };
    default:
      return { id, name, tag: `tag ${id} ✓` };
  }
}

function asBody({ id, name, tag }: Sent): string {
  return `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`;
}

interface Round {
  acked: Sent[];
  /** Sent but never answered: the kill caught them. */
  unanswered: Sent[];
  inFlightAtKill: number;
}

/**
 * Keeps IN_FLIGHT creates going; SIGKILLs the server after `killAfter` 200s. Before the kill,
 * anything but a 200 fails the test.
 */
async function streamUntilKilled(
  server: RunningServer,
  token: string,
  firstId: bigint,
  killAfter: number,
): Promise<Round> {
  const client = new LoadClient(server.url, IN_FLIGHT);
  const acked: Sent[] = [];
  const unanswered: Sent[] = [];
  let nextId = firstId;
  let inFlight = 0;
  let inFlightAtKill = -1;
  let killed = false;
  await lanes(IN_FLIGHT, async () => {
    while (!killed) {
      const plant = plantFor(nextId++);
      inFlight++;
      let answer: Awaited<ReturnType<typeof client.post>>;
      try {
        answer = await client.post(token, asBody(plant));
      } catch (error) {
        if (!killed) throw error;
        unanswered.push(plant);
        continue;
      } finally {
        inFlight--;
      }
      assert.equal(answer.status, 200, `every answered create succeeds: ${answer.text}`);
      const { id: _id, ...expected } = plant;
      assert.deepEqual(JSON.parse(answer.text), expected);
      acked.push(plant);
      if (!killed && acked.length >= killAfter) {
        killed = true;
        inFlightAtKill = inFlight;
        server.process.kill('SIGKILL');
      }
    }
  });
  client.close();
  assert.equal(await server.stop(), 'SIGKILL');
  return { acked, unanswered, inFlightAtKill };
}

function sqliteIntegrity(database: string): string {
  const db = new Database(database.slice('sqlite:'.length));
  try {
    return db.pragma('integrity_check', { simple: true }) as string;
  } finally {
    db.close();
  }
}

/** `acked`: every 200 so far, all checked by listing; `latest`: this round's, also checked by id. */
async function checkAllThere(server: RunningServer, token: string, acked: Sent[], maybe: Sent[], latest: Sent[]) {
  const client = new LoadClient(server.url, 32);
  try {
    const listed = await client.all(token);
    const byName = new Map(listed.map((plant) => [plant.name, plant]));
    assert.equal(byName.size, listed.length, 'no plant is listed twice');
    for (const { id, ...expected } of acked) {
      assert.deepEqual(byName.get(expected.name), expected, `acknowledged plant ${id} is there, exact`);
    }
    const possible = new Map([...acked, ...maybe].map(({ id: _id, ...plant }) => [plant.name, plant]));
    for (const plant of listed) {
      // A create the kill interrupted may or may not have been committed, but never half or altered.
      assert.deepEqual(plant, possible.get(plant.name), `listed plant "${plant.name}" is one that was sent, exact`);
    }
    // And under its own id: the same id with another tag is a conflict.
    await lanes(32, async (lane) => {
      for (let i = lane; i < latest.length; i += 32) {
        const plant = latest[i]!;
        const other = await client.post(token, asBody({ ...plant, tag: `${plant.tag ?? ''} changed` }));
        assert.equal(other.status, 409, `id ${plant.id} still holds its plant: ${other.text}`);
      }
    });
    const after = await client.all(token);
    assert.equal(after.length, listed.length, 'checking created nothing');
  } finally {
    client.close();
  }
}

async function opensCleanly(engine: Engine, database: string, server: RunningServer) {
  assert.equal(server.firstToken, null, 'a restart does not take the store for empty (no new first token)');
  const ready = await fetch(`${server.url}/readyz`);
  assert.equal(ready.status, 200, 'the restarted server is ready');
  if (engine.name === 'sqlite') assert.equal(sqliteIntegrity(database), 'ok', 'PRAGMA integrity_check');
  const complaints = server
    .output()
    .split('\n')
    .filter((line) => /"level":(40|50|60)/.test(line));
  assert.deepEqual(complaints, [], 'no warning or error while opening the store');
}

for (const engine of ENGINES) {
  describe(`a 200 survives kill -9 of the server (${engine.name})`, () => {
    it(`every plant acknowledged before SIGKILL is there after a restart, with its exact name and tag (${ROUNDS} kill(s), ${IN_FLIGHT} in flight)`, async (t) => {
      const { url: database, drop } = await engine.fresh();
      t.after(drop);
      let server = await startServer({ database });
      const token = server.firstToken;
      assert.ok(token, 'the first start prints a token');
      t.after(() => server.stop('SIGKILL'));

      const acked: Sent[] = [];
      const unanswered: Sent[] = [];
      let firstId = 9_007_199_254_740_000n; // around 2^53: ids must stay exact too
      for (let round = 1; round <= ROUNDS; round++) {
        const killAfter = ACKS_PER_ROUND + Math.floor(Math.random() * ACKS_PER_ROUND);
        const result = await streamUntilKilled(server, token, firstId, killAfter);
        t.diagnostic(
          `round ${round}: ${result.acked.length} acknowledged, ${result.unanswered.length} cut off, ` +
            `${result.inFlightAtKill} in flight at SIGKILL`,
        );
        assert.ok(result.inFlightAtKill >= IN_FLIGHT / 2, 'the kill caught creates mid-way');
        acked.push(...result.acked);
        unanswered.push(...result.unanswered);
        firstId += BigInt(result.acked.length + result.unanswered.length) + 1_000n;

        if (engine.name === 'sqlite') assert.equal(sqliteIntegrity(database), 'ok', 'the killed store is consistent');
        server = await startServer({ database });
        await opensCleanly(engine, database, server);
        await checkAllThere(server, token, acked, unanswered, result.acked);
      }
      assert.equal(await server.stop(), 0);
    });
  });
}

/**
 * Contract: "Updates and deletes are acknowledged like creates: durable before the answer, through
 * the same group commit." 64 clients keep creates, PATCHes and DELETEs in flight together, so each
 * group-commit batch mixes the three; the server is SIGKILLed once enough have been answered.
 * Each client owns its own ids (id % 64 = its lane), so it knows every plant's state exactly: after
 * a restart, every id holds what its last acknowledged change left (a deleted one is a 404), and an
 * id whose change the kill cut off holds either the state before that change or the state after.
 */

const SEED_PLANTS = 512;
/** Roughly how many changes are acknowledged before the kill (a random part is added). */
const CHANGES_BEFORE_KILL = scaled(600, 4_000);

type State = Sent | null;

interface Lane {
  /** The acknowledged state of each id this lane touched; null once deleted. */
  states: Map<bigint, State>;
  /** The id of this lane's next create: it goes on from round to round, so no id is created twice. */
  nextNew: bigint;
  /** The change the kill cut off, if any: the state before it and the one it would have made. */
  cutOff?: { id: bigint; before: State; after: State };
}

const statePath = (id: bigint) => `/plants/${id}`;

/** A state as comparable text (ids are BigInts, which JSON.stringify refuses). */
const show = (state: State) => JSON.stringify(state, (_, value) => (typeof value === 'bigint' ? String(value) : value));

function patchBody(change: { name?: string; tag?: string | null }): string {
  return JSON.stringify(change);
}

/** Keeps IN_FLIGHT clients changing their own plants until the server is killed after `killAfter` answers. */
async function mixedUntilKilled(server: RunningServer, token: string, killAfter: number, lanesState: Lane[]) {
  const client = new LoadClient(server.url, IN_FLIGHT);
  const counts = { create: 0, update: 0, delete: 0 };
  let answered = 0;
  let inFlight = 0;
  let inFlightAtKill = -1;
  let killed = false;
  let version = 0;
  await lanes(IN_FLIGHT, async (lane) => {
    const mine = lanesState[lane]!;
    while (!killed) {
      const live = [...mine.states].filter(([, state]) => state !== null).map(([id]) => id);
      const roll = Math.random();
      let kind: keyof typeof counts;
      let id: bigint;
      let after: State;
      let request: () => Promise<Awaited<ReturnType<LoadClient['request']>>>;
      if (roll < 0.3 || live.length === 0) {
        kind = 'create';
        id = mine.nextNew;
        mine.nextNew += BigInt(IN_FLIGHT);
        after = plantFor(id);
        const body = asBody(after);
        request = () => client.post(token, body);
      } else if (roll < 0.7) {
        kind = 'update';
        id = live[Math.floor(Math.random() * live.length)]!;
        const current = mine.states.get(id)!;
        const change = { name: `updated ${id} v${++version} ✓`, ...(Math.random() < 0.5 && { tag: null }) };
        after = { id, name: change.name, ...(!('tag' in change) && current.tag !== undefined && { tag: current.tag }) };
        request = () => client.request('PATCH', statePath(id), token, patchBody(change));
      } else {
        kind = 'delete';
        id = live[Math.floor(Math.random() * live.length)]!;
        after = null;
        request = () => client.request('DELETE', statePath(id), token);
      }
      const before = mine.states.get(id) ?? null;
      inFlight++;
      let answer: Awaited<ReturnType<typeof request>>;
      try {
        answer = await request();
      } catch (error) {
        if (!killed) throw error;
        mine.cutOff = { id, before, after };
        continue;
      } finally {
        inFlight--;
      }
      if (kind === 'delete') {
        assert.equal(answer.status, 204, `every answered delete succeeds: ${answer.text}`);
      } else {
        assert.equal(answer.status, 200, `every answered ${kind} succeeds: ${answer.text}`);
        const { id: _id, ...expected } = after!;
        assert.deepEqual(JSON.parse(answer.text), expected);
      }
      mine.states.set(id, after);
      counts[kind]++;
      if (!killed && ++answered >= killAfter) {
        killed = true;
        inFlightAtKill = inFlight;
        server.process.kill('SIGKILL');
      }
    }
  });
  client.close();
  assert.equal(await server.stop(), 'SIGKILL');
  return { counts, inFlightAtKill, cutOff: lanesState.filter((l) => l.cutOff).length };
}

/** Every id as GET /plants/{id} shows it: the acknowledged state, or for a cut-off change, either side of it. */
async function checkEveryState(server: RunningServer, token: string, lanesState: Lane[]) {
  const client = new LoadClient(server.url, 32);
  try {
    const expected: { id: bigint; allowed: State[] }[] = [];
    for (const lane of lanesState) {
      for (const [id, state] of lane.states) {
        if (lane.cutOff?.id !== id) expected.push({ id, allowed: [state] });
      }
      if (lane.cutOff) expected.push({ id: lane.cutOff.id, allowed: [lane.cutOff.before, lane.cutOff.after] });
    }
    let live = 0;
    await lanes(32, async (worker) => {
      for (let i = worker; i < expected.length; i += 32) {
        const { id, allowed } = expected[i]!;
        const answer = await client.get(token, statePath(id));
        assert.ok([200, 404].includes(answer.status), `GET ${id}: ${answer.status} ${answer.text}`);
        const seen: State = answer.status === 404 ? null : { id, ...(JSON.parse(answer.text) as Omit<Sent, 'id'>) };
        assert.ok(
          allowed.some((state) => show(state) === show(seen)),
          `plant ${id} is ${show(seen)}, expected one of ${allowed.map(show).join(' or ')}`,
        );
        if (seen !== null) live++;
      }
    });
    assert.equal((await client.all(token)).length, live, 'the listing holds exactly the live plants');
  } finally {
    client.close();
  }
}

for (const engine of ENGINES) {
  describe(`an acknowledged PATCH or DELETE survives kill -9 of the server (${engine.name})`, () => {
    it(`every change acknowledged before SIGKILL is there after a restart, in batches mixing creates, updates and deletes (${ROUNDS} kill(s), ${IN_FLIGHT} in flight)`, async (t) => {
      const { url: database, drop } = await engine.fresh();
      t.after(drop);
      let server = await startServer({ database });
      const token = server.firstToken;
      assert.ok(token, 'the first start prints a token');
      t.after(() => server.stop('SIGKILL'));

      const lanesState: Lane[] = Array.from({ length: IN_FLIGHT }, (_, lane) => ({
        states: new Map(),
        nextNew: BigInt(SEED_PLANTS + lane) + 1_000_000n,
      }));
      const seeder = new LoadClient(server.url, 32);
      await lanes(32, async (worker) => {
        for (let i = worker + 1; i <= SEED_PLANTS; i += 32) {
          const plant = plantFor(BigInt(i));
          const answer = await seeder.post(token, asBody(plant));
          assert.equal(answer.status, 200, answer.text);
          lanesState[i % IN_FLIGHT]!.states.set(plant.id, plant);
        }
      });
      seeder.close();

      for (let round = 1; round <= ROUNDS; round++) {
        for (const lane of lanesState) delete lane.cutOff;
        const killAfter = CHANGES_BEFORE_KILL + Math.floor(Math.random() * CHANGES_BEFORE_KILL);
        const result = await mixedUntilKilled(server, token, killAfter, lanesState);
        t.diagnostic(
          `round ${round}: acknowledged ${result.counts.create} creates, ${result.counts.update} updates, ` +
            `${result.counts.delete} deletes; ${result.cutOff} cut off, ${result.inFlightAtKill} in flight at SIGKILL`,
        );
        assert.ok(result.inFlightAtKill >= IN_FLIGHT / 2, 'the kill caught changes mid-way');
        assert.ok(result.counts.update > 0 && result.counts.delete > 0, 'updates and deletes were acknowledged');

        if (engine.name === 'sqlite') assert.equal(sqliteIntegrity(database), 'ok', 'the killed store is consistent');
        server = await startServer({ database });
        await opensCleanly(engine, database, server);
        await checkEveryState(server, token, lanesState);
        // What the restart shows is the truth the next round starts from.
        for (const lane of lanesState) {
          if (!lane.cutOff) continue;
          const answer = await fetch(`${server.url}${statePath(lane.cutOff.id)}`, {
            headers: { authorization: `Bearer ${token}` },
          });
          lane.states.set(
            lane.cutOff.id,
            answer.status === 404 ? null : { id: lane.cutOff.id, ...((await answer.json()) as Omit<Sent, 'id'>) },
          );
        }
      }
      assert.equal(await server.stop(), 0);
    });
  });
}

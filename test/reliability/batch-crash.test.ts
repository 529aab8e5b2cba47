import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { LoadClient, lanes, scaled } from '../helpers/load.js';

/**
 * Contract: a batch is "all or nothing ... Durable before the answer (one transaction, through the
 * group commit)". Lanes keep batches in flight, every fifth of them bound to be refused (409: its
 * last item meets a stored plant under another name); the server is SIGKILLed once enough have
 * been answered. After a restart, every batch answered 200 is there whole, every refused one is
 * wholly absent, and one the kill cut off is either whole or absent: never part of it.
 */

const LANES = 8;
const ITEMS = 200;
/** Batches answered before the kill (a random part is added). */
const ACKS_BEFORE_KILL = scaled(12, 60);
/** A plant every refused batch collides with: its id with another name. */
const TAKEN_ID = -1n;

const itemName = (batch: number, item: number) => `batch ${batch} item ${item} 🌿`;

function batchBody(batch: number): string {
  const items = Array.from({ length: ITEMS }, (_, i) => {
    const id = BigInt(batch) * 1_000n + BigInt(i) + 9_007_199_254_740_000n;
    return `{"id":${id},"name":${JSON.stringify(itemName(batch, i))},"tag":"b${batch}"}`;
  });
  // The fifth batches end with the taken id under a new name: 409, and none of the batch stored.
  if (batch % 5 === 4) items[ITEMS - 1] = `{"id":${TAKEN_ID},"name":"another name"}`;
  return `[${items.join(',')}]`;
}

async function batchesUntilKilled(server: RunningServer, token: string, killAfter: number) {
  const client = new LoadClient(server.url, LANES);
  const outcome = { acked: [] as number[], refused: [] as number[], cut: [] as number[], inFlightAtKill: 0 };
  let next = 0;
  let inFlight = 0;
  let killed = false;
  await lanes(LANES, async () => {
    while (!killed) {
      const batch = next++;
      inFlight++;
      let answer: Awaited<ReturnType<typeof client.request>>;
      try {
        answer = await client.request('POST', '/plants/batch', token, batchBody(batch));
      } catch (error) {
        if (!killed) throw error;
        outcome.cut.push(batch);
        continue;
      } finally {
        inFlight--;
      }
      assert.equal(answer.status, batch % 5 === 4 ? 409 : 200, answer.text);
      (answer.status === 200 ? outcome.acked : outcome.refused).push(batch);
      if (!killed && outcome.acked.length >= killAfter) {
        killed = true;
        outcome.inFlightAtKill = inFlight;
        server.process.kill('SIGKILL');
      }
    }
  });
  client.close();
  assert.equal(await server.stop(), 'SIGKILL');
  return outcome;
}

for (const engine of ENGINES) {
  describe(`a batch is whole or absent after kill -9 (${engine.name})`, () => {
    it(`every batch answered 200 is whole after a restart, none other is partly there (${LANES} in flight)`, async (t) => {
      const { url: database, drop } = await engine.fresh();
      t.after(drop);
      let server = await startServer({ database });
      const token = server.firstToken!;
      t.after(() => server.stop('SIGKILL'));
      const seed = await new LoadClient(server.url, 1).post(token, `{"id":${TAKEN_ID},"name":"taken"}`);
      assert.equal(seed.status, 200);

      const killAfter = ACKS_BEFORE_KILL + Math.floor(Math.random() * ACKS_BEFORE_KILL);
      const { acked, refused, cut, inFlightAtKill } = await batchesUntilKilled(server, token, killAfter);
      t.diagnostic(`${acked.length} batches acknowledged, ${refused.length} refused, ${cut.length} cut off`);
      assert.ok(inFlightAtKill > 0, 'the kill caught batches mid-way');

      server = await startServer({ database });
      const client = new LoadClient(server.url, 1);
      const listed = await client.all(token);
      client.close();
      const perBatch = new Map<string, string[]>();
      for (const plant of listed) perBatch.set(plant.tag ?? '', [...(perBatch.get(plant.tag ?? '') ?? []), plant.name]);
      const whole = (batch: number) => {
        const names = perBatch.get(`b${batch}`) ?? [];
        return names.length === ITEMS && names.every((name, i) => name === itemName(batch, i));
      };
      for (const batch of acked) assert.ok(whole(batch), `acknowledged batch ${batch} is there whole`);
      for (const batch of refused)
        assert.equal(perBatch.get(`b${batch}`), undefined, `refused batch ${batch} is absent`);
      for (const batch of cut) {
        const names = perBatch.get(`b${batch}`);
        assert.ok(names === undefined || whole(batch), `batch ${batch} cut off by the kill is whole or absent`);
      }
      assert.equal(listed.length, 1 + ITEMS * [...perBatch.keys()].filter((tag) => tag !== '').length);
      assert.equal(await server.stop(), 0);
    });
  });
}

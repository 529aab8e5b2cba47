import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openStorage } from '../../src/storage/open.js';
import { insertPlants } from '../helpers/plants.js';
import { ENGINES } from '../helpers/engines.js';
import { createToken, startServer, type RunningServer } from '../helpers/server.js';

/**
 * GET /plants without limit streams: a server whose heap could not hold the listing still serves
 * it. 100,000 plants of 200-character names are a 22 MB response and far more as row objects.
 */

const PLANTS = 100_000;
const HEAP_LIMIT_MB = 48;

for (const engine of ENGINES) {
  describe(`streaming ${PLANTS.toLocaleString('en')} plants in a ${HEAP_LIMIT_MB} MB heap (${engine.name})`, () => {
    let server: RunningServer | undefined;
    let token = '';
    let drop = async () => {};

    before(async () => {
      const store = await engine.fresh();
      drop = store.drop;
      const storage = await openStorage(store.url);
      try {
        for (let start = 0; start < PLANTS; start += 5_000) {
          const writes = Array.from({ length: 5_000 }, (_, i) => ({
            account: 'big',
            plant: { id: BigInt(start + i), name: 'n'.repeat(200), tag: null },
          }));
          await insertPlants(storage, writes);
        }
      } finally {
        await storage.close();
      }
      token = (await createToken(store.url, 'big')).token;
      server = await startServer({
        database: store.url,
        env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}` },
      });
    });

    after(async () => {
      await server?.stop();
      await drop();
    });

    it('sends every plant, twice in a row, without running out of memory', async () => {
      for (let round = 0; round < 2; round++) {
        const response = await fetch(`${server!.url}/plants`, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(response.status, 200);
        let bytes = 0;
        for await (const chunk of response.body!) bytes += chunk.length;
        const plantBytes = '{"name":""}'.length + 200;
        assert.equal(bytes, 2 + PLANTS * plantBytes + (PLANTS - 1));
      }
      assert.equal(server!.process.exitCode, null, server!.output());
    });
  });
}

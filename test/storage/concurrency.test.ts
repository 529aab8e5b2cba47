import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { listPlants, postPlant } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';

/** Per-account uniqueness and idempotent replay when many requests for one id arrive at once. */

const CONCURRENT = 50;

for (const engine of ENGINES) {
  describe(`concurrent creates of one id over HTTP (${engine.name})`, () => {
    const s = realServer(engine);

    it('50 identical POSTs: all 200 with the plant, exactly one plant stored', async () => {
      const { token } = await createToken(s.database, 'same-plant');
      const body = '{"id": 9007199254740993, "name": "Monstera", "tag": "aroid"}';
      const replies = await Promise.all(Array.from({ length: CONCURRENT }, () => postPlant(s.url, token, body)));
      assert.deepEqual(
        replies.map((r) => r.status),
        replies.map(() => 200),
        replies.map((r) => r.text).join('\n'),
      );
      assert.ok(replies.every((r) => r.text === '{"name":"Monstera","tag":"aroid"}'));
      assert.equal((await listPlants(s.url, token)).text, '[{"name":"Monstera","tag":"aroid"}]');
    });

    it('50 POSTs of one id with different names: one 200, the rest 409, never a 5xx', async () => {
      const { token } = await createToken(s.database, 'rival-plants');
      const replies = await Promise.all(
        Array.from({ length: CONCURRENT }, (_, i) => postPlant(s.url, token, `{"id": -42, "name": "rival ${i}"}`)),
      );
      const winners = replies.filter((r) => r.status === 200);
      assert.equal(winners.length, 1, replies.map((r) => `${r.status} ${r.text}`).join('\n'));
      assert.equal(replies.filter((r) => r.status === 409).length, CONCURRENT - 1);
      assert.equal((await listPlants(s.url, token)).text, `[${winners[0]!.text}]`);
    });
  });
}

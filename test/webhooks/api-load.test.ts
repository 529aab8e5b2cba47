import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { apiSaturation } from '../../src/webhooks/api-load.js';

/** Keeps the event loop busy for `ms`, as a saturated API would. */
function spin(ms: number) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe('the API counts as saturated only while requests arrive and the event loop is busy', () => {
  const server = http.createServer((_request, response) => response.end('ok'));
  let url = '';
  let apiBusy: () => boolean;
  /** One request, answered before anyone asks: as group commit answers a whole batch in one turn. */
  const answered = async () => (await fetch(url)).text();

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    apiBusy = apiSaturation(server);
    await sleep(250);
    apiBusy();
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  it('is saturated when requests arrived and the loop was busy, even if none is in flight when asked', async () => {
    await answered();
    spin(300);
    assert.equal(apiBusy(), true);
  });

  it('is not saturated when the loop was busy with no request arriving (the deliverer itself, say)', () => {
    spin(300);
    assert.equal(apiBusy(), false);
  });

  it('is not saturated when requests arrive at a pace the process keeps up with', async () => {
    await answered();
    await sleep(300);
    assert.equal(apiBusy(), false);
  });

  it('keeps its answer until the window of 200 ms is over', async () => {
    await answered();
    spin(300);
    assert.equal(apiBusy(), true);
    assert.equal(apiBusy(), true, 'asked again at once: the same window');
  });
});

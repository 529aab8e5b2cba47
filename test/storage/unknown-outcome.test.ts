import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { groupCommit } from '../../src/storage/group-commit.js';
import { openStorage } from '../../src/storage/open.js';
import type { Storage } from '../../src/storage/types.js';
import { isStorageUnavailable } from '../../src/storage/unavailable.js';
import type { ChangeOutcome, PlantChange } from '../../src/storage/types/plants.js';
import { pg } from '../helpers/engines.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A commit whose answer is lost: the transaction committed, and the connection dropped before
 * COMMIT's answer came back. Group commit used to retry such a batch change by change, and the
 * retried DELETE found its plant gone and answered 404 (seen under `pg_terminate_backend`: a
 * DELETE answered 404 0.16 s after its plant's create got its 200). The test's proxy lets the
 * COMMIT through to PostgreSQL and then cuts the connection before its answer, every time.
 */
const ACCOUNT = 'lost-answers';
const plant = (id: bigint, name: string) => ({ id, name, tag: null, revision: 1n });
const create = (id: bigint, name: string): PlantChange => ({
  kind: 'create',
  account: ACCOUNT,
  plant: plant(id, name),
  eventId: `msg_create_${id}`,
});
const remove = (id: bigint): PlantChange => ({ kind: 'delete', account: ACCOUNT, id, eventId: `msg_delete_${id}` });
/** What the caller is told: an outcome, or `unavailable` (the 503 of errors.ts). */
const settle = (outcome: Promise<ChangeOutcome>) =>
  outcome.then(
    (value) => value.status,
    (error: unknown) => (isStorageUnavailable(error) ? 'unavailable' : `failed: ${(error as Error).message}`),
  );

describe('a write whose commit answer is lost is never answered as if it had not happened', () => {
  let url: string;
  let drop: () => Promise<void>;
  let proxy: TcpProxy;
  let store: Storage;
  let direct: Storage;

  before(async () => {
    ({ url, drop } = await pg.fresh());
    const target = new URL(url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    // Unprepared, every statement's text is on the wire, COMMIT's included.
    proxied.searchParams.set('prepare', 'false');
    store = await openStorage(proxied.href, { databaseTimeoutMs: 2_000 });
    direct = await openStorage(url);
  });
  after(async () => {
    await store.close();
    await direct.close();
    await proxy.close();
    await drop();
  });

  it('fails every change of the batch as unavailable (503), though the batch committed', async () => {
    const apply = groupCommit(store);
    assert.equal((await apply(create(1n, 'kept'))).status, 'applied');
    // Long enough for the commit to happen there; its answer is never passed on.
    let cut = false;
    void proxy.cutAfter(/commit/i, 300).then(() => (cut = true));
    // Queued in one turn: one batch, one transaction, one COMMIT.
    const [deleted, created] = await Promise.all([settle(apply(remove(1n))), settle(apply(create(2n, 'new')))]);
    assert.ok(cut, 'the COMMIT was cut');
    assert.deepEqual([deleted, created], ['unavailable', 'unavailable'], 'the DELETE is not answered missing (404)');
    // The store's own word: the batch did commit.
    assert.equal(await direct.getPlant(ACCOUNT, 1n), null);
    assert.equal((await direct.getPlant(ACCOUNT, 2n))?.name, 'new');
  });
});

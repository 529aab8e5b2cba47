import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { groupCommit } from '../../src/storage/group-commit.js';
import { openStorage } from '../../src/storage/open.js';
import type { Storage } from '../../src/storage/types.js';
import { isStorageUnavailable } from '../../src/storage/unavailable.js';
import type { ChangeOutcome, PlantChange } from '../../src/storage/types/plants.js';
import { pg } from '../helpers/engines.js';

/**
 * A commit whose answer is lost: the transaction committed, and the connection dropped before
 * COMMIT's answer came back. Group commit used to retry such a batch change by change, and the
 * retried DELETE found its plant gone and answered 404 (seen under `pg_terminate_backend`: a
 * DELETE answered 404 0.16 s after its plant's create got its 200). The proxy here lets the
 * COMMIT through to PostgreSQL and then cuts the connection before its answer, every time.
 */
class CommitCutter {
  private readonly server: net.Server;
  /** Cut the next connection that sends COMMIT, once it reached the database. */
  armed = false;
  cuts = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => this.pipe(client));
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: net.Socket) {
    const database = net.connect(this.target.port, this.target.host);
    let cutting = false;
    const cut = () => {
      client.destroy();
      database.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      database.write(chunk);
      if (this.armed && /commit/i.test(chunk.toString('latin1'))) {
        this.armed = false;
        cutting = true;
        this.cuts++;
        // Long enough for the commit to happen there; its answer is never passed on.
        setTimeout(cut, 300);
      }
    });
    database.on('data', (chunk: Buffer) => {
      if (!cutting) client.write(chunk);
    });
    client.on('error', cut);
    database.on('error', cut);
    client.on('close', cut);
    database.on('close', cut);
  }
}

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
  let cutter: CommitCutter;
  let store: Storage;
  let direct: Storage;

  before(async () => {
    ({ url, drop } = await pg.fresh());
    const target = new URL(url);
    cutter = new CommitCutter({ host: target.hostname, port: Number(target.port || 5432) });
    const port = await cutter.listen();
    const proxied = new URL(url);
    proxied.port = String(port);
    // Unprepared, every statement's text is on the wire, COMMIT's included.
    proxied.searchParams.set('prepare', 'false');
    store = await openStorage(proxied.href, { databaseTimeoutMs: 2_000 });
    direct = await openStorage(url);
  });
  after(async () => {
    await store.close();
    await direct.close();
    await cutter.close();
    await drop();
  });

  it('fails every change of the batch as unavailable (503), though the batch committed', async () => {
    const apply = groupCommit(store);
    assert.equal((await apply(create(1n, 'kept'))).status, 'applied');
    cutter.armed = true;
    // Queued in one turn: one batch, one transaction, one COMMIT.
    const [deleted, created] = await Promise.all([settle(apply(remove(1n))), settle(apply(create(2n, 'new')))]);
    assert.equal(cutter.cuts, 1, 'the COMMIT was cut');
    assert.deepEqual([deleted, created], ['unavailable', 'unavailable'], 'the DELETE is not answered missing (404)');
    // The store's own word: the batch did commit.
    assert.equal(await direct.getPlant(ACCOUNT, 1n), null);
    assert.equal((await direct.getPlant(ACCOUNT, 2n))?.name, 'new');
  });
});

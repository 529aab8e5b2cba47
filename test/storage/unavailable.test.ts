import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isStorageUnavailable } from '../../src/storage/unavailable.js';
import { freePort } from '../helpers/ports.js';

/**
 * The driver hands a broken connection's socket error to the statements in flight as it is. Each
 * error here is made for real, on a socket of this process, and each must read as "the store is
 * unavailable" (a 503 and Retry-After), not as a fault of the service (a 500). EPIPE was missing:
 * it is what a second write gets after the database closed the connection (a terminated backend)
 * and the first write was answered with a reset.
 */

function failureOf(socket: Socket): Promise<NodeJS.ErrnoException> {
  return new Promise((resolve) => socket.once('error', resolve));
}

describe('a connection that breaks, however it breaks, makes the store unavailable (503), not a 500', () => {
  let server: Server;
  let port: number;
  let onConnection: (peer: Socket) => void = () => {};
  before(async () => {
    server = createServer((peer) => onConnection(peer));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('nothing listening: ECONNREFUSED', async () => {
    const error = await failureOf(connect(await freePort(), '127.0.0.1'));
    assert.equal(error.code, 'ECONNREFUSED');
    assert.ok(isStorageUnavailable(error));
  });

  it('the peer resets the connection: ECONNRESET', async () => {
    onConnection = (peer) => peer.resetAndDestroy();
    const error = await failureOf(connect(port, '127.0.0.1'));
    assert.equal(error.code, 'ECONNRESET');
    assert.ok(isStorageUnavailable(error));
  });

  it('written again after the peer closed it: EPIPE', async () => {
    onConnection = (peer) => peer.destroy();
    const socket = connect(port, '127.0.0.1');
    const failed = failureOf(socket);
    // Not reading, as a driver busy writing a pipeline has not read yet: the close is met by a write.
    socket.pause();
    await new Promise((resolve) => socket.once('connect', resolve));
    await sleep(50);
    socket.write('a');
    await sleep(50);
    socket.write('b');
    const error = await failed;
    assert.equal(error.code, 'EPIPE');
    assert.ok(isStorageUnavailable(error));
  });

  it('a host name that does not resolve: ENOTFOUND, or EAI_AGAIN where no resolver answers', async () => {
    const error = (await lookup('plant-store-database.invalid').then(
      () => assert.fail('resolved a .invalid name'),
      (failure: unknown) => failure,
    )) as NodeJS.ErrnoException;
    assert.match(error.code ?? '', /^(ENOTFOUND|EAI_AGAIN)$/);
    assert.ok(isStorageUnavailable(error));
  });

  it('an error without a code is not taken for unavailability: it is a fault, answered 500 and logged', () => {
    assert.equal(isStorageUnavailable(new TypeError("Cannot read properties of null (reading 'write')")), false);
  });
});

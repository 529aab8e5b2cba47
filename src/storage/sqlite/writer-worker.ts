import { parentPort, workerData } from 'node:worker_threads';
import { openConnection } from './connection.js';
import { diskProbe } from './disk-watch.js';
import { plantWriter } from './plant-writer.js';
import { OwnTicks } from './plants-clock.js';
import type { WriterData, WriterReply, WriterRequest } from './writer-messages.js';

/**
 * The writer thread's body (writer-thread.ts says why there is one): its own connection, opened as
 * the main one is, and the same transaction code as the inline path (plant-writer.ts). Each message
 * is one transaction, run to its COMMIT before the reply goes back; `close` closes the connection,
 * and the thread ends.
 */
const { path, feed, ownTicks } = workerData as WriterData;
const port = parentPort!;
const db = openConnection(path);
const write = plantWriter(db, feed, OwnTicks.of(ownTicks));
const probe = diskProbe(db);

port.on('message', (request: WriterRequest) => {
  if (request === 'close') {
    db.close();
    port.close();
    return;
  }
  let reply: WriterReply;
  try {
    if ('probe' in request) probe();
    reply = {
      id: request.id,
      outcomes: 'changes' in request ? write(request.changes) : [],
    };
  } catch (error) {
    const { message, code } = error as { message?: unknown; code?: unknown };
    reply = { id: request.id, error: { message: String(message), code: typeof code === 'string' ? code : undefined } };
  }
  port.postMessage(reply);
});

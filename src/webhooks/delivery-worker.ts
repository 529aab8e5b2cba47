import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { ownThreadId } from '../telemetry/thread-cpu.js';
import { openDeliveries } from '../storage/open-delivery-store.js';
import { AddressGuard } from './address-guard.js';
import { AttemptCounts } from './attempt-counts.js';
import { Deliverer } from './deliverer.js';
import type { DeliveryThreadData, DeliveryThreadMessage } from './delivery-thread.js';
import { DELIVERY_THREAD_NICENESS } from './delivery-types.js';

/** The delivery thread's body (delivery-thread.ts says why there is one). `stop` ends it once the attempts in flight have. */
const { source, settings, allowPrivate, apiBusy, commits, attempts } = workerData as DeliveryThreadData;
const port = parentPort!;
const tell = (message: DeliveryThreadMessage) => port.postMessage(message);
const busy = new Int32Array(apiBusy);
const committed = new Int32Array(commits);
/** How long one wait for a commit lasts before it is renewed (so that `stop` is never waiting on it for long). */
const COMMIT_WAIT_MS = 1_000;

const threadId = ownThreadId();
if (threadId !== null) {
  setPriority(threadId, DELIVERY_THREAD_NICENESS);
  tell({ threadId });
}
const store = await openDeliveries(source);
const deliverer = new Deliverer(store.deliveries, {
  ...settings,
  guard: new AddressGuard(allowPrivate),
  log: { warn: (fields, message) => tell({ warn: { fields, message } }) },
  attempts: new AttemptCounts(attempts),
  apiBusy: () => Atomics.load(busy, 0) === 1,
});
deliverer.start();

let running = true;
/** Each commit of the event loop's (delivery-thread.ts, `poke`) wakes the deliverer. */
const watchingCommits = (async () => {
  let seen = Atomics.load(committed, 0);
  while (running) {
    const wait = Atomics.waitAsync(committed, 0, seen, COMMIT_WAIT_MS);
    if (wait.async && (await wait.value) === 'timed-out') continue;
    seen = Atomics.load(committed, 0);
    deliverer.poke();
  }
})();

port.on('message', async (message: 'stop') => {
  if (message !== 'stop') return;
  running = false;
  Atomics.notify(committed, 0);
  await watchingCommits;
  await deliverer.stop();
  await store.close();
  port.close();
});

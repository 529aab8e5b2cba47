import { answerWithin } from '../deadline.js';
import type { DeliveryStorage, DeliverySource } from './types/webhooks.js';
import { DatabaseUnavailable } from './unavailable.js';

/**
 * PostgreSQL connections of a deliverer's thread: one claims or records while another prunes. The
 * pool of the process's API is apart (--pg-pool-max).
 */
const DELIVERY_POOL_MAX = 2;

/**
 * The deliverer's side of a store, opened from its `deliverySource` in the deliverer's own thread
 * (src/webhooks/delivery-worker.ts): connections of its own, and no migrations (the process that
 * named the source ran them). Only the engine in use is loaded into the thread.
 */
export async function openDeliveries(
  source: DeliverySource,
): Promise<{ deliveries: DeliveryStorage; close(): Promise<void> }> {
  if (source.engine === 'sqlite') {
    const { openDeliveriesConnection } = await import('./sqlite/connection.js');
    const { sqliteDeliveries } = await import('./sqlite/webhook-deliveries.js');
    const db = openDeliveriesConnection(source.path);
    return { deliveries: sqliteDeliveries(db), close: async () => void db.close() };
  }
  const { connect } = await import('./postgres/connection.js');
  const { postgresDeliveries } = await import('./postgres/webhook-deliveries.js');
  const open = () => connect(source.url, DELIVERY_POOL_MAX, { pooled: source.pooled, timeoutMs: source.timeoutMs });
  let sql = open();
  let deliveries = postgresDeliveries(sql);
  // A call still unanswered at twice the timeout is not waiting on a silent connection (those are
  // dropped at the timeout: postgres/answer-watch.ts) but inside the driver, on connections it will
  // not give back (seen after backends were terminated under load: every claim waited, and the
  // deliverer with them). The pool is replaced: the deliverer is the only user of its own.
  const stuckAfterMs = 2 * source.timeoutMs;
  const within = <T>(call: () => Promise<T>): Promise<T> =>
    answerWithin(call(), stuckAfterMs, () => {
      const stuck = sql;
      sql = open();
      deliveries = postgresDeliveries(sql);
      void stuck.end({ timeout: 0 }).catch(() => {});
      return new DatabaseUnavailable(
        `no answer from the database within ${stuckAfterMs} ms; its connections were replaced`,
      );
    });
  return {
    deliveries: {
      claimDeliveries: (...args) => within(() => deliveries.claimDeliveries(...args)),
      recordAttempts: (...args) => within(() => deliveries.recordAttempts(...args)),
      disableEndpoint: (...args) => within(() => deliveries.disableEndpoint(...args)),
      // Removing a long backlog takes as long as it takes, chunk by chunk.
      pruneDeliveries: (...args) => deliveries.pruneDeliveries(...args),
      deliveryBacklog: () => within(() => deliveries.deliveryBacklog()),
    },
    close: () => sql.end({ timeout: 5 }),
  };
}

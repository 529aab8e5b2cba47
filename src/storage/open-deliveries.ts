import type { DeliveryStorage, DeliverySource } from './types/webhooks.js';

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
  const sql = connect(source.url, DELIVERY_POOL_MAX, { pooled: source.pooled });
  return { deliveries: postgresDeliveries(sql), close: () => sql.end({ timeout: 5 }) };
}

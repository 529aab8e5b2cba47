import type Database from 'better-sqlite3';
import { newPlantJson } from '../changes.js';
import type { PlantEventType, PlantRecord } from '../types.js';

export type QueueEvent = (account: string, type: PlantEventType, eventId: string, plant: PlantRecord) => void;

const noEndpoints: QueueEvent = () => {};

/**
 * Queues an event for every enabled endpoint of the account subscribed to its type. Call the
 * returned function at the start of each write transaction: it answers the function that queues,
 * or, in a store without any enabled endpoint (most stores), one that does nothing, so that such a
 * store spends one query per batch instead of one per change. Exact: the transaction holds the
 * write lock, so no endpoint can appear before it commits.
 */
export function outbox(db: Database.Database): () => QueueEvent {
  const enqueue = db.prepare(
    `INSERT INTO webhook_deliveries
       (account, endpoint_id, event_id, event_type, payload, created_at, state, attempts, next_attempt_at, updated_at)
     SELECT account, id, @eventId, @type, @payload, @now, 'pending', 0, @now, @now FROM webhook_endpoints
     WHERE account = @account AND enabled = 1 AND instr(events, @word) > 0`,
  );
  const anyEndpoint = db.prepare('SELECT 1 FROM webhook_endpoints WHERE enabled = 1 LIMIT 1').pluck();
  const queue: QueueEvent = (account, type, eventId, plant) => {
    const now = Date.now();
    enqueue.run({ account, type, eventId, payload: newPlantJson(plant), now, word: ` ${type} ` });
  };
  return () => (anyEndpoint.get() === undefined ? noEndpoints : queue);
}

import type Database from 'better-sqlite3';
import { newPlantJson } from '../changes.js';
import type { PlantEventType, PlantRecord } from '../types.js';

/** Queues an event for every enabled endpoint of the account subscribed to its type; call inside the change's transaction. */
export function outbox(db: Database.Database) {
  const enqueue = db.prepare(
    `INSERT INTO webhook_deliveries
       (account, endpoint_id, event_id, event_type, payload, created_at, state, attempts, next_attempt_at, updated_at)
     SELECT account, id, @eventId, @type, @payload, @now, 'pending', 0, @now, @now FROM webhook_endpoints
     WHERE account = @account AND enabled = 1 AND instr(events, @word) > 0`,
  );
  return (account: string, type: PlantEventType, eventId: string, plant: PlantRecord) => {
    const now = Date.now();
    enqueue.run({ account, type, eventId, payload: newPlantJson(plant), now, word: ` ${type} ` });
  };
}

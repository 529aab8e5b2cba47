import { plantEventPayload, type PlantEventType } from '../../events/plant-event.js';
import type { PlantRecord } from '../types/plants.js';
import type { Tx } from './connection.js';

export interface QueuedEvent {
  account: string;
  type: PlantEventType;
  eventId: string;
  plant: PlantRecord;
}

/**
 * Queues each event for every enabled endpoint of its account subscribed to its type, in one
 * statement; call inside the change's transaction.
 */
export async function queueEvents(tx: Tx, events: QueuedEvent[]): Promise<void> {
  if (events.length === 0) return;
  await tx`
    INSERT INTO webhook_deliveries
      (account, endpoint_id, event_id, event_type, payload, created_at, state, attempts, next_attempt_at, updated_at)
    SELECT e.account, e.id, q.event_id, q.event_type, q.payload, now(), 'pending', 0, now(), now()
    FROM unnest(${tx.array(events.map((e) => e.account))}::text[],
                ${tx.array(events.map((e) => e.eventId))}::text[],
                ${tx.array(events.map((e) => e.type))}::text[],
                ${tx.array(events.map((e) => plantEventPayload(e.plant)))}::text[]) AS q(account, event_id, event_type, payload)
    JOIN webhook_endpoints e ON e.account = q.account AND e.enabled AND q.event_type = ANY (e.events)`;
}

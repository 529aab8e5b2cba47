import { serializePlant, toPlant, type PlantFields } from '../plant-fields.js';
import { randomPoolBytes } from '../random-pool.js';

/**
 * The plant event: what a change that took effect reports, to webhook receivers now and to any
 * other reader of the store's changes. Its id, its type names, which change makes which type, and
 * its JSON payload are written here once; storage, webhooks and the documents read them here.
 */

export const PLANT_EVENT_TYPES = ['plant.created', 'plant.updated', 'plant.deleted'] as const;

export type PlantEventType = (typeof PLANT_EVENT_TYPES)[number];

/** The kinds of change to a plant, each reported as one event type. */
export type PlantChangeKind = 'create' | 'update' | 'delete';

export const EVENT_OF: Readonly<Record<PlantChangeKind, PlantEventType>> = {
  create: 'plant.created',
  update: 'plant.updated',
  delete: 'plant.deleted',
};

/**
 * A new event's id (`webhook-id`, the receivers' deduplication key), drawn before the change's
 * transaction. Time first (milliseconds, fixed-width base 36), then 96 random bits: the outbox's
 * keys then grow at their end instead of landing on random index pages, which made each commit
 * write many more pages.
 */
export function newEventId(): string {
  return 'msg_' + Date.now().toString(36).padStart(9, '0') + randomPoolBytes(12).toString('base64url');
}

/**
 * The event's body: the plant as `NewPlant` JSON, its id exact over int64 (written as a literal,
 * never a double), then its fields as a response writes them (the same serializer).
 */
export function plantEventPayload(plant: PlantFields & { id: bigint }): string {
  return `{"id":${plant.id},${serializePlant(toPlant(plant)).slice(1)}`;
}

import type { EventPlant } from './types.js';

/**
 * The plant of an event's JSON body (a webhook delivery, a change-feed message), its id a `bigint`
 * and its other fields as the body has them; undefined when the body is not a plant. One parser for
 * both, so a field the served document adds to `Plant` reaches both alike.
 */
export function eventPlant(body: unknown): EventPlant | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { id, ...fields } = body as Record<string, unknown>;
  if ((typeof id !== 'bigint' && !Number.isInteger(id)) || typeof fields.name !== 'string') return undefined;
  return { id: BigInt(id as bigint | number), ...fields } as EventPlant;
}

import { PlantStoreError } from './errors.js';
import { eventPlant } from './event-plant.js';
import { parseJson } from './json.js';
import { backoffMs, sleep, type RetryPolicy } from './retry.js';
import { sseMessages } from './sse.js';
import type { Transport } from './transport.js';
import type { EventPlant } from './types.js';

export type FeedEventType = 'ready' | 'plant.created' | 'plant.updated' | 'plant.deleted';

/** A plant as the change feed reports it: the webhook body, its id exact. */
export type FeedPlant = EventPlant;

/** One message of the change feed: `ready` (no plant) or a change, with the cursor that follows it. */
export interface FeedEvent {
  type: FeedEventType;
  cursor: string;
  plant?: FeedPlant;
}

export interface StreamEventsOptions {
  /** Resume after this cursor (a `cursor` this iterator gave before); absent: from now on. */
  after?: string;
  /** Ends the iteration (and the open request). */
  signal?: AbortSignal;
}

/** Answers that reconnecting cannot change: the caller must act (a new token, list again after a 410). */
const FINAL = new Set([400, 401, 403, 404, 406, 410]);

/**
 * The change feed as an async iterator, reconnecting with its last cursor whenever the stream
 * ends or the network fails (after the server's `retry:`, or a backoff while it cannot be
 * reached), so that the caller sees every event once, in order. fetch-based, so the token goes in
 * the Authorization header, which a browser's EventSource cannot send.
 */
export async function* streamEvents(
  http: Transport,
  retry: RetryPolicy,
  { after, signal }: StreamEventsOptions = {},
): AsyncGenerator<FeedEvent> {
  let cursor = after;
  let failures = 0;
  let retryMs = 1_000;
  for (;;) {
    let response: Response;
    try {
      response = await http.openStream('/events', { accept: 'text/event-stream', 'last-event-id': cursor }, signal);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof PlantStoreError && FINAL.has(error.status)) throw error;
      const wait = error instanceof PlantStoreError && error.retryAfter !== undefined ? error.retryAfter * 1000 : 0;
      await sleep(Math.max(wait, backoffMs(retry, failures++)), signal);
      continue;
    }
    failures = 0;
    try {
      for await (const message of sseMessages(response.body!)) {
        if (message.retry !== undefined) retryMs = message.retry;
        if (message.id === undefined) continue;
        cursor = message.id;
        const type = message.event as FeedEventType;
        if (type === 'ready') yield { type, cursor };
        else yield { type, cursor, plant: toPlant(message.data) };
      }
    } catch {
      if (signal?.aborted) throw signal.reason;
      // The connection broke: reconnect below, from the last cursor.
    }
    await sleep(retryMs, signal);
  }
}

function toPlant(data: string): FeedPlant {
  const plant = eventPlant(parseJson(data));
  if (plant === undefined) throw new TypeError(`a change-feed message that is not a plant: ${data}`);
  return plant;
}

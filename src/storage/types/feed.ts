import type { PlantEventType } from '../../events/plant-event.js';

/**
 * The change feed as storage keeps it: every event of an account, numbered 1, 2, 3... in the order
 * the transactions that wrote them committed (sqlite/events.ts, postgres/outbox.ts), kept for
 * `--event-retention`. Webhooks and the feed report the same events: same id, type and body.
 */
export interface FeedEvent {
  /** The event's number in its account: no gaps, commit order. */
  seq: bigint;
  /** The webhook-id of the same event. */
  eventId: string;
  type: PlantEventType;
  /** The webhook body: the plant as `NewPlant` JSON. */
  payload: string;
}

/** Where an account's feed stands: its last event, and the last one removed by retention (0: none). */
export interface FeedHead {
  lastSeq: bigint;
  prunedThrough: bigint;
}

export interface FeedStorage {
  /** The secret that binds a cursor to its account; the same for every process of one store. */
  feedKey(): Promise<Buffer>;
  /** An account without events stands at 0, 0. */
  feedHead(account: string): Promise<FeedHead>;
  /** The last event number of each of `accounts` that has any (a cheap poll for other processes' commits). */
  feedHeads(accounts: string[]): Promise<Map<string, bigint>>;
  /** Up to `limit` events with seq > `afterSeq`, ascending. */
  feedEvents(account: string, afterSeq: bigint, limit: number): Promise<FeedEvent[]>;
  /** Removes events written before `before` and raises each account's `prunedThrough`; how many. */
  pruneEvents(before: Date): Promise<number>;
}

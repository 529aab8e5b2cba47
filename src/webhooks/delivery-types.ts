/** Where the deliverer's warnings go: the app's logger, or from the deliverer's thread, a message to it. */
export interface DeliveryLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** What came of an attempt, as /metrics counts it: `retrying` when another attempt is scheduled. */
export type AttemptOutcome = 'delivered' | 'retrying' | 'failed';

/** The deliverer's settings, as they cross to its thread (delivery-thread.ts). */
export interface DeliverySettings {
  timeoutMs: number;
  retrySchedule: readonly number[];
  concurrency: number;
  retentionMs: number;
}

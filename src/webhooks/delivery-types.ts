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
  /** Attempts in flight per process (--webhook-concurrency); an account may have a quarter of them (fair-share.ts). */
  concurrency: number;
  /** Attempts in flight per endpoint at most, however quickly it answers (endpoint-pace.ts). */
  endpointConcurrency: number;
  retentionMs: number;
}

/**
 * Nice 5 for the delivery thread alone (delivery-worker.ts): where it shares a core with the API's
 * threads, the scheduler gives them about three times its turns. Not more: a nice value counts
 * against every busy thread of the machine (of the session, with autogroups), not only the API's,
 * and at 19 the thread got about 1 % of a core beside other busy processes, so that thousands of
 * events waited minutes (in the test suite, two files at once). The API's own claim (one batch a
 * second while it saturates the process: deliverer.ts) is what gives way to it. Linux only, where a
 * thread has an id of its own that setpriority accepts; elsewhere the thread keeps the process's
 * priority.
 */
export const DELIVERY_THREAD_NICENESS = 5;

import type { AttemptRecord } from '../storage/types/webhooks.js';
import type { AttemptResult } from './attempt.js';

/** A `Retry-After` is honoured up to this far ahead, so one answer cannot park an event for weeks. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** Each wait of the schedule is stretched or shrunk by up to this fraction, so retries of many events spread out. */
const JITTER = 0.2;

export function delivered(result: AttemptResult): boolean {
  return result.status !== null && result.status >= 200 && result.status < 300;
}

/** What an attempt's result is written as, the attempt being the `attemptsBefore + 1`-th. */
export function afterAttempt(
  result: AttemptResult,
  attemptsBefore: number,
  schedule: readonly number[],
  now: number,
  random: () => number = Math.random,
): AttemptRecord {
  const outcome = { lastStatus: result.status, lastError: result.error };
  if (delivered(result)) return { state: 'delivered', nextAttemptAt: null, ...outcome };
  if (result.status === 410 || attemptsBefore >= schedule.length) {
    return { state: 'failed', nextAttemptAt: null, ...outcome };
  }
  let wait = schedule[attemptsBefore]! * (1 - JITTER + 2 * JITTER * random());
  const asked = result.retryAfterMs;
  if ((result.status === 429 || result.status === 503) && asked !== null && asked > wait) {
    wait = Math.min(asked, MAX_RETRY_AFTER_MS);
  }
  return { state: 'pending', nextAttemptAt: new Date(now + wait), ...outcome };
}

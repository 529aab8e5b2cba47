import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptResult } from '../../src/webhooks/attempt.js';
import { afterAttempt, delivered } from '../../src/webhooks/retry.js';

/** What an attempt's result becomes: delivered, a retry at the schedule's next wait, or failed. */

const SCHEDULE = [5_000, 300_000, 1_800_000];
const NOW = 1_700_000_000_000;
const HOUR = 3_600_000;
const answered = (status: number, retryAfterMs: number | null = null): AttemptResult => ({
  status,
  error: null,
  retryAfterMs,
});
const noAnswer: AttemptResult = { status: null, error: 'connection refused', retryAfterMs: null };
/** The middle of the jitter: the wait exactly as scheduled. */
const exact = () => 0.5;

describe('delivered: any 2xx, and only a 2xx', () => {
  it('takes 200 to 299 and nothing else', () => {
    for (const status of [200, 201, 204, 299]) assert.equal(delivered(answered(status)), true, String(status));
    for (const status of [199, 300, 301, 404, 410, 429, 500]) assert.equal(delivered(answered(status)), false);
    assert.equal(delivered(noAnswer), false);
  });
});

describe('afterAttempt: the schedule, its jitter, Retry-After, and the end', () => {
  it('writes a 2xx as delivered, with its status', () => {
    assert.deepEqual(afterAttempt(answered(204), 0, SCHEDULE, NOW), {
      state: 'delivered',
      nextAttemptAt: null,
      lastStatus: 204,
      lastError: null,
    });
  });

  it("waits the schedule's n-th wait after the n-th failed attempt", () => {
    SCHEDULE.forEach((wait, before) => {
      const record = afterAttempt(noAnswer, before, SCHEDULE, NOW, exact);
      assert.equal(record.state, 'pending');
      assert.equal(record.nextAttemptAt?.getTime(), NOW + wait);
      assert.equal(record.lastError, 'connection refused');
    });
  });

  it('spreads each wait by at most 20% either way', () => {
    const at = (random: number) => afterAttempt(answered(500), 1, SCHEDULE, NOW, () => random).nextAttemptAt!;
    assert.equal(at(0).getTime(), NOW + 300_000 * 0.8);
    assert.equal(at(0.999999).getTime() <= NOW + 300_000 * 1.2, true);
    assert.equal(at(0.999999).getTime() > NOW + 300_000 * 1.19, true);
  });

  it('fails once the schedule is spent', () => {
    const record = afterAttempt(answered(500), SCHEDULE.length, SCHEDULE, NOW, exact);
    assert.deepEqual(record, { state: 'failed', nextAttemptAt: null, lastStatus: 500, lastError: null });
  });

  it('fails at once on 410 Gone, whatever remains of the schedule', () => {
    assert.equal(afterAttempt(answered(410), 0, SCHEDULE, NOW, exact).state, 'failed');
  });

  it('honours a longer Retry-After on 429 and 503, up to a day', () => {
    for (const status of [429, 503]) {
      assert.equal(afterAttempt(answered(status, HOUR), 0, SCHEDULE, NOW, exact).nextAttemptAt?.getTime(), NOW + HOUR);
      const capped = afterAttempt(answered(status, 30 * 24 * HOUR), 0, SCHEDULE, NOW, exact);
      assert.equal(capped.nextAttemptAt?.getTime(), NOW + 24 * HOUR);
    }
  });

  it('keeps the schedule when Retry-After asks for less, or comes with another status', () => {
    assert.equal(afterAttempt(answered(429, 1_000), 0, SCHEDULE, NOW, exact).nextAttemptAt?.getTime(), NOW + 5_000);
    assert.equal(afterAttempt(answered(500, HOUR), 0, SCHEDULE, NOW, exact).nextAttemptAt?.getTime(), NOW + 5_000);
  });
});

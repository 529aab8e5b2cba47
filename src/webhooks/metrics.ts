import { Counter, Gauge } from 'prom-client';
import { registry } from '../telemetry/metrics.js';
import type { WebhookStorage } from '../storage/types/webhooks.js';
import type { AttemptCounts } from './attempt-counts.js';
import type { AttemptOutcome } from './delivery-types.js';

/** The webhook series of /metrics, beside the service's others in the one registry. */

/** The deliverer's counts of this process (attempt-counts.ts), and how much of them the counter already holds. */
let attemptsOf: AttemptCounts | null = null;
let counted = new Map<AttemptOutcome, number>();

export function reportAttemptsOf(counts: AttemptCounts | null) {
  attemptsOf = counts;
  counted = new Map();
}

/** Attempts by what came of them: `delivered`, `retrying` (a retry is scheduled) or `failed` (given up). */
new Counter({
  name: 'plant_store_webhook_deliveries_total',
  help: 'Webhook delivery attempts by outcome: delivered, retrying (another attempt is scheduled), failed (given up)',
  labelNames: ['outcome'] as const,
  registers: [registry],
  collect() {
    for (const [outcome, total] of attemptsOf?.read() ?? []) {
      const added = total - (counted.get(outcome) ?? 0);
      if (added > 0) this.inc({ outcome }, added);
      counted.set(outcome, total);
    }
  },
});

/** The store whose backlog the gauges report; set by the deliverer of this process. */
let backlogOf: WebhookStorage | null = null;

export function reportBacklogOf(storage: WebhookStorage | null) {
  backlogOf = storage;
}

let lastBacklog: Promise<{ pending: number; oldestCreatedAt: Date | null } | null> | null = null;

/**
 * One store query per scrape for both gauges (the registry collects them at once): the first
 * asks, the second reuses the answer. A store that does not answer leaves the gauges as they were.
 */
function backlog() {
  if (lastBacklog === null && backlogOf !== null) {
    lastBacklog = backlogOf
      .deliveryBacklog()
      .catch(() => null)
      .finally(() => setImmediate(() => (lastBacklog = null)));
  }
  return lastBacklog;
}

new Gauge({
  name: 'plant_store_webhook_pending_events',
  help: 'Webhook deliveries waiting to be delivered (due now or scheduled for a retry), in the whole store',
  registers: [registry],
  async collect() {
    const current = await backlog();
    if (current) this.set(current.pending);
  },
});

new Gauge({
  name: 'plant_store_webhook_oldest_pending_age_seconds',
  help: 'Age of the oldest pending webhook delivery (0 when none is pending)',
  registers: [registry],
  async collect() {
    const current = await backlog();
    if (current) this.set(current.oldestCreatedAt ? (Date.now() - current.oldestCreatedAt.getTime()) / 1000 : 0);
  },
});

import { NOT_ALLOWED } from './address-guard.js';
import type { AttemptResult } from './attempt.js';
import type { DeliveryLog } from './delivery-types.js';

/** Endpoint-and-reason pairs remembered; past this many the oldest is forgotten (and may be logged again). */
const REMEMBERED = 10_000;

/**
 * An endpoint whose address the guard refuses fails every attempt the same way: a stored URL whose
 * name now resolves inside, or one registered while --webhook-allow-private was on and the server
 * restarted without it. The operator hears of it once per endpoint and reason, not once per
 * attempt (eight attempts per event, for every event), which would flood the log.
 */
export class RefusalLog {
  private readonly logged = new Set<string>();

  constructor(private readonly log: DeliveryLog) {}

  note(account: string, endpointId: string, result: AttemptResult) {
    if (result.error === null || !result.error.startsWith(NOT_ALLOWED)) return;
    const reason = result.error.slice(NOT_ALLOWED.length);
    const key = JSON.stringify([account, endpointId, reason]);
    if (this.logged.has(key)) return;
    if (this.logged.size >= REMEMBERED) this.logged.delete(this.logged.values().next().value!);
    this.logged.add(key);
    this.log.warn(
      { account, endpointId, reason },
      'webhooks: deliveries to this endpoint fail because its address is not allowed ' +
        '(logged once per endpoint and reason; --webhook-allow-private allows private addresses, for development only)',
    );
  }
}

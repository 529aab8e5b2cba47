/**
 * The one error for every answer of the server that is not a success: its status, the `Error`
 * body's `error` (the status again, as the server wrote it) and `message`, and how long the
 * server asked to wait (`Retry-After`, in seconds) when it said so.
 *
 * Failures with no answer are the platform's own: a `TypeError` from fetch (the network),
 * a `TimeoutError` DOMException (`timeoutMs` ran out) or the caller's abort reason.
 */
export class PlantStoreError extends Error {
  override readonly name = 'PlantStoreError';

  constructor(
    readonly status: number,
    readonly error: number,
    message: string,
    readonly retryAfter: number | undefined,
    /** How many times the request was sent before this answer (retries included). */
    readonly attempts: number,
  ) {
    super(message);
  }
}

/** A webhook request that does not verify: missing or stale headers, or no matching signature. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

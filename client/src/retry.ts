/** When and how long to wait before sending a request again. */

export interface RetryPolicy {
  /** Retries after the first attempt (default 3). */
  retries: number;
  /** The first backoff ceiling; it doubles with each retry (default 100 ms). */
  baseDelayMs: number;
  /** The longest wait, backoff or Retry-After; a longer Retry-After ends the retries (default 20 s). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 3, baseDelayMs: 100, maxDelayMs: 20_000 };

export function retryPolicy(option: number | Partial<RetryPolicy> | undefined): RetryPolicy {
  if (typeof option === 'number') return { ...DEFAULT_RETRY, retries: option };
  return { ...DEFAULT_RETRY, ...option };
}

/**
 * Statuses worth another try: the server or a proxy asked to slow down or is briefly away.
 * Everything else (400, 404, 409, 412, 500...) would answer the same again.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status === 503;
}

/**
 * Whether a request may be sent twice without changing the outcome. POST /plants is: a create
 * is idempotent by id. A PATCH only with If-Match: a second attempt cannot overwrite a change
 * made in between. Other POSTs (a new webhook, a new secret, a recovery) are not.
 */
export function isSafeToRepeat(method: string, path: string, headers: Headers): boolean {
  switch (method) {
    case 'GET':
    case 'HEAD':
    case 'DELETE':
      return true;
    case 'PATCH':
      return headers.has('if-match');
    case 'POST':
      // Creates by id: the same plants again are replays, one by one or in a batch.
      return path === '/plants' || path === '/plants/batch';
    default:
      return false;
  }
}

/** Exponential backoff with full jitter: a random wait up to base * 2^retry, capped. */
export function backoffMs(policy: RetryPolicy, retry: number): number {
  return Math.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), or undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

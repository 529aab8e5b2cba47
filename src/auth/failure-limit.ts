import { performance } from 'node:perf_hooks';
import ipaddr from 'ipaddr.js';
import { HttpError } from '../errors.js';

const WINDOW_MS = 60_000;
/** Addresses counted at once; past it the oldest window is forgotten, so a flood from many addresses cannot grow memory. */
const MAX_ADDRESSES = 50_000;

/** Who is counted: an IPv4 address, or an IPv6 /64 (one host commonly holds a whole /64 and can pick any address in it). */
export function clientOf(ip: string): string {
  if (!ip.includes(':') || !ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  return `${address.toNormalizedString().split(':').slice(0, 4).join(':')}::/64`;
}

function tooManyFailures(retryAfterSeconds: number): HttpError {
  return new HttpError(
    429,
    `too many failed authentications from this address; retry after ${retryAfterSeconds} seconds`,
    { 'retry-after': String(retryAfterSeconds) },
  );
}

/**
 * Failed authentications (401s) per client address, in fixed one-minute windows opened by the
 * address's first failure. Up to `limit` failures a minute are answered 401; beyond, 429 until the
 * window ends. Each process counts on its own.
 */
export class FailureLimit {
  // Insertion order is opening order (an ended window is deleted before its client opens another),
  // so the ended and the oldest windows are always at the front.
  private readonly windows = new Map<string, { failures: number; endsAt: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs = WINDOW_MS,
  ) {}

  /** True when this address's next failure this minute would be beyond the limit. */
  isOver(ip: string): boolean {
    if (this.windows.size === 0) return false;
    const window = this.windows.get(clientOf(ip));
    return window !== undefined && window.endsAt > performance.now() && window.failures >= this.limit;
  }

  /** Counts one failure; returns the 429 to answer instead of the 401 when it is beyond the limit. */
  fail(ip: string): HttpError | undefined {
    const now = performance.now();
    for (const [client, window] of this.windows) {
      if (window.endsAt > now && this.windows.size < MAX_ADDRESSES) break;
      this.windows.delete(client);
    }
    const client = clientOf(ip);
    let window = this.windows.get(client);
    if (window === undefined) this.windows.set(client, (window = { failures: 0, endsAt: now + this.windowMs }));
    window.failures++;
    if (window.failures <= this.limit) return undefined;
    return tooManyFailures(Math.max(1, Math.ceil((window.endsAt - now) / 1000)));
  }
}

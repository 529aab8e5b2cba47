import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { answerWithin } from '../deadline.js';

/** One key's window as this request left it: its count, this request included, and the time left. */
export interface Counted {
  count: number;
  resetInMs: number;
}

/** Fixed windows of `windowMs` per key, opened by the key's first request in them. */
export interface RateWindows {
  count(key: string, done: (error: Error | null, counted?: Counted) => void): void;
}

/**
 * Windows kept in this process. Each call gets its own figures: a shared mutable record (as the
 * @fastify/rate-limit LocalStore hands out) lets every request counted in one turn of the event
 * loop read the last request's count, and PostgreSQL token lookups finish in batches, so a burst at
 * the start of a new window was refused whole. Time is the monotonic clock, which never jumps.
 */
export function localWindows(windowMs: number): RateWindows {
  // Insertion order is opening order (an ended window is deleted before its key opens another),
  // so the ended windows are always at the front.
  const windows = new Map<string, { count: number; openedAt: number }>();
  return {
    count(key, done) {
      const now = performance.now();
      for (const [oldKey, window] of windows) {
        if (window.openedAt + windowMs > now) break;
        windows.delete(oldKey);
      }
      let window = windows.get(key);
      if (window === undefined) windows.set(key, (window = { count: 0, openedAt: now }));
      window.count++;
      done(null, { count: window.count, resetInMs: window.openedAt + windowMs - now });
    },
  };
}

/** INCR, an expiry on the window's first request, and the time left, in one round trip. */
const COUNT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

/** Windows kept elsewhere, with a cheap call that says whether that store answers at all. */
export interface SharedWindows extends RateWindows {
  probe(): Promise<unknown>;
}

/** Windows shared by every instance through Redis, keyed `plant-store-rate:<key>`; Redis keeps the time. */
export function redisWindows(redis: Redis, windowMs: number): SharedWindows {
  redis.defineCommand('plantStoreRate', { numberOfKeys: 1, lua: COUNT_SCRIPT });
  const run = (redis as unknown as Record<string, (...args: unknown[]) => Promise<[number, number]>>).plantStoreRate!;
  return {
    count(key, done) {
      run.call(redis, `plant-store-rate:${key}`, windowMs).then(
        ([count, resetInMs]) => done(null, { count, resetInMs }),
        (error: Error) => done(error),
      );
    },
    probe: () => redis.ping(),
  };
}

/** How windows that fall back behave, and whom they tell. */
export interface Fallback {
  /** The longest a request waits on the shared windows; past it, the request is counted here. */
  boundMs: number;
  /** How often the shared windows are tried again while they are away. */
  probeEveryMs: number;
  /** A shared call (a count or a probe) failed or outlasted the bound. */
  failed(error: Error): void;
  /** The shared windows are away: on the first failure, and again at each failed probe. */
  away(reason: string): void;
  /** The shared windows answered a probe: counting is shared again. */
  back(): void;
}

export interface FallbackWindows extends RateWindows {
  /** The client lost its connection: count here from now on, before a request has to find out. */
  lost(reason: string): void;
  /** The client connected again: probe now rather than at the next turn. */
  probeNow(): void;
  close(): void;
}

/**
 * Shared windows that never hold a request longer than `boundMs` and never fail one: each request
 * is also counted in this process, and that count answers when the shared one fails or is late.
 * After a failure the shared windows are left alone (a frozen Redis would otherwise get one more
 * command per request, each waiting out the bound) and probed every `probeEveryMs` until one
 * answers; requests are counted per process meanwhile, so the limit keeps protecting the service.
 * So they are until the shared windows first answer: a request that comes before the client has
 * connected is not an outage, and nothing is probed until the client says it is connected or
 * lost (`probeNow`, `lost`), or its first connection's time is up: a probe timed from the start
 * could come before a slow first connection and warn of an outage that never was.
 */
export function fallbackWindows(shared: SharedWindows, local: RateWindows, fallback: Fallback): FallbackWindows {
  const { boundMs, probeEveryMs } = fallback;
  let away = true;
  let probing = false;
  let closed = false;
  let nextProbe: NodeJS.Timeout | undefined;

  const goAway = (reason: string) => {
    away = true;
    fallback.away(reason);
    if (nextProbe === undefined && !probing && !closed) nextProbe = setTimeout(probe, probeEveryMs).unref();
  };
  const probe = () => {
    clearTimeout(nextProbe);
    nextProbe = undefined;
    if (!away || probing || closed) return;
    probing = true;
    answerWithin(shared.probe(), boundMs, () => lateError(boundMs)).then(
      () => {
        probing = false;
        if (closed || !away) return;
        away = false;
        fallback.back();
      },
      (error: Error) => {
        probing = false;
        fallback.failed(error);
        goAway(error.message);
      },
    );
  };

  return {
    count(key, done) {
      local.count(key, (_error, here) => {
        if (away) return done(null, here);
        let settled = false;
        const settle = (error: Error | null, counted?: Counted) => {
          if (settled) return;
          settled = true;
          clearTimeout(late);
          if (error === null && counted !== undefined) return done(null, counted);
          const failure = error ?? new Error('no count from the shared windows');
          fallback.failed(failure);
          goAway(failure.message);
          done(null, here);
        };
        const late = setTimeout(() => settle(lateError(boundMs)), boundMs);
        shared.count(key, settle);
      });
    },
    lost(reason) {
      if (!closed) goAway(reason);
    },
    probeNow() {
      if (away) probe();
    },
    close() {
      closed = true;
      clearTimeout(nextProbe);
    },
  };
}

const lateError = (boundMs: number) => new Error(`no answer within ${boundMs} ms`);

import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';

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

/** Windows shared by every instance through Redis, keyed `plant-store-rate:<key>`; Redis keeps the time. */
export function redisWindows(redis: Redis, windowMs: number): RateWindows {
  redis.defineCommand('plantStoreRate', { numberOfKeys: 1, lua: COUNT_SCRIPT });
  const run = (redis as unknown as Record<string, (...args: unknown[]) => Promise<[number, number]>>).plantStoreRate!;
  return {
    count(key, done) {
      run.call(redis, `plant-store-rate:${key}`, windowMs).then(
        ([count, resetInMs]) => done(null, { count, resetInMs }),
        (error: Error) => done(error),
      );
    },
  };
}

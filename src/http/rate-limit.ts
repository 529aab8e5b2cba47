import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, preParsingHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { HttpError } from '../errors.js';
import { fallbackWindows, localWindows, redisWindows, type RateWindows } from './rate-windows.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Counted against the caller's account by `--rate-limit`. */
    accountRateLimited?: boolean;
  }
}

/** Routes opt in with this route config; the limit itself is the one of the settings. */
export const ACCOUNT_RATE_LIMITED = { accountRateLimited: true };

const WINDOW_MS = 1_000;

/** The longest a request waits on Redis (docs/operating.md, "When a dependency fails"). */
export const REDIS_BOUND_MS = 250;
/** How often a Redis that went away is tried again. */
const PROBE_EVERY_MS = 1_000;
/** The longest the first connection (and each one after) may take to be made. */
const CONNECT_TIMEOUT_MS = 2_000;
/** The longest a connection may stay silent while commands wait on it before it is dialled again. */
const SILENT_CONNECTION_MS = 1_000;
/** The fewest milliseconds between two warnings that Redis is away. */
const WARN_EVERY_MS = 60_000;

/**
 * The Redis client of the shared limit. Every command gives up after the bound, and none waits for
 * a connection: while disconnected, commands fail at once (no offline queue). A connection that
 * stops answering with commands outstanding (a paused server, a silent network) stays open and
 * "ready" as far as TCP knows, so `socketTimeout` drops it and ioredis dials again; commands that
 * timed out are not sent again on the new connection, where they would count twice. ioredis is
 * loaded only here, when the limit is shared: a start that does not need it does not pay for its
 * import (bench/analysis.md, "Figures behind the code").
 */
async function sharedRedis(url: string): Promise<Redis> {
  const { Redis } = await import('ioredis');
  return new Redis(url, {
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: REDIS_BOUND_MS,
    socketTimeout: SILENT_CONNECTION_MS,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 1,
    // Dialled again soon after the first failure, then every second: back within about a second.
    retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  });
}

/**
 * What the log says of Redis: one `warn` when it goes away, at most once every `everyMs` (an outage
 * that begins sooner is told when that time is up, if it still lasts, and those that ended before are
 * counted in that line), and one `info` when an outage that was told ends.
 */
export function redisOutageLog(
  log: Pick<FastifyBaseLogger, 'warn' | 'info'>,
  everyMs: number,
  now = () => performance.now(),
) {
  let awaySince: number | undefined;
  let lastWarning = Number.NEGATIVE_INFINITY;
  let told = false;
  let untold = 0;
  let everReachable = false;
  return {
    away(reason: string) {
      const at = now();
      awaySince ??= at;
      if (told || at - lastWarning < everyMs) return;
      const earlier = untold > 0 ? { shortOutagesSinceLastWarning: untold } : {};
      log.warn(
        { reason, ...earlier },
        'rate limit: Redis is unreachable; each instance counts its own requests until it is back',
      );
      lastWarning = at;
      told = true;
      untold = 0;
    },
    back() {
      if (awaySince !== undefined && told) {
        log.info(
          { awayMs: Math.round(now() - awaySince) },
          'rate limit: Redis is back; every instance shares the limit again',
        );
      } else if (awaySince !== undefined) untold++;
      awaySince = undefined;
      told = false;
    },
    /** The first connection: said once, unless an outage was told before it. */
    reachable() {
      if (!everReachable && awaySince === undefined && lastWarning === Number.NEGATIVE_INFINITY) {
        log.info('rate limit: Redis is reachable; every instance shares the limit');
      }
      everReachable = true;
    },
  };
}

/** Accounts and addresses are counted apart: an account may be named like an address. */
function keyOf(request: FastifyRequest): string {
  return request.caller ? `account:${request.caller.account}` : `address:${request.ip}`;
}

export interface RateLimitOptions extends Pick<Config, 'rateLimit' | 'redisUrl'> {
  /** Each Redis call that failed or outlasted its bound (the dependency-errors metric). */
  onRedisError?: () => void;
}

/**
 * Per-account limit of `--rate-limit` requests per second, one budget for all the routes that opt
 * in, shared through Redis when `--redis-url` is set. It runs at preParsing, after the bearer hook
 * has named the account, and adds the IETF RateLimit-* headers to every answer it counts.
 */
async function rateLimitRoutes(app: FastifyInstance, config: RateLimitOptions) {
  if (config.rateLimit === 0) return;
  const max = config.rateLimit;
  let windows: RateWindows = localWindows(WINDOW_MS);
  if (config.redisUrl !== undefined) {
    const redis = await sharedRedis(config.redisUrl);
    const outages = redisOutageLog(app.log, WARN_EVERY_MS);
    const shared = fallbackWindows(redisWindows(redis, WINDOW_MS), windows, {
      boundMs: REDIS_BOUND_MS,
      probeEveryMs: PROBE_EVERY_MS,
      failed: () => config.onRedisError?.(),
      away: outages.away,
      back: outages.back,
    });
    // ioredis reports each failed attempt to reconnect: the windows count them as one outage.
    redis.on('error', (error: Error) => shared.lost(error.message));
    redis.on('close', () => shared.lost('the connection to Redis closed'));
    redis.on('ready', () => {
      outages.reachable();
      shared.probeNow();
    });
    // A Redis that accepts the connection and then answers nothing (paused) is neither: its time is up.
    setTimeout(() => shared.probeNow(), CONNECT_TIMEOUT_MS).unref();
    app.addHook('onClose', (_app, done) => {
      shared.close();
      redis.disconnect();
      done();
    });
    windows = shared;
  }

  const limit: preParsingHookHandler = (request, reply, payload, done) => {
    windows.count(keyOf(request), (error, counted) => {
      // None of the windows fails today (Redis's fall back to this process's count); were one to,
      // the limit protects the service and must not take it down.
      if (error !== null || counted === undefined) return done(null, payload);
      const resetSeconds = Math.max(1, Math.ceil(counted.resetInMs / 1000));
      const headers = {
        'ratelimit-limit': String(max),
        'ratelimit-remaining': String(Math.max(0, max - counted.count)),
        'ratelimit-reset': String(resetSeconds),
      };
      if (counted.count <= max) {
        reply.headers(headers);
        return done(null, payload);
      }
      const wait = `${resetSeconds} second${resetSeconds === 1 ? '' : 's'}`;
      done(
        new HttpError(429, `too many requests for this account: the limit is ${max} per second; retry after ${wait}`, {
          ...headers,
          'retry-after': String(resetSeconds),
        }),
      );
    });
  };

  app.addHook('onRoute', (route) => {
    if (route.config?.accountRateLimited !== true) return;
    // A new array: Fastify copies a GET route's options for its HEAD route, and each counts once.
    const own = route.preParsing === undefined ? [] : [route.preParsing].flat();
    route.preParsing = [...own, limit];
  });
}

export const rateLimit = fp(rateLimitRoutes, { name: 'account-rate-limit', dependencies: ['bearer-auth'] });

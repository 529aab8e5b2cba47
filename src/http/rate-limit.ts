import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, preParsingHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { HttpError } from '../errors.js';
import { localWindows, redisWindows, type RateWindows } from './rate-windows.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Counted against the caller's account by `--rate-limit`. */
    accountRateLimited?: boolean;
  }
}

/** Routes opt in with this route config; the limit itself is the one of the settings. */
export const ACCOUNT_RATE_LIMITED = { accountRateLimited: true };

const WINDOW_MS = 1_000;

/**
 * The Redis client of the shared limit. It never makes a request wait: while it is disconnected,
 * commands fail at once (no offline queue) and the request is let through. Its state is logged as
 * one JSON line per change, not as ioredis's plain-text stack at every reconnection attempt.
 * ioredis is loaded only here, when the limit is shared: importing it is about 13 % of the CPU a
 * start spends loading modules.
 */
async function sharedRedis(url: string, log: FastifyBaseLogger): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { connectTimeout: 2_000, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  let reachable: boolean | undefined;
  redis.on('ready', () => {
    if (reachable !== true) log.info('rate limit: Redis is reachable; every instance shares the limit');
    reachable = true;
  });
  redis.on('error', (error: Error) => {
    if (reachable !== false) {
      log.warn(
        { reason: error.message },
        'rate limit: Redis is unreachable; requests are let through until it is back',
      );
    }
    reachable = false;
  });
  return redis;
}

/** Accounts and addresses are counted apart: an account may be named like an address. */
function keyOf(request: FastifyRequest): string {
  return request.caller ? `account:${request.caller.account}` : `address:${request.ip}`;
}

/**
 * Per-account limit of `--rate-limit` requests per second, one budget for all the routes that opt
 * in, shared through Redis when `--redis-url` is set. It runs at preParsing, after the bearer hook
 * has named the account, and adds the IETF RateLimit-* headers to every answer it counts.
 */
async function rateLimitRoutes(app: FastifyInstance, config: Pick<Config, 'rateLimit' | 'redisUrl'>) {
  if (config.rateLimit === 0) return;
  const max = config.rateLimit;
  let windows: RateWindows = localWindows(WINDOW_MS);
  if (config.redisUrl !== undefined) {
    const redis = await sharedRedis(config.redisUrl, app.log);
    app.addHook('onClose', (_app, done) => {
      redis.disconnect();
      done();
    });
    windows = redisWindows(redis, WINDOW_MS);
  }

  const limit: preParsingHookHandler = (request, reply, payload, done) => {
    windows.count(keyOf(request), (error, counted) => {
      // Redis unreachable: the limit protects the service; it must not take it down.
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

import rateLimitPlugin from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { HttpError } from '../errors.js';

/** Routes opt in with this route config; the limit itself is the one of the settings. */
export const ACCOUNT_RATE_LIMITED = { rateLimit: {} };

/**
 * Per-account limit of `--rate-limit` requests per second on the plants routes, shared through
 * Redis when `--redis-url` is set. It runs at preParsing, after the bearer hook has named the account.
 */
async function rateLimitRoutes(app: FastifyInstance, config: Pick<Config, 'rateLimit' | 'redisUrl'>) {
  if (config.rateLimit === 0) return;
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, { connectTimeout: 2_000, maxRetriesPerRequest: 1 })
    : undefined;
  if (redis) app.addHook('onClose', async () => void redis.quit());
  await app.register(rateLimitPlugin, {
    global: false,
    hook: 'preParsing',
    max: config.rateLimit,
    timeWindow: 1_000,
    enableDraftSpec: true,
    skipOnError: true,
    ...(redis ? { redis, nameSpace: 'plant-store-rate:' } : {}),
    keyGenerator: (request) => request.caller?.account ?? request.ip,
    errorResponseBuilder: (_request, context) =>
      new HttpError(
        429,
        `too many requests for this account: the limit is ${context.max} per second; retry after ${context.after}`,
      ),
  });
}

export const rateLimit = fp(rateLimitRoutes, { name: 'account-rate-limit', dependencies: ['bearer-auth'] });

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { apiTokenVerifier } from './auth/api-token-verifier.js';
import bearer from './auth/bearer.js';
import type { Config } from './config.js';
import { jwtIsOn } from './config/check.js';
import { openApi } from './contract/openapi.js';
import { inputValidatorCompiler } from './contract/validation.js';
import { errorHandler } from './errors.js';
import { CommitNotices } from './storage/commit-notices.js';
import { FeedHub } from './feed/hub.js';
import { changeFeed, hubSettings } from './feed/plugin.js';
import { FeedCursors } from './feed/cursor.js';
import { checkRequestHead, noteEarlyAnswer, parseJsonBody, refuseEncodedBody } from './http/intake.js';
import { cors } from './http/cors.js';
import { rateLimit } from './http/rate-limit.js';
import { securityHeaders } from './http/security-headers.js';
import { notFoundOrWrongMethod } from './http/routing.js';
import { requestDeadline } from './http/request-deadline.js';
import { gracefulStop } from './lifecycle/graceful-stop.js';
import { health } from './lifecycle/health.js';
import { dependencyErrors, measureUnreachable, storeReport } from './telemetry/metrics.js';
import { observability, type LogDestination } from './telemetry/observability.js';
import type { Tracing } from './telemetry/span-types.js';
import { plantRoutes } from './plants/routes.js';
import { PlantService } from './plants/service.js';
import { sharedSchemas } from './schemas.js';
import type { Storage } from './storage/types.js';
import { AddressGuard } from './webhooks/address-guard.js';
import { webhookDelivery } from './webhooks/delivery-plugin.js';
import { webhookRoutes } from './webhooks/routes.js';
import { webhookSchemas } from './webhooks/schemas.js';
import { WebhookService } from './webhooks/service.js';

export interface AppOptions {
  config: Config;
  storage: Storage;
  /** Where the request lines go: the destination of the instance's own logger (instance.ts). */
  destination: LogDestination;
  /** Present only when traces are on (telemetry/tracing.ts); absent, no tracing hook is added. */
  tracing?: Tracing;
}

/**
 * The whole service as one plugin, registered on an instance made with the server's options
 * (instance.ts). It is not encapsulated: its error handler, validator compiler, body parser and hooks
 * are the instance's own, so that 404s and 405s answer like every route.
 */
async function plantStorePlugin(app: FastifyInstance, { config, storage, tracing, destination }: AppOptions) {
  app.setErrorHandler(errorHandler);
  app.setValidatorCompiler(inputValidatorCompiler);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parseJsonBody);
  for (const schema of sharedSchemas) app.addSchema(schema);
  for (const schema of webhookSchemas) app.addSchema(schema);

  // Traces first: a request's span starts before any other hook runs.
  if (tracing) await app.register(tracing.requests);

  securityHeaders(app);
  await app.register(observability, { traceIdOf: tracing?.traceIdOf, destination });
  await app.register(gracefulStop);
  app.addHook('onRequest', checkRequestHead);
  // Before routing decides: a preflight is answered here, and 404s and 405s carry the CORS headers.
  let methodsOf: (path: string) => string | null = () => null;
  cors(app, config.corsOrigins, (path) => methodsOf(path));
  methodsOf = notFoundOrWrongMethod(app);
  app.addHook('preParsing', refuseEncodedBody);
  app.addHook('onResponse', noteEarlyAnswer);
  await app.register(openApi);
  storage.reportTo?.(storeReport(app.log));
  if (storage.unreachableSeconds) measureUnreachable(() => storage.unreachableSeconds!());
  await app.register(health, { storage });
  await app.register(bearer, {
    apiToken: apiTokenVerifier(storage),
    // jose is loaded only when JWTs are on (most stores use API tokens alone): importing it is a
    // visible part of what a start spends loading modules (bench/analysis.md, "what each optimisation is worth").
    jwt: jwtIsOn(config) ? (await import('./auth/jwt.js')).jwtVerifier(config) : undefined,
    failureLimit: config.authFailureLimit,
  });
  requestDeadline(app, storage.timeoutMs);
  await app.register(rateLimit, {
    rateLimit: config.rateLimit,
    redisUrl: config.redisUrl,
    onRedisError: () => dependencyErrors.inc({ dependency: 'redis' }),
  });
  // The change feed and the webhook deliverer: this process's commits reach its open streams, and
  // its deliverer, at once (CommitNotices).
  const commits = new CommitNotices();
  const cursors = new FeedCursors(() => storage.feedKey());
  const hub =
    config.eventRetention > 0 ? new FeedHub(storage, cursors, { ...hubSettings(config), log: app.log }) : null;
  if (hub !== null) commits.listen(hub.poke.bind(hub));
  const notifyingStore = commits.notifying(storage);
  await app.register(plantRoutes, {
    plants: new PlantService(notifyingStore, {
      groupCommit: config.groupCommit,
      pageCacheBytes: config.pageCacheBytes,
      tracing,
    }),
  });
  await app.register(changeFeed, { storage, cursors, hub, retentionMs: config.eventRetention });

  // Webhooks: the /webhooks API, and the deliverer that sends the outbox off the request path.
  const guard = new AddressGuard(config.webhookAllowPrivate);
  await app.register(webhookRoutes, { webhooks: new WebhookService(storage, guard) });
  await app.register(webhookDelivery, {
    storage,
    commits,
    guard,
    timeoutMs: config.webhookTimeout,
    retrySchedule: config.webhookRetrySchedule,
    concurrency: config.webhookConcurrency,
    endpointConcurrency: config.webhookEndpointConcurrency,
    retentionMs: config.webhookRetention,
  });
}

export const plantStore = fp(plantStorePlugin, { name: 'plant-store' });

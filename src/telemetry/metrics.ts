import cluster from 'node:cluster';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { FastifyBaseLogger } from 'fastify';
import type { StoreReport } from '../storage/types.js';
import { Histogram, LabelledCounter } from './histogram.js';

/** Every metric the service exposes on /metrics, defined once per process. */
export const registry = new Registry();
// With --workers, /metrics adds the workers' figures up (telemetry/cluster-metrics.ts); the process's own
// (memory, CPU, event-loop lag) are kept apart by a `worker` label.
collectDefaultMetrics({
  register: registry,
  ...(cluster.isWorker ? { labels: { worker: String(cluster.worker!.id) } } : {}),
});

/** Observe with `httpDuration.of(method, route, status).observe(seconds)`; its counts are also `..._requests_total`. */
export const httpDuration = new Histogram(
  'plant_store_http_request_duration_seconds',
  'Time to answer an HTTP request, by route and status',
  ['method', 'route', 'status'],
  [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
);
httpDuration.register(registry, {
  name: 'plant_store_http_requests_total',
  help: 'HTTP requests answered, by route and status',
});

export const plantsCreated = new Counter({
  name: 'plant_store_plants_created_total',
  help: 'Plants newly stored (idempotent replays not counted)',
  registers: [registry],
});

export const createsAcknowledged = new Counter({
  name: 'plant_store_creates_acknowledged_total',
  help: 'Create requests answered 200 after a durable commit (new plants and replays)',
  registers: [registry],
});

export const storageCommits = new Counter({
  name: 'plant_store_storage_commits_total',
  help: 'Write transactions committed (each one durable sync); divide by creates acknowledged for syncs per create',
  registers: [registry],
});

const storageDuration = new Histogram(
  'plant_store_storage_operation_duration_seconds',
  'Time spent in storage calls, by operation',
  ['operation'],
  [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
);
storageDuration.register(registry);

/** The storage operations that are timed, each one series of `storageDuration`. */
export const storageOperation = {
  insert: storageDuration.of('insert'),
  update: storageDuration.of('update'),
  delete: storageDuration.of('delete'),
  get: storageDuration.of('get'),
  list: storageDuration.of('list'),
} as const;

/** Bumped on every GET of a page (SQLite only: on PostgreSQL every page is read from the database). */
export const pageCacheLookups = new LabelledCounter(
  'plant_store_page_cache_lookups_total',
  'Pages of GET /plants asked of the page cache, by result (hit: answered from memory)',
  ['result'],
);
pageCacheLookups.register(registry);

export const authFailures = new Counter({
  name: 'plant_store_auth_failures_total',
  help: 'Requests refused by authentication or authorization, by reason (too_many_failures: 429 past --auth-failure-limit)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const tokenLookups = new Counter({
  name: 'plant_store_token_lookups_total',
  help: 'API token lookups that reached the store, by whether the token was found',
  labelNames: ['found'] as const,
  registers: [registry],
});

/**
 * Failures of what the service depends on (docs/operating.md, "When a dependency fails"): a query
 * or connection to PostgreSQL that failed or timed out, a Redis call that failed or took over its
 * bound, a write of the embedded store refused by its disk.
 */
export const dependencyErrors = new Counter({
  name: 'plant_store_dependency_errors_total',
  help: 'Failed or timed-out calls to a dependency, by dependency (postgres, redis, disk)',
  labelNames: ['dependency'] as const,
  registers: [registry],
});

let unreachableSeconds: () => number = () => 0;

/** Where /metrics reads how long the database has not answered (the store's own count; SQLite: never). */
export function measureUnreachable(read: () => number): void {
  unreachableSeconds = read;
}

/** Seconds since the database last answered, 0 while it answers; with --workers, the longest of them. */
new Gauge({
  name: 'plant_store_database_unreachable_seconds',
  help: 'Seconds since the database stopped answering (0 while it answers)',
  aggregator: 'max',
  registers: [registry],
  collect() {
    this.set(unreachableSeconds());
  },
});

/** What a store reports through (Storage.reportTo): the server's log, and the dependency counter of /metrics. */
export function storeReport(log: FastifyBaseLogger): StoreReport {
  return {
    log: (level, fields, message) => log[level](fields, message),
    dependencyFailed: (dependency) => dependencyErrors.inc({ dependency }),
  };
}

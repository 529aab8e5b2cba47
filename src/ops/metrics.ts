import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Every metric the service exposes on /metrics, defined once per process. */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

export const httpRequests = new Counter({
  name: 'plant_store_http_requests_total',
  help: 'HTTP requests answered, by route and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'plant_store_http_request_duration_seconds',
  help: 'Time to answer an HTTP request, by route and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
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

export const storageDuration = new Histogram({
  name: 'plant_store_storage_operation_duration_seconds',
  help: 'Time spent in storage calls, by operation',
  labelNames: ['operation'] as const,
  buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
  registers: [registry],
});

export const authFailures = new Counter({
  name: 'plant_store_auth_failures_total',
  help: 'Requests refused by authentication or authorization, by reason',
  labelNames: ['reason'] as const,
  registers: [registry],
});

/** Times a storage call into `storageDuration`. */
export async function timed<T>(operation: string, work: () => Promise<T>): Promise<T> {
  const end = storageDuration.startTimer({ operation });
  try {
    return await work();
  } finally {
    end();
  }
}

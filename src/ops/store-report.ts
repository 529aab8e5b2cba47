import type { FastifyBaseLogger } from 'fastify';
import type { StoreReport } from '../storage/types.js';
import { dependencyErrors } from './metrics.js';

/** What a store reports through (Storage.reportTo): the server's log, and the dependency counter of /metrics. */
export function storeReport(log: FastifyBaseLogger): StoreReport {
  return {
    log: (level, fields, message) => log[level](fields, message),
    dependencyFailed: (dependency) => dependencyErrors.inc({ dependency }),
  };
}

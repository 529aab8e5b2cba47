/** Contenders (rounds.ts) made from the servers of servers.ts: the pieces every scenario combines. */
import type { Workload } from '../load.js';
import { SERVER_CPU } from '../machine.js';
import { metric } from '../procs.js';
import type { Contender, Context } from '../rounds.js';
import { startServer, type ServerKind, type ServerOptions } from '../servers.js';
import type { BenchStore } from '../stores.js';

export const LABELS: Record<ServerKind, string> = {
  ceiling: 'ceiling (node:http, in memory)',
  service: 'Plant Store',
  fastify: 'Fastify + better-sqlite3',
  express: 'Express + better-sqlite3',
  'fastify-pg': 'Fastify + postgres.js',
};

export interface ContenderOptions extends Partial<
  Pick<
    Contender,
    | 'measure'
    | 'beforeStop'
    | 'afterStop'
    | 'cpu'
    | 'loadCpus'
    | 'reference'
    | 'background'
    | 'settle'
    | 'warmedUp'
    | 'connections'
  >
> {
  name?: string;
  label?: string;
  server?: Partial<ServerOptions>;
}

export function contender(
  ctx: Context,
  store: BenchStore,
  kind: ServerKind,
  workload: (round: number) => Workload,
  options: ContenderOptions = {},
): Contender {
  const name = options.name ?? kind;
  return {
    name,
    label: options.label ?? LABELS[kind],
    start: () => startServer(kind, store, { scratch: ctx.scratch, cpus: SERVER_CPU, name, ...options.server }),
    workload,
    ...(options.cpu === undefined ? {} : { cpu: options.cpu }),
    ...(options.loadCpus === undefined ? {} : { loadCpus: options.loadCpus }),
    ...(options.connections === undefined ? {} : { connections: options.connections }),
    ...(options.measure ? { measure: options.measure } : {}),
    ...(options.beforeStop ? { beforeStop: options.beforeStop } : {}),
    ...(options.afterStop ? { afterStop: options.afterStop } : {}),
    ...(options.reference ? { reference: options.reference } : {}),
    ...(options.background ? { background: options.background } : {}),
    ...(options.settle ? { settle: options.settle } : {}),
    ...(options.warmedUp ? { warmedUp: options.warmedUp } : {}),
  };
}

/** Figures of the service's /metrics, read before and after each run: their increase lands in the run's `extra`. */
export function metricsDelta(figures: Record<string, [name: string, labels?: string]>): Contender['measure'] {
  const entries = Object.entries(figures);
  const read = (proc: { url: string }) =>
    Promise.all(entries.map(([, [name, labels]]) => metric(proc.url, name, labels)));
  return {
    before: read,
    async after(proc, before) {
      const now = await read(proc);
      return Object.fromEntries(entries.map(([key], i) => [key, now[i]! - before[i]!]));
    },
  };
}

/**
 * Two instances through one PgBouncer (transaction pooling) against two instances straight to
 * PostgreSQL, GET and POST: what the pooler costs on the way. Two processes (`--workers 2`), each
 * with its own pool, share the port; PgBouncer holds fewer server connections than they have
 * client connections, as it does in production.
 */
import { PGBOUNCER } from '../../test/helpers/binaries.js';
import { startPgbouncer } from '../../test/helpers/pgbouncer.js';
import type { Workload } from '../load.js';
import { ALL_CPUS } from '../machine.js';
import { alternate, nextIdBase, type Context, type ScenarioResult } from '../rounds.js';
import { PG_POOL_MAX } from '../servers.js';
import { contender } from './contenders.js';

/** Server connections PgBouncer keeps per database: half of the two processes' client connections. */
const POOLER_CONNECTIONS = PG_POOL_MAX;

function throughPooler(direct: string, port: number): string {
  const url = new URL(direct);
  url.port = String(port);
  return url.toString();
}

async function pooled(ctx: Context, what: 'GET' | 'POST'): Promise<ScenarioResult> {
  const title = `${what} /plants on PostgreSQL, two instances: through PgBouncer and direct`;
  const store = ctx.postgres;
  if (store === null) {
    return { title, about: '', servers: [], skipped: `PostgreSQL could not be reached: ${ctx.postgresError}` };
  }
  const load = (): Workload =>
    what === 'GET'
      ? { kind: 'get', path: '/plants?limit=10', token: store.tokens.get }
      : { kind: 'post', token: store.tokens.post, idBase: nextIdBase() };
  if (PGBOUNCER.missing) return { title, about: '', servers: [], skipped: PGBOUNCER.missing };
  const direct = store.databaseFor('pgbouncer');
  const bouncer = await startPgbouncer(direct, { poolSize: POOLER_CONNECTIONS });
  ctx.log(`\n${title}:`);
  const twoInstances = { cpus: ALL_CPUS, workers: 2 };
  try {
    return {
      title,
      about:
        `Two server processes (\`--workers 2\`, ${PG_POOL_MAX} connections each), straight to PostgreSQL or through ` +
        `one PgBouncer in transaction-pooling mode holding ${POOLER_CONNECTIONS} server connections ` +
        '(`--database` the pooler, `--database-direct-url` PostgreSQL: no prepared statements on the pooled ' +
        'connections). Nothing pinned: servers, PgBouncer, PostgreSQL and the load generator share every core.',
      servers: await alternate(ctx, [
        contender(ctx, store, 'service', load, {
          name: 'pg-direct',
          label: 'Plant Store ×2, direct',
          server: twoInstances,
          loadCpus: ALL_CPUS,
          cpu: false,
        }),
        contender(ctx, store, 'service', load, {
          name: 'pg-pgbouncer',
          label: 'Plant Store ×2, through PgBouncer',
          server: {
            ...twoInstances,
            args: ['--database', throughPooler(direct, bouncer.port), '--database-direct-url', direct],
          },
          loadCpus: ALL_CPUS,
          cpu: false,
        }),
      ]),
    };
  } finally {
    bouncer.stop();
  }
}

export const pgbouncerGet = (ctx: Context) => pooled(ctx, 'GET');
export const pgbouncerPost = (ctx: Context) => pooled(ctx, 'POST');

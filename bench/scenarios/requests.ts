/**
 * GET /plants?limit=10 and durable POST /plants, on SQLite and on PostgreSQL: the service, the
 * ceiling and the plain peers under the same load, round after round.
 */
import type { Workload } from '../load.js';
import { alternate, nextIdBase, type Context, type ScenarioResult } from '../rounds.js';
import { PG_POOL_MAX } from '../servers.js';
import type { BenchStore } from '../stores.js';
import { contender, metricsDelta } from './contenders.js';

const GET_PATH = '/plants?limit=10';

const getLoad = (store: BenchStore) => (): Workload => ({ kind: 'get', path: GET_PATH, token: store.tokens.get });
const postLoad = (store: BenchStore) => (): Workload => ({
  kind: 'post',
  token: store.tokens.post,
  idBase: nextIdBase(),
});

/** Commits (one durable sync each) and acknowledged creates of the service during each run. */
const commits = metricsDelta({
  commits: ['plant_store_storage_commits_total'],
  acknowledged: ['plant_store_creates_acknowledged_total'],
});

export async function getSqlite(ctx: Context): Promise<ScenarioResult> {
  const store = ctx.sqlite;
  const load = getLoad(store);
  ctx.log(`\nGET ${GET_PATH} (SQLite, an account of ${ctx.sizes.getPlants} plants):`);
  return {
    title: `GET ${GET_PATH}`,
    about:
      `The same page of an account of ${ctx.sizes.getPlants.toLocaleString('en-US')} plants, over and over: after the ` +
      'first request the service answers it from its page cache (exact to the store). "Access log off" is the ' +
      'service at `LOG_LEVEL=warn`, without its one JSON line per request: the difference is what that line costs.',
    servers: await alternate(ctx, [
      contender(ctx, store, 'ceiling', load),
      contender(ctx, store, 'service', load),
      contender(ctx, store, 'service', load, {
        name: 'service-quiet',
        label: 'Plant Store, access log off',
        server: { env: { LOG_LEVEL: 'warn' } },
      }),
      contender(ctx, store, 'fastify', load),
      contender(ctx, store, 'express', load),
    ]),
  };
}

export async function postSqlite(ctx: Context): Promise<ScenarioResult> {
  const store = ctx.sqlite;
  const load = postLoad(store);
  ctx.log('\nPOST /plants (SQLite, durable, every id new):');
  return {
    title: 'POST /plants (durable)',
    about:
      'Creates with ids never used before, each answered 200 only once durable (`synchronous = FULL`: the WAL is ' +
      'fsynced). The peers commit each create on its own; the service shares one commit among the creates that ' +
      'arrive together (group commit), and "one commit per create" is the service with `GROUP_COMMIT=0`.',
    servers: await alternate(ctx, [
      contender(ctx, store, 'ceiling', load),
      contender(ctx, store, 'service', load, { measure: commits }),
      contender(ctx, store, 'service', load, {
        name: 'service-no-group-commit',
        label: 'Plant Store, one commit per create',
        server: { env: { GROUP_COMMIT: '0' } },
        measure: commits,
      }),
      contender(ctx, store, 'fastify', load),
      contender(ctx, store, 'express', load),
    ]),
  };
}

function postgresSkipped(ctx: Context, title: string): ScenarioResult {
  return { title, about: '', servers: [], skipped: `PostgreSQL could not be reached: ${ctx.postgresError}` };
}

const poolNote = `Pool: at most ${PG_POOL_MAX} connections per process for both the service (\`--pg-pool-max\`) and the peer (postgres.js \`max\`).`;

export async function getPostgres(ctx: Context): Promise<ScenarioResult> {
  const title = `GET ${GET_PATH} on PostgreSQL`;
  const store = ctx.postgres;
  if (store === null) return postgresSkipped(ctx, title);
  const load = getLoad(store);
  ctx.log(`\n${title}:`);
  return {
    title,
    about:
      'As on SQLite, on a scratch PostgreSQL database of the same server the tests use. The service answers the page ' +
      "from its page cache too, stamped with the account's number in the change feed, which it asks once per turn of " +
      'its event loop for all the requests of that turn (other instances commit without telling it); the token check ' +
      "is cached for 500 ms by the service, looked up on every request by the peer. PostgreSQL's own processes are " +
      'not pinned: they share both cores with the server and the load generator.',
    notes: [poolNote],
    servers: await alternate(ctx, [
      contender(ctx, store, 'ceiling', load),
      contender(ctx, store, 'service', load),
      contender(ctx, store, 'fastify-pg', load),
    ]),
  };
}

export async function postPostgres(ctx: Context): Promise<ScenarioResult> {
  const title = 'POST /plants (durable) on PostgreSQL';
  const store = ctx.postgres;
  if (store === null) return postgresSkipped(ctx, title);
  const load = postLoad(store);
  ctx.log(`\n${title}:`);
  return {
    title,
    about:
      'Every create committed before its 200 (PostgreSQL with `fsync` and `synchronous_commit` on). The service ' +
      'inserts the creates that arrive together in one transaction (group commit, one `INSERT ... SELECT FROM ' +
      'unnest`); the peer runs one `INSERT ... ON CONFLICT DO NOTHING` per create.',
    notes: [poolNote],
    servers: await alternate(ctx, [
      contender(ctx, store, 'ceiling', load),
      contender(ctx, store, 'service', load, { measure: commits }),
      contender(ctx, store, 'fastify-pg', load),
    ]),
  };
}

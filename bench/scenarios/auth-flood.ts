/**
 * A flood of bad credentials: valid clients' GET /plants?limit=10 alone and while one more
 * connection, from the same address (127.0.0.1), sends made-up API tokens (a new one each
 * request, so no cache helps), on services with `--auth-failure-limit` at its default and off.
 */
import type { Workload } from '../load.js';
import { alternate, type Context, type ScenarioResult } from '../rounds.js';
import { contender, metricsDelta } from './contenders.js';

const PATH = '/plants?limit=10';
/** The connections that flood (beside the valid clients' `connections`). */
export const FLOOD_CONNECTIONS = 1;

/** Store lookups of unknown tokens, and 429s for too many failures, during each run. */
const guard = metricsDelta({
  unknownLookups: ['plant_store_token_lookups_total', 'found="false"'],
  refused429: ['plant_store_auth_failures_total', 'reason="too_many_failures"'],
});

export async function authFlood(ctx: Context): Promise<ScenarioResult> {
  const store = ctx.sqlite;
  const load = (): Workload => ({ kind: 'get', path: PATH, token: store.tokens.get });
  const flood = { workload: { kind: 'bad-tokens', path: PATH } as const, connections: FLOOD_CONNECTIONS };
  ctx.log(`\nGET ${PATH} under a flood of bad tokens (SQLite):`);
  const services = [
    { limit: 'default', args: [] },
    { limit: '0', args: ['--auth-failure-limit', '0'] },
  ].flatMap(({ limit, args }) => {
    const label = limit === 'default' ? 'limit at its default' : 'limit off (0)';
    return [
      contender(ctx, store, 'service', load, {
        name: `limit-${limit}-alone`,
        label: `Plant Store, ${label}, alone`,
        server: { args },
        measure: guard,
      }),
      contender(ctx, store, 'service', load, {
        name: `limit-${limit}-flooded`,
        label: `Plant Store, ${label}, flooded`,
        reference: `limit-${limit}-alone`,
        server: { args },
        measure: guard,
        background: flood,
      }),
    ];
  });
  return {
    title: `GET ${PATH} under a flood of bad tokens`,
    about:
      `Valid clients (${ctx.settings.connections} connections, one valid token) read a page of ` +
      `${ctx.sizes.getPlants.toLocaleString('en-US')} plants while ${FLOOD_CONNECTIONS} more connection, from the ` +
      'same address, sends made-up API tokens, a new one each request, as fast as it is answered (a second load ' +
      'generator on the load CPU). Each setting has two services, one never flooded ("alone") and one flooded in ' +
      'every run, taking turns; the ratios of a flooded service divide by the lone one of its setting in the ' +
      'same round (the ceiling takes no part). `--auth-failure-limit` at its default answers the flood 429 after ' +
      'its first failures of each minute; at 0 every made-up token is looked up.',
    servers: await alternate(ctx, services),
  };
}

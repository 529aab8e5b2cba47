/** `--workers 1` against `--workers 2` on GET, nothing pinned: what a second process buys on this machine. */
import { ALL_CPUS } from '../machine.js';
import { alternate, type Context, type ScenarioResult } from '../rounds.js';
import { contender } from './contenders.js';

export async function workers(ctx: Context): Promise<ScenarioResult> {
  const store = ctx.sqlite;
  const load = () => ({ kind: 'get' as const, path: '/plants?limit=10', token: store.tokens.get });
  const unpinned = { cpus: ALL_CPUS };
  ctx.log('\nGET /plants?limit=10, --workers 1 vs --workers 2 (servers and load generator share every CPU):');
  return {
    title: 'GET /plants?limit=10 with --workers 1 and 2',
    about:
      'Nothing pinned: the servers and the load generator share every core, so on a 2-core machine the second ' +
      'worker competes with the load generator.',
    servers: await alternate(ctx, [
      contender(ctx, store, 'service', load, {
        name: 'workers-1',
        label: '`--workers 1`',
        server: unpinned,
        loadCpus: ALL_CPUS,
      }),
      contender(ctx, store, 'service', load, {
        name: 'workers-2',
        label: '`--workers 2`',
        server: { ...unpinned, workers: 2 },
        loadCpus: ALL_CPUS,
        cpu: false,
      }),
    ]),
  };
}

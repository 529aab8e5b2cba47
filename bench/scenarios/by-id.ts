/**
 * One plant by id on SQLite: GET, PATCH (a new name each time, durable) and DELETE (each id once,
 * durable) /plants/{id}, the service beside the ceiling, one pair per method, each in its own
 * rounds. The ids come from one account of `byIdPlants` seeded plants (bench/stores.ts): GET and
 * PATCH cycle over the first BY_ID_POOL, each DELETE run takes its own range after them.
 */
import type { Workload } from '../load.js';
import { alternate, nextIdBase, type Context, type ScenarioResult, type Settings } from '../rounds.js';
import { contender, metricsDelta } from './contenders.js';

/** The ids GET and PATCH cycle over. */
export const BY_ID_POOL = 10_000;
/**
 * More deletes per second than the service makes on a machine like this one (about half of
 * that): each DELETE run gets this many ids per second it lasts, so it never runs out.
 */
const DELETES_PER_SECOND = 15_000;

/** The ids one DELETE run (warm-up or round) may take. */
function deleteRange(settings: Settings): number {
  return Math.ceil(Math.max(settings.runSec, settings.warmupSec) * DELETES_PER_SECOND);
}

/** The plants to seed in the by-id account for these settings: the pool, then a DELETE range per run. */
export function byIdPlants(settings: Settings): number {
  return BY_ID_POOL + (settings.rounds + 1) * deleteRange(settings);
}

const METHODS = ['GET', 'PATCH', 'DELETE'] as const;

/** Durable commits of the service during each run (updates and deletes share them, as creates do). */
const commits = metricsDelta({ commits: ['plant_store_storage_commits_total'] });

export async function byId(ctx: Context): Promise<ScenarioResult> {
  const store = ctx.sqlite;
  const perRun = deleteRange(ctx.settings);
  const workload =
    (method: (typeof METHODS)[number]) =>
    (round: number): Workload => ({
      kind: 'by-id',
      method,
      token: store.tokens.byId,
      // The warm-up is round -1: DELETE ranges follow the pool, one per run.
      firstId: method === 'DELETE' ? BY_ID_POOL + 1 + (round + 1) * perRun : 1,
      count: method === 'DELETE' ? perRun : BY_ID_POOL,
      stamp: nextIdBase(),
    });
  ctx.log(`\nGET, PATCH and DELETE /plants/{id} (SQLite, durable):`);
  const servers = [];
  for (const method of METHODS) {
    const load = workload(method);
    const ceiling = `ceiling-${method.toLowerCase()}`;
    servers.push(
      ...(await alternate(ctx, [
        contender(ctx, store, 'ceiling', load, { name: ceiling, label: `${method}: ceiling (node:http, in memory)` }),
        contender(ctx, store, 'service', load, {
          name: `service-${method.toLowerCase()}`,
          label: `${method}: Plant Store`,
          reference: ceiling,
          ...(method === 'GET' ? {} : { measure: commits }),
        }),
      ])),
    );
  }
  return {
    title: 'GET, PATCH and DELETE /plants/{id}',
    about:
      `One plant by id in an account of ${(ctx.sizes.byIdPlants ?? 0).toLocaleString('en-US')} plants. GET and PATCH ` +
      `cycle over the first ${BY_ID_POOL.toLocaleString('en-US')} ids, each PATCH a merge patch with a name never ` +
      `used before (a real change, durable before its 200, through the same group commit as creates); each DELETE ` +
      `run deletes ids of its own range once each (${perRun.toLocaleString('en-US')} ids per run, durable before ` +
      'the 204). Each method has its pair of servers and its own rounds; every ratio divides by the ceiling of the ' +
      'same method and round, which finds the plant in memory and answers as the service would, storing nothing.',
    servers,
  };
}

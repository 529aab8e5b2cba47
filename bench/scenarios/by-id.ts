/**
 * One plant by id on SQLite: GET, PATCH (a new name each time, durable) and DELETE (each id once,
 * durable) /plants/{id}, the service beside the ceiling (and, for PATCH and DELETE, the plain
 * Fastify peer), each method in its own rounds. The ids come from one account of `byIdPlants`
 * seeded plants (bench/stores.ts): GET and PATCH cycle over the first BY_ID_POOL, every DELETE run
 * takes the range after them.
 */
import type { Workload } from '../load.js';
import { alternate, nextIdBase, type Context, type ScenarioResult, type Settings } from '../rounds.js';
import { restorePlainPlants } from '../peers/sqlite.js';
import { restorePlants } from '../stores.js';
import { LABELS, contender, metricsDelta } from './contenders.js';

/** The ids GET and PATCH cycle over. */
export const BY_ID_POOL = 10_000;
/**
 * The DELETE range is sized for this many deletes per second: three times the service's DELETE
 * on the shared 2-core machine of these notes (33,000/s), about the ceiling's in a quiet moment
 * (98,000/s), so that a service run lasts its whole duration. Nothing depends on it being enough:
 * a run whose ids are used up stops there and its rate is taken over the time it ran
 * (bench/load.ts), so the ceiling's runs, or all of them on a faster machine, may end a little
 * early, never with 404s. A bigger bound would only grow the seed, which every server copies.
 */
const DELETES_PER_SECOND = 100_000;

/** The ids one DELETE run (a round, or a piece of the warm-up: rounds.ts) may take. */
function deleteRange(settings: Settings): number {
  return Math.ceil(settings.runSec * DELETES_PER_SECOND);
}

/**
 * The plants to seed in the by-id account for these settings: the pool, then one DELETE range.
 * Every run deletes from the same range, which the service's store gets back after each run
 * (the ceiling deletes nothing): a range per run would multiply the seed, which every server of
 * every scenario copies, by the number of runs.
 */
export function byIdPlants(settings: Settings): number {
  return BY_ID_POOL + deleteRange(settings);
}

const METHODS = ['GET', 'PATCH', 'DELETE'] as const;

/** Durable commits of the service during each run (updates and deletes share them, as creates do). */
const commits = metricsDelta({ commits: ['plant_store_storage_commits_total'] });

export async function byId(ctx: Context): Promise<ScenarioResult> {
  const store = ctx.sqlite;
  const range = deleteRange(ctx.settings);
  const firstDeleted = BY_ID_POOL + 1;
  const workload = (method: (typeof METHODS)[number]) => (): Workload => ({
    kind: 'by-id',
    method,
    token: store.tokens.byId,
    firstId: method === 'DELETE' ? firstDeleted : 1,
    count: method === 'DELETE' ? range : BY_ID_POOL,
    stamp: nextIdBase(),
  });
  /** A server that deleted gets the range back before its next run. */
  const restoredAfterDelete = (method: (typeof METHODS)[number], kind: 'service' | 'fastify', name: string) => {
    if (method !== 'DELETE') return {};
    const url = store.databaseFor(name);
    return kind === 'service'
      ? { settle: () => restorePlants(url, 'bench-by-id', firstDeleted, range) }
      : { settle: async () => restorePlainPlants(url, 'bench-by-id', firstDeleted, range) };
  };
  ctx.log(`\nGET, PATCH and DELETE /plants/{id} (SQLite, durable):`);
  const servers = [];
  for (const method of METHODS) {
    const load = workload(method);
    const ceiling = `ceiling-${method.toLowerCase()}`;
    const service = `service-${method.toLowerCase()}`;
    servers.push(
      ...(await alternate(ctx, [
        contender(ctx, store, 'ceiling', load, { name: ceiling, label: `${method}: ceiling (node:http, in memory)` }),
        contender(ctx, store, 'service', load, {
          name: service,
          label: `${method}: Plant Store`,
          reference: ceiling,
          ...(method === 'GET' ? {} : { measure: commits }),
          ...restoredAfterDelete(method, 'service', service),
        }),
        ...(method === 'GET'
          ? []
          : [
              contender(ctx, store, 'fastify', load, {
                name: `fastify-${method.toLowerCase()}`,
                label: `${method}: ${LABELS.fastify}`,
                reference: ceiling,
                ...restoredAfterDelete(method, 'fastify', `fastify-${method.toLowerCase()}`),
              }),
            ]),
      ])),
    );
  }
  return {
    title: 'GET, PATCH and DELETE /plants/{id}',
    about:
      `One plant by id in an account of ${(ctx.sizes.byIdPlants ?? 0).toLocaleString('en-US')} plants. GET and PATCH ` +
      `cycle over the first ${BY_ID_POOL.toLocaleString('en-US')} ids, each PATCH a merge patch with a name never ` +
      `used before (a real change, durable before its 200, through the same group commit as creates); each DELETE ` +
      `run deletes ids of the next ${range.toLocaleString('en-US')} once each (durable before the 204), and stops ` +
      'if it uses them all up (its rate is then over the time it ran); the service gets them back between runs. ' +
      'Each method has its servers and its own rounds; every ratio divides by the ceiling of the ' +
      'same method and round, which finds the plant in memory and answers as the service would, storing nothing. ' +
      'PATCH and DELETE also run on the plain Fastify peer: a plain UPDATE and DELETE, each its own durable commit.',
    servers,
  };
}

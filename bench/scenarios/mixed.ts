/**
 * Many accounts at once: 1,000 accounts of 100 plants, 64 connections each picking a random
 * account per request; 90 % GET (a random page size, some following the next link of an earlier
 * page), 10 % POST. The page cache meets many small working sets and creates that keep coming.
 */
import type { Workload } from '../load.js';
import { alternate, nextIdBase, type Context, type ScenarioResult } from '../rounds.js';
import { contender, metricsDelta } from './contenders.js';

export const MIXED = { postShare: 0.1, followShare: 0.3, limits: [10, 20, 50] };

export async function mixed(ctx: Context): Promise<ScenarioResult> {
  const store = ctx.sqlite;
  const { mixedAccounts, mixedPlants } = ctx.sizes;
  const load = (): Workload => ({ kind: 'mixed', tokensFile: store.mixedTokensFile, idBase: nextIdBase(), ...MIXED });
  ctx.log(`\nMany accounts, mixed (${mixedAccounts} accounts x ${mixedPlants} plants, SQLite):`);
  return {
    title: `Many accounts, mixed: ${mixedAccounts.toLocaleString('en-US')} accounts x ${mixedPlants} plants`,
    about:
      `Each request takes one of ${mixedAccounts.toLocaleString('en-US')} tokens at random. ${100 - MIXED.postShare * 100} % ` +
      `are GETs: /plants?limit=L with L drawn from ${MIXED.limits.join(', ')}, or, ${MIXED.followShare * 100} % of the ` +
      'time when one is waiting, the rel="next" link of an earlier page with that page\'s token. ' +
      `${MIXED.postShare * 100} % are durable creates with new ids in a random account. Hit rate = page-cache hits / ` +
      'lookups during the measured runs (`plant_store_page_cache_lookups_total` in `/metrics`).',
    servers: await alternate(ctx, [
      contender(ctx, store, 'ceiling', load),
      contender(ctx, store, 'service', load, {
        measure: metricsDelta({
          hits: ['plant_store_page_cache_lookups_total', 'result="hit"'],
          misses: ['plant_store_page_cache_lookups_total', 'result="miss"'],
        }),
      }),
      contender(ctx, store, 'fastify', load),
      contender(ctx, store, 'express', load),
    ]),
  };
}

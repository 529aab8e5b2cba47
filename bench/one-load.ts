/**
 * The single loads that the bench's closer looks (bench:profile, bench:ab) put on one server: each
 * load's store (a SQLite store seeded with what it reads) and its workload, written once.
 */
import type { Workload } from './load.js';
import { BY_ID_POOL } from './scenarios/by-id.js';
import { MIXED } from './scenarios/mixed.js';
import type { BenchStore, Sizes } from './stores.js';

export const ONE_LOADS = ['get', 'post', 'mixed', 'by-id'] as const;
export type OneLoad = (typeof ONE_LOADS)[number];

export const isOneLoad = (name: string | undefined): name is OneLoad => ONE_LOADS.some((load) => load === name);

/** What the store holds for `load`: an account of 1,000 plants, and what the load reads besides. */
export function oneLoadSizes(load: OneLoad): Sizes {
  return {
    getPlants: 1_000,
    listPlants: 0,
    mixedAccounts: load === 'mixed' ? 1_000 : 0,
    byIdPlants: load === 'by-id' ? BY_ID_POOL : 0,
  };
}

/** `load`'s workload on `store`; creates take new ids from `idBase`. */
export function oneLoadWorkload(load: OneLoad, store: BenchStore, idBase: number): Workload {
  switch (load) {
    case 'get':
      return { kind: 'get', path: '/plants?limit=10', token: store.tokens.get };
    case 'post':
      return { kind: 'post', token: store.tokens.post, idBase };
    case 'mixed':
      return { kind: 'mixed', tokensFile: store.mixedTokensFile, idBase, ...MIXED };
    case 'by-id':
      return { kind: 'by-id', method: 'GET', token: store.tokens.byId, firstId: 1, count: BY_ID_POOL, stamp: 0 };
  }
}

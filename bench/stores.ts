/**
 * The stores the servers read and write, seeded through the service's own storage layer: one
 * SQLite file (each server gets a copy of its own) and one scratch PostgreSQL database (created
 * here, dropped at the end), with the same accounts, plants and API tokens.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { issueToken } from '../src/auth/api-tokens.js';
import { openStorage } from '../src/storage/open.js';
import type { Storage } from '../src/storage/types.js';
import type { PlantRecord } from '../src/storage/types/plants.js';
import { FIND_ACCOUNT, findPlant, mixedAccount, seedPlant } from './seed-data.js';

export interface Sizes {
  /** Plants of the account GET reads (`bench-get`). */
  getPlants: number;
  /** Plants of the account listed without limit (`bench-list`); 0 for none. */
  listPlants: number;
  /** Accounts of the mixed scenario, each with `mixedPlants` plants; 0 for none. */
  mixedAccounts: number;
  mixedPlants?: number;
  /** Plants of the account read, updated and deleted by id (`bench-by-id`); 0 for none. */
  byIdPlants?: number;
  /** Plants of the account listed with filters (FIND_ACCOUNT, findPlant); 0 for none. */
  findPlants?: number;
}

export interface BenchStore {
  engine: 'sqlite' | 'postgres';
  /**
   * `followed`: the account of the change feed's 1,000 open streams (scenarios/feed.ts), posted to by
   * nothing else, so that those streams never take events of another server's run.
   */
  tokens: { get: string; post: string; list: string; byId: string; find: string; followed: string };
  /** One token per mixed account, in account order (mixedAccount(i)). */
  mixedTokens: string[];
  /** The same tokens, one a line, for the load script. */
  mixedTokensFile: string;
  /** What the ceiling holds (bench/ceiling.ts reads this JSON file). */
  ceilingFile: string;
  /**
   * A database URL for the server `name`: its own copy of the file, made on the first call (SQLite),
   * or the one database (PostgreSQL).
   */
  databaseFor(name: string): string;
  drop(): Promise<void>;
}

/** Creates straight through storage, in one transaction. */
function createAll(storage: Storage, writes: { account: string; plant: PlantRecord }[]) {
  return storage.applyChanges(
    writes.map(({ account, plant }) => ({
      kind: 'create' as const,
      account,
      plant: { ...plant, revision: 1n },
      eventId: `msg_seed_${account}_${plant.id}`,
    })),
  );
}

/** The plants `first` .. `first + count - 1` of the account (seedPlant); those it already holds stay as they are. */
async function seedAccount(storage: Storage, account: string, count: number, first = 1, plant = seedPlant) {
  const batch = 5_000;
  const end = first + count;
  for (let start = first; start < end; start += batch) {
    const writes = [];
    for (let i = start; i < Math.min(start + batch, end); i++) writes.push({ account, plant: plant(i, account) });
    await createAll(storage, writes);
  }
}

/**
 * Puts back the seeded plants `first` .. `first + count - 1` of `account` in a server's store while
 * it runs (a second connection to its SQLite file): what a run of deletes took is there again.
 */
export async function restorePlants(databaseUrl: string, account: string, first: number, count: number) {
  const storage = await openStorage(databaseUrl);
  try {
    await seedAccount(storage, account, count, first);
  } finally {
    await storage.close();
  }
}

async function seed(storage: Storage, scratch: string, prefix: string, sizes: Sizes) {
  const tokens = {
    get: (await issueToken(storage, 'bench-get')).secret,
    post: (await issueToken(storage, 'bench-post')).secret,
    list: (await issueToken(storage, 'bench-list')).secret,
    byId: (await issueToken(storage, 'bench-by-id')).secret,
    find: (await issueToken(storage, FIND_ACCOUNT)).secret,
    followed: (await issueToken(storage, 'bench-followed')).secret,
  };
  await seedAccount(storage, FIND_ACCOUNT, sizes.findPlants ?? 0, 1, findPlant);
  await seedAccount(storage, 'bench-get', sizes.getPlants);
  await seedAccount(storage, 'bench-list', sizes.listPlants);
  await seedAccount(storage, 'bench-by-id', sizes.byIdPlants ?? 0);
  const mixedTokens: string[] = [];
  const mixedPlants = sizes.mixedPlants ?? 100;
  const perBatch = Math.max(1, Math.floor(5_000 / mixedPlants));
  for (let first = 0; first < sizes.mixedAccounts; first += perBatch) {
    const writes = [];
    for (let a = first; a < Math.min(first + perBatch, sizes.mixedAccounts); a++) {
      const account = mixedAccount(a);
      mixedTokens.push((await issueToken(storage, account)).secret);
      for (let i = 1; i <= mixedPlants; i++) writes.push({ account, plant: seedPlant(i, account) });
    }
    await createAll(storage, writes);
  }
  const mixedTokensFile = join(scratch, `${prefix}-mixed-tokens.txt`);
  writeFileSync(mixedTokensFile, mixedTokens.join('\n') + '\n');
  const ceilingFile = join(scratch, `${prefix}-ceiling.json`);
  const ceilingTokens: Record<string, string> = {
    [tokens.get]: 'bench-get',
    [tokens.post]: 'bench-post',
    [tokens.list]: 'bench-list',
    [tokens.byId]: 'bench-by-id',
  };
  const ceilingPlants: Record<string, number> = {
    'bench-get': sizes.getPlants,
    'bench-list': sizes.listPlants,
    'bench-by-id': sizes.byIdPlants ?? 0,
  };
  mixedTokens.forEach((token, a) => {
    ceilingTokens[token] = mixedAccount(a);
    ceilingPlants[mixedAccount(a)] = mixedPlants;
  });
  writeFileSync(ceilingFile, JSON.stringify({ tokens: ceilingTokens, plants: ceilingPlants }));
  return { tokens, mixedTokens, mixedTokensFile, ceilingFile };
}

export async function prepareSqlite(scratch: string, sizes: Sizes): Promise<BenchStore> {
  const seedFile = join(scratch, 'seed.db');
  const storage = await openStorage(`sqlite:${seedFile}`);
  const seeded = await seed(storage, scratch, 'sqlite', sizes);
  // Closing the last connection checkpoints the WAL into the file, so a copy of the file is whole.
  await storage.close();
  return {
    engine: 'sqlite',
    ...seeded,
    databaseFor(name) {
      const file = join(scratch, `${name.replace(/\W+/g, '-')}.db`);
      if (!existsSync(file)) copyFileSync(seedFile, file);
      return `sqlite:${file}`;
    },
    async drop() {},
  };
}

/** A scratch database next to `adminUrl`'s (which must allow CREATE DATABASE), seeded like the SQLite file. */
export async function preparePostgres(scratch: string, adminUrl: string, sizes: Sizes): Promise<BenchStore> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  const name = `plant_store_bench_${randomBytes(5).toString('hex')}`;
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } catch (error) {
    await admin.end();
    throw error;
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const drop = async () => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  };
  try {
    const storage = await openStorage(url.toString(), { pgPoolMax: 2 });
    const seeded = await seed(storage, scratch, 'postgres', sizes);
    await storage.close();
    return { engine: 'postgres', ...seeded, databaseFor: () => url.toString(), drop };
  } catch (error) {
    await drop();
    throw error;
  }
}

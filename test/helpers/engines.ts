import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { PGBOUNCER } from './binaries.js';
import { pgbouncerPort } from './pgbouncer.js';

/**
 * The storage engines every storage-touching test runs on. Each `fresh()` gives a brand-new,
 * empty store and a function that removes it.
 */
export interface Engine {
  name: 'sqlite' | 'postgres' | 'pgbouncer';
  /** For the `skip` of a suite on this engine: why it cannot run here (a program missing), or false. */
  skip: string | false;
  fresh(): Promise<{ url: string; drop: () => Promise<void> }>;
}

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export const sqlite: Engine = {
  name: 'sqlite',
  skip: false,
  async fresh() {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-test-'));
    return { url: `sqlite:${join(dir, 'store.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  },
};

export const pg: Engine = {
  name: 'postgres',
  skip: false,
  async fresh() {
    const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 });
    const name = `plant_store_test_${randomBytes(6).toString('hex')}`;
    try {
      await admin.unsafe(`CREATE DATABASE ${name}`);
    } catch (error) {
      await admin.end();
      throw new Error(
        `PostgreSQL tests need a server: could not create a database through ${TEST_DATABASE_URL} ` +
          `(${(error as Error).message}). Point TEST_DATABASE_URL at a PostgreSQL where this user may CREATE DATABASE.`,
      );
    }
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      drop: async () => {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      },
    };
  },
};

/**
 * PostgreSQL through a transaction-pooling PgBouncer (helpers/pgbouncer.ts): a fresh database made
 * directly, reached through the pooler with `?prepare=false`, as docs/pgbouncer.md tells operators.
 * `directUrl` is the same database without the pooler, for `--database-direct-url`.
 */
export const pgbouncer: Engine & { direct(url: string): string } = {
  name: 'pgbouncer',
  skip: PGBOUNCER.skip,
  async fresh() {
    const port = await pgbouncerPort(TEST_DATABASE_URL);
    const store = await pg.fresh();
    const url = new URL(store.url);
    url.port = String(port);
    url.searchParams.set('prepare', 'false');
    return { url: url.toString(), drop: store.drop };
  },
  direct(url) {
    const direct = new URL(url);
    direct.port = new URL(TEST_DATABASE_URL).port || '5432';
    direct.search = '';
    return direct.toString();
  },
};

const wanted = (engine: Engine) =>
  !process.env.TEST_ENGINES || process.env.TEST_ENGINES.split(',').includes(engine.name);

/** Both engines; `TEST_ENGINES=sqlite` narrows a local run (CI sets nothing and runs both). */
export const ENGINES: Engine[] = [sqlite, pg].filter(wanted);

/**
 * Both engines and PostgreSQL through PgBouncer, for the tests of what a pooler could break (the
 * storage contract, creating, listing and reading plants, tokens, webhooks, two instances).
 * `TEST_ENGINES=pgbouncer` runs that variant alone.
 */
export const ENGINES_AND_POOLER: Engine[] = [sqlite, pg, pgbouncer].filter(wanted);

/** Runs `work` on a brand-new store of `engine` and removes the store afterwards. */
export async function withFreshStore<T>(engine: Engine, work: (url: string) => Promise<T>): Promise<T> {
  const { url, drop } = await engine.fresh();
  try {
    return await work(url);
  } finally {
    await drop();
  }
}

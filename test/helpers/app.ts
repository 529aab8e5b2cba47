import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/instance.js';
import { issueToken } from '../../src/auth/api-tokens.js';
import type { Scope } from '../../src/auth/scopes.js';
import { DEFAULTS, type Config } from '../../src/config.js';
import { openStorage } from '../../src/storage/open.js';
import type { Storage } from '../../src/storage/types.js';
import type { Engine } from './engines.js';

/** The app in-process (same options as the server), for fast `app.inject` cases. */

/** The server's defaults (config.ts), with what a test needs instead: any port, an in-memory store, no auth-failure limit, short waits, private webhook receivers. */
export const TEST_CONFIG: Config = {
  ...DEFAULTS,
  port: 0,
  database: 'sqlite::memory:',
  authFailureLimit: 0,
  shutdownTimeout: 5_000,
  webhookRetrySchedule: [1_000, 2_000],
  webhookAllowPrivate: true,
};

export interface TestApp {
  app: FastifyInstance;
  /** The store's URL, for a second connection to it (another process's view: another `openStorage`). */
  database: string;
  storage: Storage;
  logs: string[];
  token(account: string, scopes?: Scope[]): Promise<string>;
  close(): Promise<void>;
}

export async function testApp(engine: Engine, config: Partial<Config> = {}): Promise<TestApp> {
  const { url, drop } = await engine.fresh();
  const storage = await openStorage(url, { sqliteWriter: config.sqliteWriter });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const app = await buildServer({ config: { ...TEST_CONFIG, database: url, ...config }, storage, logStream });
  await app.ready();
  return {
    app,
    database: url,
    storage,
    logs,
    token: async (account, scopes) => (await issueToken(storage, account, scopes)).secret,
    async close() {
      await app.close();
      await storage.close();
      await drop();
    },
  };
}

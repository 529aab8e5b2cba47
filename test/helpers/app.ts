import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { issueToken } from '../../src/auth/api-tokens.js';
import type { Scope } from '../../src/auth/scopes.js';
import type { Config } from '../../src/config.js';
import { openStorage } from '../../src/storage/open.js';
import type { Storage } from '../../src/storage/types.js';
import type { Engine } from './engines.js';

/** The app in-process (same options as the server), for fast `app.inject` cases. */

export const TEST_CONFIG: Config = {
  port: 0,
  host: '127.0.0.1',
  database: 'sqlite::memory:',
  pgPoolMax: 10,
  rateLimit: 0,
  authFailureLimit: 0,
  workers: 1,
  jwtAccountClaim: 'sub',
  shutdownTimeout: 5_000,
  trustProxy: false,
  groupCommit: true,
  logLevel: 'info',
  webhookTimeout: 10_000,
  webhookRetrySchedule: [1_000, 2_000],
  webhookConcurrency: 16,
  webhookRetention: 604_800_000,
  webhookAllowPrivate: true,
  eventRetention: 604_800_000,
  eventHeartbeat: 15_000,
  eventStreamsPerAccount: 16,
  eventStreams: 4_096,
  eventStreamBuffer: 1_048_576,
  corsOrigins: [],
};

export interface TestApp {
  app: FastifyInstance;
  storage: Storage;
  logs: string[];
  token(account: string, scopes?: Scope[]): Promise<string>;
  close(): Promise<void>;
}

export async function testApp(engine: Engine, config: Partial<Config> = {}): Promise<TestApp> {
  const { url, drop } = await engine.fresh();
  const storage = await openStorage(url);
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const app = await buildApp({ config: { ...TEST_CONFIG, database: url, ...config }, storage, logStream });
  await app.ready();
  return {
    app,
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

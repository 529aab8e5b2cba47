/**
 * Every server the bench can put under load, by kind. Each listens on a free port of 127.0.0.1,
 * logs to a file in the scratch directory and reads its own copy of the seeded store.
 *
 * - `service`: Plant Store itself, `node dist/cli.js serve` (rate limit off, default log level:
 *   one JSON line per request).
 * - `ceiling`: a bare node:http server with everything in memory (bench/ceiling.ts).
 * - `fastify`, `express`: plain Fastify / Express + better-sqlite3 peers (bench/peers/).
 * - `fastify-pg`: plain Fastify + postgres.js (bench/peers/fastify-postgres.ts).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, start, type Proc } from './procs.js';
import type { BenchStore } from './stores.js';

export type ServerKind = 'service' | 'ceiling' | 'fastify' | 'express' | 'fastify-pg';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const script = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const SCRIPTS: Record<Exclude<ServerKind, 'service'>, string> = {
  ceiling: script('./ceiling.ts'),
  fastify: script('./peers/fastify-sqlite.ts'),
  express: script('./peers/express-sqlite.ts'),
  'fastify-pg': script('./peers/fastify-postgres.ts'),
};

/** What the peers and the service share: the PostgreSQL pool size of each process. */
export const PG_POOL_MAX = 10;

export interface ServerOptions {
  scratch: string;
  cpus: string | null;
  /** A name for logs and tables; the kind by default. */
  name?: string;
  /** Service only: `--workers`. */
  workers?: number;
  /** Service only: more flags of `serve`. */
  args?: string[];
  env?: Record<string, string>;
  /** Node.js flags, such as `--cpu-prof`. */
  nodeArgs?: string[];
  /** A command that runs the server (strace and its flags). */
  wrap?: string[];
  /** The wrapper becomes the server's process (valgrind), and how long it may take to listen. */
  wrapIsServer?: boolean;
  readyWithinMs?: number;
}

export async function startServer(kind: ServerKind, store: BenchStore, options: ServerOptions): Promise<Proc> {
  const name = options.name ?? kind;
  const port = await freePort();
  const logFile = join(options.scratch, `${name.replace(/\W+/g, '-')}.log`);
  const nodeArgs = options.nodeArgs ?? [];
  const { wrap, wrapIsServer, readyWithinMs } = options;
  const common = { name, wrap, wrapIsServer, readyWithinMs, cpus: options.cpus, port, logFile };
  if (kind === 'service') {
    const database = store.databaseFor(name);
    return start({
      ...common,
      command: [
        process.execPath,
        ...nodeArgs,
        CLI,
        'serve',
        '--port',
        String(port),
        '--database',
        database,
        ...(options.args ?? []),
      ],
      env: {
        RATE_LIMIT: '0',
        WORKERS: String(options.workers ?? 1),
        PG_POOL_MAX: String(PG_POOL_MAX),
        ...options.env,
      },
      probePath: '/healthz',
    });
  }
  const env: Record<string, string> = { PORT: String(port), ...options.env };
  if (kind === 'ceiling') env.CEILING_FILE = store.ceilingFile;
  else env.DATABASE_URL = store.databaseFor(name);
  if (kind === 'fastify-pg') env.PG_POOL_MAX = String(PG_POOL_MAX);
  return start({
    ...common,
    command: [process.execPath, ...nodeArgs, '--import', 'tsx', SCRIPTS[kind]],
    env,
    probePath: '/',
  });
}

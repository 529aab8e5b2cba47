import { execFile, execFileSync } from 'node:child_process';
import { accessSync, appendFileSync, chownSync, constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before } from 'node:test';
import { REQUIRE_BINARIES } from './binaries.js';
import { freePort } from './ports.js';

/**
 * A PostgreSQL cluster owned by one test: `initdb` into a temporary directory, started on a free
 * port of 127.0.0.1 (its Unix socket in that directory), which the test may stop (`fast` or
 * `immediate`: a kill), start again on the same port, and finally remove. Never the machine's
 * cluster on 5432, which every other suite uses at the same time.
 *
 * The binaries are PostgreSQL's own (`pg_config --bindir`, or PG_BINDIR). PostgreSQL will not run
 * as root: as root, the cluster is made and run by the `postgres` OS user (`runuser`). Trust
 * authentication for `postgres` and fsync off (an immediate stop kills PostgreSQL, not the machine:
 * what was written to the kernel stays; synchronous_commit stays on, so a commit acknowledged is
 * written); the cluster's data is thrown away at the end.
 */

const run = promisify(execFile);

function bindir(): string | null {
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR;
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

const BINDIR = bindir();

function missing(): string | false {
  if (BINDIR === null) return 'pg_config not found on PATH (apt-get install postgresql), or set PG_BINDIR';
  try {
    accessSync(join(BINDIR, 'initdb'), constants.X_OK);
    accessSync(join(BINDIR, 'pg_ctl'), constants.X_OK);
    return false;
  } catch {
    return `initdb or pg_ctl not found in ${BINDIR}: apt-get install postgresql, or set PG_BINDIR`;
  }
}

/** Why a cluster of its own cannot be made here; false when it can. Under CI, never a skip (its `before` fails). */
export const OWN_POSTGRES_MISSING = missing();
export const OWN_POSTGRES_SKIP: string | false = REQUIRE_BINARIES ? false : OWN_POSTGRES_MISSING;

const AS_ROOT = userInfo().uid === 0;

/** Runs one of PostgreSQL's programs, as `postgres` when this process is root. */
function pgProgram(name: string, args: string[], timeoutMs = 60_000) {
  const program = join(BINDIR!, name);
  const [file, argv] = AS_ROOT ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, args];
  return run(file, argv, { timeout: timeoutMs, encoding: 'utf8' });
}

export interface OwnPostgres {
  port: number;
  /** The data directory, which also holds the Unix socket and `server.log`. */
  dir: string;
  /** A URL of `database` over TCP, as user `postgres` (trust). */
  url(database?: string): string;
  /** Starts (again) on its port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** `pg_ctl stop -m fast` (connections closed, a clean shutdown) or `immediate` (every process killed). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** One SQL command over psql (TCP); its unaligned output. */
  psql(sql: string, database?: string): Promise<string>;
  /** A fresh database of its own. */
  createDatabase(): Promise<string>;
  /** Appends lines to pg_hba.conf before its first line (first match wins) and reloads, if running. */
  hbaFirst(lines: string): Promise<void>;
  /** Stops it whatever its state and removes the directory. */
  remove(): Promise<void>;
}

let databases = 0;

export async function ownPostgres(): Promise<OwnPostgres> {
  const reason = OWN_POSTGRES_MISSING;
  if (reason) throw new Error(`${reason} (CI=true or TEST_REQUIRE_BINARIES=1: it must run)`);
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pg-'));
  const data = join(dir, 'data');
  if (AS_ROOT) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  await pgProgram('initdb', [
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'postgres',
    '--no-sync',
    '-E',
    'UTF8',
    '--no-instructions',
  ]);
  appendFileSync(
    join(data, 'postgresql.conf'),
    [
      `port = ${port}`,
      `listen_addresses = '127.0.0.1'`,
      `unix_socket_directories = '${dir}'`,
      'fsync = off',
      'full_page_writes = off',
      'max_connections = 100',
      'shared_buffers = 32MB',
      '',
    ].join('\n'),
  );
  const cluster: OwnPostgres = {
    port,
    dir,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      await pgProgram('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '30', 'start']);
    },
    async stop(mode = 'fast') {
      await pgProgram('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '30', 'stop']);
    },
    async psql(sql, database = 'postgres') {
      const { stdout } = await run(
        join(BINDIR!, 'psql'),
        [
          '-h',
          '127.0.0.1',
          '-p',
          String(port),
          '-U',
          'postgres',
          '-d',
          database,
          '-XAtq',
          '-v',
          'ON_ERROR_STOP=1',
          '-c',
          sql,
        ],
        { encoding: 'utf8', timeout: 30_000 },
      );
      return stdout.trim();
    },
    async createDatabase() {
      const name = `plant_store_fault_${process.pid}_${++databases}`;
      await cluster.psql(`CREATE DATABASE ${name}`);
      return name;
    },
    async hbaFirst(lines) {
      const hba = join(data, 'pg_hba.conf');
      const before = readFileSync(hba, 'utf8');
      rmSync(hba);
      appendFileSync(hba, `${lines}\n${before}`);
      if (AS_ROOT) execFileSync('chown', ['postgres:postgres', hba]);
      await pgProgram('pg_ctl', ['-D', data, 'reload']).catch(() => {});
    },
    async remove() {
      await pgProgram('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // A test process that dies leaves no cluster running.
  process.once('exit', () => {
    try {
      const program = join(BINDIR!, 'pg_ctl');
      const args = ['-D', data, '-m', 'immediate', 'stop'];
      if (AS_ROOT) execFileSync('runuser', ['-u', 'postgres', '--', program, ...args], { stdio: 'ignore' });
      else execFileSync(program, args, { stdio: 'ignore' });
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  });
  await cluster.start();
  return cluster;
}

/**
 * The test file's own cluster: made in a top-level `before` (unless OWN_POSTGRES_SKIP, when the
 * file's suites skip) and removed in its `after`. Usable from the suites' hooks and tests, which
 * run after it is made; what the file's own top level needs of it goes in `withIt`, run by the same
 * hook (Node 20 does not wait for one top-level `before` to end before it starts the next).
 */
export function useOwnPostgres(withIt?: (cluster: OwnPostgres) => Promise<void>): OwnPostgres {
  let cluster: OwnPostgres | undefined;
  before(async () => {
    if (OWN_POSTGRES_SKIP) return;
    cluster = await ownPostgres();
    await withIt?.(cluster);
  });
  after(async () => {
    await cluster?.remove();
  });
  const made = () => {
    if (cluster === undefined) throw new Error('the cluster is made in the test file’s first `before`');
    return cluster;
  };
  return new Proxy({} as OwnPostgres, { get: (_target, key) => Reflect.get(made(), key) });
}

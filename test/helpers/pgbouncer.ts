import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertPresent, PGBOUNCER } from './binaries.js';
import { freePort } from './ports.js';
import { eventually } from './wait.js';

/**
 * A real PgBouncer (Debian's `pgbouncer`, which .ci/run installs) in transaction-pooling mode on a
 * free port, in front of the test PostgreSQL: every database name reaches the database of that
 * name there. Started once per test process, on first use, and stopped when the process exits.
 * Suites that need it skip when it is missing (`pgbouncer.skip` in engines.ts, helpers/binaries.ts).
 */

const BINARY = PGBOUNCER.path;

function ini(target: URL, port: number, dir: string, poolSize: number): string {
  return `[databases]
* = host=${target.hostname} port=${target.port || 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${join(dir, 'users.txt')}
pool_mode = transaction
max_client_conn = 2000
default_pool_size = ${poolSize}
ignore_startup_parameters = extra_float_digits,options
logfile = ${join(dir, 'pgbouncer.log')}
`;
}

async function accepting(port: number, child: ChildProcess, log: () => string): Promise<void> {
  await eventually(
    () => `pgbouncer to listen on ${port}:\n${log()}`,
    async () => {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}:\n${log()}`);
      const listening = await new Promise<boolean>((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      });
      return listening || undefined;
    },
    10_000,
    50,
  );
}

export interface Pgbouncer {
  port: number;
  stop(): void;
  /**
   * Kills it (SIGKILL: every client and server connection drops at once, as in a crash or a
   * restart by an orchestrator), waits `downMs`, and starts it again on the same port; resolves once
   * it accepts connections again, with when it was started (performance.now()).
   */
  restart(downMs?: number): Promise<void>;
}

/**
 * Starts a PgBouncer in front of `target` (a postgres:// URL) with `poolSize` server connections per
 * database: fewer than the clients' connections, so that consecutive transactions of one client
 * connection do run on different server connections, as in production. `settings` are lines added
 * to its `[pgbouncer]` section (a later line wins).
 */
export async function startPgbouncer(target: string, { poolSize = 4, settings = '' } = {}): Promise<Pgbouncer> {
  const url = new URL(target);
  return launch(async (dir) => {
    const port = await freePort();
    writeFileSync(join(dir, 'users.txt'), `"${decodeURIComponent(url.username || 'postgres')}" ""\n`, { mode: 0o644 });
    writeFileSync(join(dir, 'pgbouncer.log'), '');
    chmodSync(join(dir, 'pgbouncer.log'), 0o666); // written by `nobody` when started as root
    // PgBouncer will not run as root; as root it is started as `nobody`, who must read these files.
    return { port, ini: ini(url, port, dir, poolSize) + settings, user: 'nobody' };
  });
}

const PAGE = fileURLToPath(new URL('../../docs/pgbouncer.md', import.meta.url));

/**
 * The PgBouncer of docs/pgbouncer.md, run as the page says: its `pgbouncer.ini` and `userlist.txt`
 * as written, but for the reader's own names (PostgreSQL's host and port, the database, the
 * listening port, the files' folder, the user), started as `postgres` when run as root. It serves
 * the page's database name, `plants`, for `database` on `target`'s server.
 */
export async function startPagePgbouncer(target: string, database: string): Promise<Pgbouncer & { password: string }> {
  const page = readFileSync(PAGE, 'utf8');
  const written = /^```ini\n([\s\S]*?)^```/m.exec(page)?.[1];
  const userlist = /^echo '("plants" "([^"]*)")' > \/etc\/pgbouncer\/userlist\.txt$/m.exec(page);
  if (written === undefined || userlist === null)
    throw new Error('docs/pgbouncer.md has no pgbouncer.ini or userlist.txt');
  const url = new URL(target);
  const user = decodeURIComponent(url.username || 'postgres');
  const bouncer = await launch(async (dir) => {
    const port = await freePort();
    const path = join(dir, 'userlist.txt');
    writeFileSync(path, `${userlist[1]!.replace('"plants"', JSON.stringify(user))}\n`, { mode: 0o600 });
    if (process.getuid?.() === 0) {
      const owner = userIds('postgres');
      chownSync(path, owner.uid, owner.gid);
    }
    const config = written
      .replace(
        'host=postgres port=5432 dbname=plants',
        `host=${url.hostname} port=${url.port || 5432} dbname=${database}`,
      )
      .replace('listen_port = 6432', `listen_port = ${port}`)
      .replace('auth_file = /etc/pgbouncer/userlist.txt', `auth_file = ${path}`);
    return { port, ini: config, user: 'postgres' };
  });
  return { ...bouncer, password: userlist[2]! };
}

/** A user's ids, for PgBouncer started as that user (it refuses to run as root). */
function userIds(user: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * Writes a configuration `configure` gives into a folder of its own and starts PgBouncer on it,
 * as `user` when this process is root (as `sudo -u` would); resolves once
 * it accepts connections. Its output (or `logfile`) is kept for the errors.
 */
async function launch(
  configure: (dir: string) => Promise<{ port: number; ini: string; user: string }>,
): Promise<Pgbouncer> {
  assertPresent(PGBOUNCER);
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pgbouncer-'));
  chmodSync(dir, 0o755);
  const { port, ini: config, user } = await configure(dir);
  const iniPath = join(dir, 'pgbouncer.ini');
  writeFileSync(iniPath, config, { mode: 0o644 });
  const root = process.getuid?.() === 0;
  const asUser = root ? userIds(user) : {};
  let printed = '';
  const start = () => {
    const child = spawn(BINARY, [iniPath], { stdio: ['ignore', 'ignore', 'pipe'], ...asUser });
    child.stderr!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    child.unref();
    (child.stderr as unknown as { unref(): void }).unref();
    return child;
  };
  let child = start();
  const failedToStart = (started: ChildProcess) =>
    new Promise<never>((_, reject) =>
      started.once('error', (error) =>
        reject(
          new Error(`cannot start ${BINARY} (${error.message}): install Debian's pgbouncer package (.ci/run does)`),
        ),
      ),
    );
  const failed = failedToStart(child);
  const stop = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  const log = () => {
    try {
      return printed + readFileSync(join(dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return printed;
    }
  };
  try {
    await Promise.race([accepting(port, child, log), failed]);
  } catch (error) {
    stop();
    throw error;
  }
  const restart = async (downMs = 0) => {
    const killed = child;
    const exited = new Promise((resolve) => killed.once('exit', resolve));
    killed.kill('SIGKILL');
    await exited;
    await new Promise((resolve) => setTimeout(resolve, downMs));
    child = start();
    await Promise.race([accepting(port, child, log), failedToStart(child)]);
  };
  return { port, stop, restart };
}

let running: Promise<Pgbouncer> | undefined;

/** The port of this test process's PgBouncer, started on first call, stopped when the process exits. */
export async function pgbouncerPort(target: string): Promise<number> {
  running ??= startPgbouncer(target);
  return (await running).port;
}

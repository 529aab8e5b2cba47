import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertPresent, PGBOUNCER } from './binaries.js';
import { freePort } from './ports.js';

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
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}:\n${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port} within 10 s:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
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
 * connection do run on different server connections, as in production.
 */
export async function startPgbouncer(target: string, { poolSize = 4 } = {}): Promise<Pgbouncer> {
  assertPresent(PGBOUNCER);
  const url = new URL(target);
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pgbouncer-'));
  // PgBouncer will not run as root; as root it is told to become `nobody`, who must read these files.
  chmodSync(dir, 0o755);
  const port = await freePort();
  writeFileSync(join(dir, 'users.txt'), `"${decodeURIComponent(url.username || 'postgres')}" ""\n`, { mode: 0o644 });
  writeFileSync(join(dir, 'pgbouncer.ini'), ini(url, port, dir, poolSize), { mode: 0o644 });
  writeFileSync(join(dir, 'pgbouncer.log'), '');
  chmodSync(join(dir, 'pgbouncer.log'), 0o666); // written by `nobody` when started as root
  const asRoot = process.getuid?.() === 0 ? ['-u', 'nobody'] : [];
  const launch = () => spawn(BINARY, [...asRoot, join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });
  let child = launch();
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
  child.unref();
  const log = () => {
    try {
      return readFileSync(join(dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return '';
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
    child = launch();
    child.unref();
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

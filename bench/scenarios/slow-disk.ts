/**
 * A slow disk: every fsync and fdatasync of the server returns 2 ms later than the disk answered
 * (strace's syscall fault injection), for the service and the plain Fastify peer, so that what a
 * durable create costs on a network volume or a spinning disk shows on a machine whose disk
 * syncs in a tenth of a millisecond.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { hasCommand } from '../load.js';
import { alternate, nextIdBase, type Context, type ScenarioResult } from '../rounds.js';
import { contender } from './contenders.js';

export const SYNC_DELAY_MS = 2;
const TITLE = `POST /plants on a slow disk (every fsync ${SYNC_DELAY_MS} ms longer)`;

/** strace, following every thread, stopping the process only at fsync/fdatasync (seccomp), writing one line per sync. */
function straceWrap(outputFile: string): string[] {
  return [
    'strace',
    '-f',
    '--seccomp-bpf',
    '-qq',
    '-e',
    'trace=fsync,fdatasync',
    '-e',
    `inject=fsync,fdatasync:delay_exit=${SYNC_DELAY_MS * 1000}`,
    '-o',
    outputFile,
    '--',
  ];
}

/** Why strace cannot be used here, or null when it can. */
function straceMissing(): string | null {
  if (!hasCommand('strace')) return 'strace is not installed (`apt-get install strace`); the scenario was skipped';
  const probe = spawnSync(
    'strace',
    ['-f', '--seccomp-bpf', '-qq', '-e', 'trace=fsync', '-o', '/dev/null', '--', 'true'],
    {
      encoding: 'utf8',
    },
  );
  if (probe.status !== 0)
    return `strace cannot trace here (${(probe.stderr || `exit ${probe.status}`).trim()}); the scenario was skipped`;
  return null;
}

const syncsIn = (file: string) => (readFileSync(file, 'utf8').match(/\b(fsync|fdatasync)\(/g) ?? []).length;

function storedCreates(database: string): number {
  const db = new Database(database.slice('sqlite:'.length), { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM plants WHERE account = 'bench-post'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

export async function slowDisk(ctx: Context): Promise<ScenarioResult> {
  const missing = straceMissing();
  const about =
    `Every \`fsync\`/\`fdatasync\` of the server process returns ${SYNC_DELAY_MS} ms after the disk answered ` +
    `(\`strace -f --seccomp-bpf -e inject=fsync,fdatasync:delay_exit=${SYNC_DELAY_MS * 1000}\`; only those calls stop ` +
    'the process). The service and the plain Fastify peer, both on SQLite with `synchronous = FULL`, get durable ' +
    'creates as in the POST scenario; the ceiling syncs nothing and runs beside them untraced. Syncs per create = ' +
    "the server's fsync/fdatasync calls over its whole life (strace's count) / the plants it stored.";
  if (missing !== null) {
    ctx.log(`\n${TITLE}: skipped, ${missing}`);
    return { title: TITLE, about, servers: [], skipped: missing };
  }
  ctx.log(`\n${TITLE}:`);
  const store = ctx.sqlite;
  const load = () => ({ kind: 'post' as const, token: store.tokens.post, idBase: nextIdBase() });
  const traced = (name: string) => {
    const file = join(ctx.scratch, `${name}.strace`);
    return {
      name,
      server: { wrap: straceWrap(file) },
      afterStop: () => ({ syncs: syncsIn(file), stored: storedCreates(store.databaseFor(name)) }),
    };
  };
  return {
    title: TITLE,
    about,
    servers: await alternate(ctx, [
      contender(ctx, store, 'ceiling', load),
      contender(ctx, store, 'service', load, traced('service-slow-disk')),
      contender(ctx, store, 'fastify', load, traced('fastify-slow-disk')),
    ]),
  };
}

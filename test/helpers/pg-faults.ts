import assert from 'node:assert/strict';
import { FaultLoad } from './fault-load.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { oneShot } from './load.js';
import { startServer, type RunningServer } from './server.js';

/**
 * What the PostgreSQL fault suites share (test/reliability/postgres-*.test.ts): a server with a
 * short `--database-timeout` under a FaultLoad, probes of /healthz and /readyz that never wait on
 * each other, and the measures the contract names: every request answered within the timeout plus
 * 1 s, /readyz 503 within that of the fault and 200 after, writes succeeding within 2 s of the heal.
 */

/** `--database-timeout` of the servers under test: short, so that the suites are. */
export const TIMEOUT_MS = 2_000;
/** The contract: every request answered within `--database-timeout` plus 1 s. */
export const ANSWER_BOUND_MS = TIMEOUT_MS + 1_000;
/** The contract: new requests succeed within 2 s of the database answering again. */
export const RECOVERY_LIMIT_MS = 2_000;
/** Clients of the load. */
export const CLIENTS = 24;

export interface Probe {
  path: '/healthz' | '/readyz';
  startedAt: number;
  ms: number;
  /** 0: no HTTP answer (a reset, a hang past 10 s). */
  status: number;
}

/**
 * Probes /healthz and /readyz every `everyMs`, each on its own connection and without waiting for
 * the one before: a probe that hangs is seen as one, and does not hide the next.
 */
export function watchProbes(url: string, everyMs = 100) {
  const probes: Probe[] = [];
  const inFlight = new Set<Promise<void>>();
  let on = true;
  const probe = (path: Probe['path']) => {
    const startedAt = performance.now();
    const done = Promise.race([oneShot(`${url}${path}`), sleep(10_000).then(() => null)])
      .catch(() => null)
      .then((answer) => {
        probes.push({ path, startedAt, ms: performance.now() - startedAt, status: answer?.status ?? 0 });
        inFlight.delete(done);
      });
    inFlight.add(done);
  };
  const loop = (async () => {
    while (on) {
      probe('/healthz');
      probe('/readyz');
      await sleep(everyMs);
    }
  })();
  const sorted = (path: Probe['path']) =>
    probes.filter((p) => p.path === path).sort((a, b) => a.startedAt - b.startedAt);
  return {
    probes,
    /** /readyz probes answered `status`, the first one answered after `from`: when it was answered. */
    firstAnswered(status: number, from: number): number | undefined {
      const times = sorted('/readyz')
        .filter((p) => p.status === status && p.startedAt + p.ms > from)
        .map((p) => p.startedAt + p.ms);
      return times.length === 0 ? undefined : Math.min(...times);
    },
    healthz: () => sorted('/healthz'),
    readyz: () => sorted('/readyz'),
    async stop() {
      on = false;
      await loop;
      await Promise.all(inFlight);
    },
  };
}

export type Probes = ReturnType<typeof watchProbes>;

/** A server of the database at `database` with `--database-timeout 2s`, its load (the feed open) and probes. */
export async function loadedServer(
  database: string,
  args: string[] = [],
  prepare: (server: RunningServer) => Promise<void> = async () => {},
) {
  const server = await startServer({ database, args: ['--database-timeout', `${TIMEOUT_MS / 1000}s`, ...args] });
  assert.ok(server.firstToken, 'a first-start token on a fresh database');
  await prepare(server);
  const load = new FaultLoad(server.url, server.firstToken, CLIENTS, { databaseAway: true });
  const probes = watchProbes(server.url);
  await load.start();
  return { server, load, probes };
}

export type Loaded = Awaited<ReturnType<typeof loadedServer>>;

/** Ends the load and the probes once the fault is over; what they recorded stays for the assertions. */
export async function stopLoad(run: Loaded): Promise<void> {
  await run.load.stop();
  await run.probes.stop();
}

/** Closes what `loadedServer` started (an `after` hook's part, whether or not its `before` got that far). */
export async function closeLoaded(run: Loaded | undefined): Promise<void> {
  run?.load.close();
  await run?.probes.stop();
  await run?.server.stop();
}

/** When the first write answered 2xx after `from` was answered; waits up to `withinMs` for one. */
export async function firstWriteAfter(load: FaultLoad, from: number, withinMs = 15_000): Promise<number> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const write = load.writes.find((w) => w.at > from && w.status >= 200 && w.status < 300);
    if (write !== undefined) return write.at;
    if (performance.now() > deadline) return Number.NaN;
    await sleep(5);
  }
}

/** When /readyz first answered 200 after `from`; waits up to `withinMs` for it. */
export async function readyAfter(probes: Probes, from: number, withinMs = 15_000): Promise<number> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const at = probes.firstAnswered(200, from);
    if (at !== undefined) return at;
    if (performance.now() > deadline) return Number.NaN;
    await sleep(10);
  }
}

/**
 * The contract's "every request is answered, in bounded time": no request of the load went
 * unanswered or took longer than `--database-timeout` plus 1 s, none got a status other than 2xx
 * or 503, every 503 has Retry-After and the Error body; /healthz answered 200 every time, and
 * promptly; no /readyz probe hung. Returns the slowest request.
 */
export function assertAnsweredInBound({ load, probes, server }: Loaded): number {
  assertStillServing(server);
  // A 500 is logged at error with its cause: the lines go with the failure, for whoever reads only CI's log.
  const errorLines = () =>
    server
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"level":50'))
      .slice(-5)
      .join('\n');
  assert.deepEqual(
    load.violations,
    [],
    `every request answered 2xx or 503, none reset or left without an answer; the server's error lines:\n${errorLines()}`,
  );
  for (const key of load.statuses.keys())
    assert.match(key, /^(create|batch|patch|delete|read|audit-read) (2\d\d|503)$/);
  for (const [body, retryAfter] of load.refusals) {
    const parsed = JSON.parse(body) as { error: number; message: string };
    assert.equal(parsed.error, 503, body);
    assert.equal(typeof parsed.message, 'string', body);
    assert.ok(Number(retryAfter) >= 1, `Retry-After: ${retryAfter} on ${body}`);
  }
  const { ms, over } = load.slowest(0, ANSWER_BOUND_MS);
  assert.deepEqual(
    over.map((a) => `${a.kind} ${a.status} after ${a.ms.toFixed(0)} ms`),
    [],
    `every request answered within ${ANSWER_BOUND_MS} ms`,
  );
  const healthz = probes.healthz();
  assert.ok(healthz.length > 10);
  const unhealthy = healthz.filter((p) => p.status !== 200 || p.ms > 1_000);
  assert.deepEqual(
    unhealthy.map((p) => `${p.status} after ${p.ms.toFixed(0)} ms`),
    [],
    '/healthz answered 200 throughout',
  );
  const hung = probes.readyz().filter((p) => p.status === 0 || p.ms > ANSWER_BOUND_MS);
  assert.deepEqual(
    hung.map((p) => `${p.status} after ${p.ms.toFixed(0)} ms`),
    [],
    `every /readyz answered within ${ANSWER_BOUND_MS} ms`,
  );
  for (const p of probes.readyz()) assert.ok(p.status === 200 || p.status === 503, `/readyz ${p.status}`);
  return ms;
}

/** The same process serves: it neither exited nor was killed (its last log lines otherwise). */
export function assertStillServing(server: RunningServer) {
  const ended = server.process.exitCode ?? server.process.signalCode;
  assert.equal(
    ended,
    null,
    `the server process ended (${ended}); its errors and last lines:\n${[
      ...server
        .stdout()
        .split('\n')
        .filter((l) => l.includes('"level":50')),
      ...server.output().split('\n').slice(-5),
    ].join('\n')}`,
  );
}

/**
 * No request was refused once the database had answered again for `RECOVERY_LIMIT_MS`: neither a
 * request of the load started after then, nor a read of the audit (run after the load). Unpatched,
 * postgres.js 3.4.9 kept the ErrorResponse of a query cut off by its connection's close (57P01, from
 * pg_terminate_backend or a fast stop) and handed it to the first query of the connection's next
 * life, whenever that came: a 503 long after the database was back (patches/).
 */
export function refusalsAfterRecovery(load: FaultLoad, back: number): string[] {
  const late = load.answers.filter((a) => a.startedAt >= back + RECOVERY_LIMIT_MS && a.status === 503);
  const audit = load.count('audit-read 503');
  return [
    ...late.map((a) => `${a.kind} 503, ${(a.startedAt - back).toFixed(0)} ms after the database answered`),
    ...(audit > 0 ? [`${audit} reads of the audit 503`] : []),
  ];
}

/** One line of the suite's measures in the test output (TAP comment). */
export function report(what: string, figures: Record<string, unknown>) {
  console.log(`# ${what}: ${JSON.stringify(figures)}`);
}

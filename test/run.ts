import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { inspect } from 'node:util';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';

/**
 * `npm test`: every test file, the slowest first, a few at a time. `node --test` sorts its files by
 * name, which left the longest file (webhook deliveries) to run alone at the end; node:test's own
 * `run` keeps the order it is given. Files named on the command line run alone, in that order.
 * The summary is node:test's own (TAP when the output is not a terminal, as `node --test` does).
 */

/** The files that take longest (wall time, measured on a 2-core VM, three files at once), started first so the others fill in around them. */
const SLOWEST_FIRST = [
  'lifecycle/rolling-restart.test.ts',
  'cli/copy.test.ts',
  'docs/running-the-tests.test.ts',
  'webhooks/keeping-pace.test.ts',
  'reliability/postgres-restart.test.ts',
  'cli/cli.test.ts',
  'reliability/postgres-network.test.ts',
  'reliability/redis-faults.test.ts',
  'feed/bounds.test.ts',
  'webhooks/delivery.test.ts',
  'http/rate-limit.test.ts',
  'webhooks/durability.test.ts',
  'reliability/slow-clients.test.ts',
  'reliability/soak.test.ts',
  'feed/across-processes.test.ts',
  'client/flaky.test.ts',
  'reliability/plants-model.test.ts',
  'feed/commit-order.test.ts',
  'contract/list.test.ts',
  'scale/stream-memory.test.ts',
  'reliability/crash-durability.test.ts',
  'reliability/own-parts.test.ts',
  'lifecycle/shutdown.test.ts',
  'telemetry/traces.test.ts',
  'scale/scale-out.test.ts',
  'contract/cors.test.ts',
  'docs/browser.test.ts',
  'auth/token-version.test.ts',
  'reliability/isolation.test.ts',
];

/**
 * Files at once: one more than the cores. With one per core a fifth of the CPU stood idle (files
 * that wait on retries, timeouts and restarts); one more keeps it busy (docs/testing.md).
 */
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY ?? availableParallelism() + 1);
if (!Number.isInteger(CONCURRENCY) || CONCURRENCY < 1) {
  console.error(
    `TEST_CONCURRENCY must be a whole number of files at once, 1 or more (got "${process.env.TEST_CONCURRENCY}")`,
  );
  process.exit(2);
}

const root = import.meta.dirname;
const named = process.argv.slice(2);
const rank = (file: string) => {
  const slow = SLOWEST_FIRST.indexOf(file);
  return slow === -1 ? SLOWEST_FIRST.length : slow;
};
const all = readdirSync(root, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.test.ts'))
  .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
const files = named.length > 0 ? named : all.map((file) => join(root, file));

/**
 * A file that has not ended by then fails and its process is killed, so that one hung file (a server
 * that never answers, a handle left open) fails the run instead of holding CI until its own limit.
 * The slowest file takes about 5 minutes on a 2-core VM with another file beside it.
 */
const FILE_TIMEOUT_MS = 10 * 60_000;

// forceExit: a file's process ends once its tests have, whatever handle a test left open.
const stream = run({
  files,
  concurrency: named.length > 0 ? 1 : CONCURRENCY,
  timeout: FILE_TIMEOUT_MS,
  forceExit: true,
});
// Each file's time (its top-level tests, one after another), the slowest told at the end: what
// SLOWEST_FIRST is kept by, and what to look at when the run grows.
const fileMs = new Map<string, number>();
const countFile = ({
  nesting,
  file,
  details,
}: {
  nesting: number;
  file?: string;
  details: { duration_ms: number };
}) => {
  if (nesting === 0 && file !== undefined) fileMs.set(file, (fileMs.get(file) ?? 0) + details.duration_ms);
};
stream.on('test:pass', countFile);
stream.on('test:fail', countFile);
// A failing test fails the run unless it is marked todo, as with `node --test`; each is named again
// at the end, with the first line of its error: CI keeps only the tail of a run's output, and a
// suite's failure says only that a test inside it failed.
const failures: string[] = [];
const suitesOf = new Map<string | undefined, string[]>();
stream.on('test:start', ({ name, nesting, file }) => {
  const suites = suitesOf.get(file) ?? [];
  suites.length = nesting;
  suites.push(name);
  suitesOf.set(file, suites);
});
stream.on('test:fail', ({ name, nesting, file, todo, details }) => {
  if (todo !== undefined && todo !== false) return;
  process.exitCode = 1;
  const error = details.error as Error & { failureType?: string; cause?: unknown };
  if (error.failureType === 'subtestsFailed') return;
  const path = [...(suitesOf.get(file) ?? []).slice(0, nesting), name].join(' > ');
  failures.push(
    `  ${file === undefined ? '' : `${relative(root, file)}: `}${path}: ${firstLineOf(error.cause ?? error)}`,
  );
});
/**
 * The first line of an error that has text, and for an assertion given its own message (often the
 * whole output of a process, whose first line says little) the values it compared.
 */
function firstLineOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = message.split('\n').find((text) => text.trim() !== '') ?? '';
  const assertion = error as { code?: string; generatedMessage?: boolean; actual?: unknown; expected?: unknown };
  if (assertion.code !== 'ERR_ASSERTION' || assertion.generatedMessage !== false) return line.trim();
  return `${inspect(assertion.actual)} where ${inspect(assertion.expected)} was expected (${line.trim()})`;
}
stream.on('end', () => {
  if (failures.length > 0) console.error(`failed (${failures.length}):\n${failures.join('\n')}`);
  const slowest = [...fileMs].sort(([, a], [, b]) => b - a).slice(0, 12);
  console.error(
    `slowest files: ${slowest.map(([file, ms]) => `${relative(root, file)} ${(ms / 1000).toFixed(0)} s`).join(', ')}`,
  );
});
stream.compose(process.stdout.isTTY ? new spec() : tap).pipe(process.stdout);
if (named.length === 0)
  console.error(
    `running ${files.length} files, ${CONCURRENCY} at a time: ${files
      .slice(0, 3)
      .map((f) => relative(root, f))
      .join(', ')} first`,
  );

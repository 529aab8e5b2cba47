import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';

/**
 * `npm test`: every test file, the slowest first, a few at a time. `node --test` sorts its files by
 * name, which left the longest file (webhook deliveries) to run alone at the end; node:test's own
 * `run` keeps the order it is given. Files named on the command line run alone, in that order.
 * The summary is node:test's own (TAP when the output is not a terminal, as `node --test` does).
 */

/** The files that take longest (wall time, measured on a 2-core VM), started first so the others fill in around them. */
const SLOWEST_FIRST = [
  'cli/copy.test.ts',
  'cli/cli.test.ts',
  'webhooks/delivery.test.ts',
  'feed/commit-order.test.ts',
  'feed/bounds.test.ts',
  'feed/across-processes.test.ts',
  'contract/list.test.ts',
  'http/rate-limit.test.ts',
  'contract/batch.test.ts',
  'ops/traces.test.ts',
  'reliability/security.test.ts',
  'ops/shutdown.test.ts',
  'reliability/slow-clients.test.ts',
  'scale/stream-memory.test.ts',
  'reliability/soak.test.ts',
  'scale/scale-out.test.ts',
  'docs/browser.test.ts',
];

/**
 * Files at once: one per core. The suite is CPU-bound: one more took as long (docs/testing.md) and
 * made tests with timings (keep-alive, retries) likelier to miss them.
 */
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY ?? availableParallelism());
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

const stream = run({ files, concurrency: named.length > 0 ? 1 : CONCURRENCY });
// As `node --test`: a failing test marked todo does not fail the run.
stream.on('test:fail', ({ todo }) => {
  if (todo === undefined || todo === false) process.exitCode = 1;
});
stream.compose(process.stdout.isTTY ? new spec() : tap).pipe(process.stdout);
if (named.length === 0)
  console.error(
    `running ${files.length} files, ${CONCURRENCY} at a time: ${files
      .slice(0, 3)
      .map((f) => relative(root, f))
      .join(', ')} first`,
  );

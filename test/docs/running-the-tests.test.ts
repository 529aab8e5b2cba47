import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * README.md#running-the-tests: `npm test` passes on a machine with only PostgreSQL and Redis, the
 * suites that need PgBouncer, HAProxy or Chromium skipped with one line naming the program and how to
 * install it; under CI=true (which .ci/run sets) or TEST_REQUIRE_BINARIES=1 the same run fails.
 * Shown on the files that need them, run with both programs hidden: a PATH holding only `node`.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** One suite of each kind: PgBouncer's own, a contract suite on the pooler's engine, HAProxy's, both browser files. */
const FILES = [
  'test/storage/pgbouncer.test.ts',
  'test/lifecycle/rolling-restart.test.ts',
  'test/contract/create.test.ts',
  'test/docs/browser.test.ts',
  'test/docs/browser-cors.test.ts',
];

let bin = '';

/** The files under node:test with nothing but `node` on PATH; TAP on standard output. */
function runHidden(mode: Record<string, string>) {
  const env: Record<string, string | undefined> = { ...process.env, PATH: bin, TEST_ENGINES: 'pgbouncer', ...mode };
  for (const name of ['CI', 'TEST_REQUIRE_BINARIES', 'PGBOUNCER_PATH', 'HAPROXY_PATH', 'CHROMIUM_PATH']) {
    if (!(name in mode)) delete env[name];
  }
  // Set by the runner of this file: the run would take itself for a child and run nothing.
  delete env.NODE_TEST_CONTEXT;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', ...FILES], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('a suite that needs a missing program', { timeout: 300_000 }, () => {
  before(() => {
    bin = mkdtempSync(join(tmpdir(), 'plant-store-path-'));
    symlinkSync(process.execPath, join(bin, 'node'));
  });
  after(() => rmSync(bin, { recursive: true, force: true }));

  it('is skipped, naming the program and how to install it, and the run passes', () => {
    const { status, output } = runHidden({});
    assert.equal(status, 0, output);
    const skips = output.split('\n').filter((line) => line.includes('# SKIP'));
    assert.ok(
      skips.some((line) => /pgbouncer not found on PATH: apt-get install pgbouncer/.test(line)),
      output,
    );
    assert.ok(
      skips.some((line) => /haproxy not found on PATH: apt-get install haproxy/.test(line)),
      output,
    );
    assert.ok(
      skips.some((line) => /chromium not found on PATH: apt-get install chromium/.test(line)),
      output,
    );
    assert.match(output, /^# fail 0$/m);
  });

  // TEST_REQUIRE_BINARIES=1 does the same outside CI (helpers/binaries.ts).
  it('fails the run instead under CI=true, as in .ci/run, saying which program is missing', () => {
    const { status, output } = runHidden({ CI: 'true' });
    assert.notEqual(status, 0, output);
    assert.doesNotMatch(output, /# SKIP .*not found/);
    assert.match(output, /pgbouncer not found on PATH/);
    assert.match(output, /haproxy not found on PATH/);
    assert.match(output, /chromium not found on PATH/);
  });
});

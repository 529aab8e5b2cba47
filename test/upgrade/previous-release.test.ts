import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ENGINES, withFreshStore } from '../helpers/engines.js';
import { listPlants, postPlant } from '../helpers/http.js';
import { LONG } from '../helpers/load.js';
import { CLI, startServer } from '../helpers/server.js';

/**
 * CHANGELOG.md: every earlier release named there, built from its commit in a temporary git
 * worktree (this checkout's node_modules linked in: same dependencies, same native builds), runs
 * beside the current build on one store of each engine: an upgrade, a rollback and the upgrade
 * again (docs/operating.md#upgrades-and-rollbacks), and both serving one store at once. A build
 * takes a minute or two: `npm run test:long`.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

/** The releases below the first (the current one) in CHANGELOG.md, newest first. */
function earlierReleases(): Array<{ version: string; commit: string }> {
  const changelog = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8');
  const releases = [...changelog.matchAll(/^## (\d+\.\d+\.\d+)\n\n- Commit: (?:`([0-9a-f]{7,40})`)?/gm)];
  assert.ok(releases.length >= 2, 'CHANGELOG.md names no earlier release');
  return releases.slice(1).map(([, version, commit]) => {
    assert.ok(commit, `CHANGELOG.md names no commit for ${version}`);
    return { version: version!, commit };
  });
}

/** A release's command line, built from its commit; `remove` deletes the worktree. */
async function buildRelease(commit: string) {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-release-'));
  const tree = join(dir, 'tree');
  await run('git', ['worktree', 'add', '--detach', tree, commit], { cwd: ROOT });
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
  const options = { cwd: tree, timeout: 600_000 };
  await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], options);
  await run(process.execPath, ['scripts/bundle.js'], options);
  return {
    cli: join(tree, 'dist', 'cli.js'),
    async remove() {
      await run('git', ['worktree', 'remove', '--force', tree], { cwd: ROOT });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function tokenCreate(cli: string, database: string) {
  return spawnSync(process.execPath, [cli, 'token', 'create', '--account', 'a', '--database', database], {
    encoding: 'utf8',
    timeout: 30_000,
  });
}

for (const { version, commit } of earlierReleases()) {
  describe(
    `the release ${version} (${commit}) beside this build`,
    {
      timeout: 900_000,
      // Building a release takes a minute or two of CPU: npm test leaves it to npm run test:long.
      skip: LONG ? false : 'builds earlier releases: run by npm run test:long',
    },
    () => {
      let release: Awaited<ReturnType<typeof buildRelease>>;
      before(async () => {
        release = await buildRelease(commit);
      });
      after(() => release?.remove());

      for (const engine of ENGINES) {
        it(`this build, then ${version}, then this build again, each writing to one store (${engine.name})`, async () => {
          await withFreshStore(engine, async (database) => {
            for (const cli of [CLI, release.cli, CLI]) {
              const result = tokenCreate(cli, database);
              assert.equal(result.status, 0, `${cli === CLI ? 'this build' : version}: ${result.stderr}`);
            }
          });
        });

        it(`serves one store together with ${version}: a plant created through either is read through both (${engine.name})`, async () => {
          await withFreshStore(engine, async (database) => {
            const current = await startServer({ database });
            const earlier = await startServer({ database, cli: release.cli });
            try {
              const token = current.firstToken!;
              assert.equal((await postPlant(current.url, token, { id: 1, name: 'through this build' })).status, 200);
              assert.equal((await postPlant(earlier.url, token, { id: 2, name: `through ${version}` })).status, 200);
              for (const server of [current, earlier]) {
                const names = ((await listPlants(server.url, token)).json as Array<{ name: string }>).map(
                  (p) => p.name,
                );
                assert.deepEqual(names.sort(), ['through this build', `through ${version}`].sort());
              }
            } finally {
              await Promise.all([current.stop(), earlier.stop()]);
            }
          });
        });
      }
    },
  );
}

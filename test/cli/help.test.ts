import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MIGRATIONS as POSTGRES_MIGRATIONS } from '../../src/storage/postgres/migrations.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/storage/sqlite/migrations.js';
import { runCli } from '../helpers/server.js';

const ROOT = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as {
  version: string;
  scripts: Record<string, string>;
};
const manual = (page: string) => readFileSync(new URL(`docs/${page}`, ROOT), 'utf8');

/** What --version prints: the version of package.json and each engine's schema version. */
const VERSION_LINE = `${pkg.version} (schema version: SQLite ${SQLITE_MIGRATIONS.length}, PostgreSQL ${POSTGRES_MIGRATIONS.length})\n`;

describe('--version prints the version of package.json and the schema versions', () => {
  it('answers --version and -V with one line, exit 0', () => {
    for (const flag of ['--version', '-V']) {
      const result = runCli([flag]);
      assert.equal(result.status, 0, result.stderr);
      assert.equal(result.stdout, VERSION_LINE);
    }
  });
});

describe('--help and the manual agree', () => {
  it('names every OTEL_* variable of docs/operating.md in --help and serve --help', () => {
    const documented = new Set(manual('operating.md').match(/\bOTEL_[A-Z_]+/g));
    assert.ok(documented.size >= 10, `only ${documented.size} OTEL_* variables found in the manual`);
    for (const args of [['--help'], ['serve', '--help']]) {
      const help = runCli(args);
      assert.equal(help.status, 0);
      for (const name of documented) assert.ok(help.stdout.includes(name), `${args.join(' ')} lacks ${name}`);
    }
  });

  it('offers backup only SQLite stores, since it refuses PostgreSQL', () => {
    const help = runCli(['backup', '--help']);
    assert.equal(help.status, 0);
    assert.doesNotMatch(help.stdout, /postgres:\/\//);
    assert.match(help.stdout, /sqlite:PATH/);
    assert.match(help.stdout, /pg_dump/);
    const refused = runCli(['backup', join(tmpdir(), 'never.db'), '--database', 'postgres://u@127.0.0.1:1/x']);
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /pg_dump/);
  });

  it('says that token list shows the revocation, and what token revoke does with a revoked token', () => {
    assert.match(runCli(['token', 'list', '--help']).stdout, /revocation \(REVOKED/);
    assert.match(runCli(['token', 'revoke', '--help']).stdout, /already revoked, exits 1/);
    assert.match(manual('jwt.md'), /`REVOKED`/);
    assert.match(manual('jwt.md'), /already\s+revoked[^.]*exits with status 1/);
  });
});

describe('npm run cli -- ... runs the built command line at once; npm start -- passes flags to serve', () => {
  it('has a cli script that runs dist/cli.js with no build before it', () => {
    assert.equal(pkg.scripts.cli, 'node dist/cli.js');
    assert.equal(pkg.scripts.precli, undefined);
    const result = spawnSync('npm', ['run', '-s', 'cli', '--', '--version'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout, VERSION_LINE);
  });

  it('serves with the flags given after npm start --', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'npm-start-'));
    const child = spawn('npm', ['start', '--', '--port', '0', '--database', `sqlite:${join(folder, 'store.db')}`], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const listening = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`npm start did not listen in 30 s:\n${stdout}`)), 30_000);
        child.stdout!.on('data', () => {
          const match = /Server listening at (http:\/\/127\.0\.0\.1:(\d+))/.exec(stdout);
          if (match) {
            clearTimeout(timer);
            resolve(match[2]!);
          }
        });
      });
      assert.notEqual(listening, '8080', 'the --port given after -- reached the server');
      assert.match(stdout, new RegExp(`"store":"sqlite:${folder.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/store\\.db"`));
    } finally {
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

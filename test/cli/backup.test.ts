import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { sqlite, withFreshStore } from '../helpers/engines.js';
import { postPlant } from '../helpers/http.js';
import { CLI, runCli, startServer, type CliResult } from '../helpers/server.js';

/** A CLI run that leaves the event loop free, so the test can keep writing while it runs. */
function runCliAsync(args: string[]): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  return new Promise((resolve) => child.on('exit', (status) => resolve({ status, stdout, stderr })));
}

const pathOf = (url: string) => url.slice('sqlite:'.length);

describe('plant-store backup', () => {
  describe('takes a consistent copy of a SQLite store while the server writes to it', () => {
    it('holds every plant acknowledged before the backup began', { timeout: 120_000 }, async () => {
      await withFreshStore(sqlite, async (url) => {
        const server = await startServer({ database: url });
        const backupPath = join(dirname(pathOf(url)), 'backup.db');
        try {
          const token = server.firstToken!;
          const acknowledged: number[] = [];
          let writing = true;
          // Four writers, so commits land all through the backup.
          const writers = Array.from({ length: 4 }, async (_, w) => {
            for (let i = 0; writing; i++) {
              const id = i * 4 + w;
              const reply = await postPlant(server.url, token, { id, name: `p${id}` });
              assert.equal(reply.status, 200, reply.text);
              acknowledged.push(id);
            }
          });
          while (acknowledged.length < 400) await new Promise((resolve) => setTimeout(resolve, 10));

          const before = [...acknowledged];
          const result = await runCliAsync(['backup', backupPath, '--database', url]);
          const duringBackup = acknowledged.length - before.length;
          writing = false;
          await Promise.all(writers);

          assert.equal(result.status, 0, result.stderr);
          assert.ok(duringBackup > 0, 'the server kept acknowledging writes while the backup ran');
          const printed = /^backed up .+ to (.+) \((\d+) bytes\)$/m.exec(result.stdout);
          assert.ok(printed, result.stdout);
          assert.equal(printed[1], backupPath);
          assert.equal(Number(printed[2]), statSync(backupPath).size);
          assert.ok(!existsSync(`${backupPath}.partial`));

          const db = new Database(backupPath, { readonly: true });
          try {
            assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
            const names = new Set(db.prepare("SELECT name FROM plants WHERE account = 'default'").pluck().all());
            for (const id of before) assert.ok(names.has(`p${id}`), `plant ${id} was acknowledged before the backup`);
          } finally {
            db.close();
          }
        } finally {
          await server.stop();
        }

        // The backup is a store: a server starts on it and serves the same token.
        const restored = await startServer({ database: `sqlite:${backupPath}` });
        try {
          assert.equal(restored.firstToken, null);
        } finally {
          await restored.stop();
        }
      });
    });
  });

  describe('refuses what it cannot do with exit status 2 and one line', () => {
    it('points a PostgreSQL store at pg_dump', () => {
      const result = runCli(['backup', '/tmp/never-written.db', '--database', 'postgres://postgres@127.0.0.1/x']);
      assert.equal(result.status, 2);
      assert.match(result.stderr, /^plant-store: error: .*pg_dump.*\n$/);
    });
    it('refuses a missing store and an existing PATH, writing nothing', async () => {
      await withFreshStore(sqlite, async (url) => {
        const missing = runCli(['backup', join(dirname(pathOf(url)), 'b.db'), '--database', url]);
        assert.equal(missing.status, 2);
        assert.match(missing.stderr, /^plant-store: error: --database: no SQLite store at .*\n$/);

        assert.equal(runCli(['token', 'create', '--account', 'a', '--database', url]).status, 0);
        const existing = join(dirname(pathOf(url)), 'existing.db');
        writeFileSync(existing, 'keep me');
        const refused = runCli(['backup', existing, '--database', url]);
        assert.equal(refused.status, 2);
        assert.match(refused.stderr, /already exists/);
        assert.equal(statSync(existing).size, 'keep me'.length);
      });
    });
  });
});

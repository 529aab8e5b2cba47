import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { loggableStore } from '../../src/lifecycle/start-line.js';
import { ENGINES, withFreshStore } from '../helpers/engines.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

interface LogLine {
  level: number;
  msg: string;
  version?: string;
  store?: string;
  workers?: number;
}

/** The JSON log lines written so far (the log is flushed at least every 100 ms). */
async function logLines(server: RunningServer, wanted: (lines: LogLine[]) => boolean): Promise<LogLine[]> {
  const lines = () =>
    server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
  return eventually(
    () => `the log line wanted; the log:\n${server.stdout()}`,
    () => (wanted(lines()) ? lines() : undefined),
    10_000,
  );
}

const startLines = (lines: LogLine[]) => lines.filter((line) => line.msg === `plant-store ${VERSION} starting`);
const privateWarnings = (lines: LogLine[]) =>
  lines.filter((line) => line.msg.startsWith('--webhook-allow-private is on'));

describe('a PostgreSQL password never reaches the log: the store is logged with ***', () => {
  it('hides the password, keeps the rest, and leaves SQLite paths alone', () => {
    assert.equal(
      loggableStore('postgres://plant:s3cret@db.internal:5432/plants?sslmode=require'),
      'postgres://plant:***@db.internal:5432/plants?sslmode=require',
    );
    assert.equal(loggableStore('postgresql://plant:p%40ss@db/plants'), 'postgresql://plant:***@db/plants');
    assert.equal(loggableStore('postgres://plant@db/plants'), 'postgres://plant@db/plants');
    assert.equal(loggableStore('sqlite:./data/plant-store.db'), 'sqlite:./data/plant-store.db');
  });
});

for (const engine of ENGINES) {
  describe(`the start-up line names the version, the store and the workers (${engine.name})`, () => {
    it('is logged once at info, before the server listens', async () => {
      await withFreshStore(engine, async (database) => {
        // PostgreSQL here trusts local connections, so a password in the URL is sent and ignored.
        const url = engine.name === 'postgres' ? database.replace('postgres@', 'postgres:s3cret-word@') : database;
        const server = await startServer({ database: url });
        try {
          const lines = await logLines(server, (l) => startLines(l).length > 0);
          const [start, ...more] = startLines(lines);
          assert.deepEqual(more, []);
          assert.equal(start!.level, 30);
          assert.equal(start!.version, VERSION);
          assert.equal(start!.workers, 1);
          assert.equal(start!.store, loggableStore(url));
          assert.ok(!server.output().includes('s3cret-word'), 'the password is not in the output');
          const listening = lines.findIndex((line) => line.msg.startsWith('Server listening at'));
          assert.ok(lines.indexOf(start!) < listening, 'said before listening');
          assert.deepEqual(privateWarnings(lines), [], 'no webhook warning without the flag');
        } finally {
          await server.stop();
        }
      });
    });

    it('is said once by the primary of --workers 2, with the number of workers', async () => {
      await withFreshStore(engine, async (database) => {
        const server = await startServer({ database, args: ['--workers', '2'] });
        try {
          const lines = await logLines(
            server,
            (l) => l.filter((line) => line.msg.startsWith('Server listening')).length >= 2,
          );
          const starts = startLines(lines);
          assert.equal(starts.length, 1, JSON.stringify(starts));
          assert.equal(starts[0]!.workers, 2);
        } finally {
          await server.stop();
        }
      });
    });
  });
}

describe('--webhook-allow-private is announced by a warning at start', () => {
  it('logs one warning, at level warn, while the flag is on', async () => {
    await withFreshStore(ENGINES[0]!, async (database) => {
      const server = await startServer({ database, args: ['--webhook-allow-private'] });
      try {
        const warnings = privateWarnings(await logLines(server, (l) => privateWarnings(l).length > 0));
        assert.equal(warnings.length, 1);
        assert.equal(warnings[0]!.level, 40);
        assert.match(warnings[0]!.msg, /never in production/);
      } finally {
        await server.stop();
      }
    });
  });
});

import assert from 'node:assert/strict';
import { request } from 'node:http';
import { Session } from 'node:inspector/promises';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The files of src/ a `POST /plants` passes through, from the socket to the SQL and back, on each
 * engine: those in which a function ran during each of several requests, one at a time, seen by
 * V8's precise coverage (its counters are reset by each take, so the app's start and the warm-up
 * requests are left out, and what a timer ran during one request only is not counted).
 * The README's code tour lists them; a merge or a split that changes them changes this test.
 * SQLite's writer thread runs in a worker, out of this isolate's sight.
 */

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
// Imported once coverage runs: a function of src/ that ran before it started would look unused.
const { sqlite, pg } = await import('../helpers/engines.js');
const { testApp } = await import('../helpers/app.js');
after(() => session.disconnect());

/** How many files each engine's path holds at most. A merge lowers these; nothing raises them lightly. */
const MOST = { sqlite: 27, postgres: 31 };

/** How many requests are watched, one at a time. */
const WINDOWS = 5;

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function post(port: number, token: string, id: number): Promise<number> {
  const body = JSON.stringify({ id, name: 'Fern' });
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const sent = request({ host: '127.0.0.1', port, method: 'POST', path: '/plants', headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode!));
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

/** The src/ files in which a function ran, the module's own top level (at offset 0) aside. */
async function filesThatRan(): Promise<string[]> {
  const { result } = await session.post('Profiler.takePreciseCoverage');
  return result
    .filter((script) => script.url.startsWith(`file://${SRC}`))
    .filter((script) => script.functions.some((fn) => fn.ranges[0]!.startOffset > 0 && fn.ranges[0]!.count > 0))
    .map((script) => fileURLToPath(script.url).slice(SRC.length))
    .sort();
}

describe('the files of src/ that POST /plants passes through', () => {
  for (const engine of [sqlite, pg]) {
    it(`on ${engine.name}: at most ${MOST[engine.name as keyof typeof MOST]}`, async () => {
      const t = await testApp(engine);
      try {
        await t.app.listen({ port: 0, host: '127.0.0.1' });
        const { port } = t.app.server.address() as { port: number };
        const token = await t.token('acct');
        // Warm-up: the first requests fill caches (the token's, the random pool) that later ones read.
        for (let id = 1; id <= 3; id++) assert.equal(await post(port, token, id), 200);
        // Timers (the deliverer's pace, the disk watch) run in some windows; a file of the path runs in all.
        let files: string[] | null = null;
        for (let id = 4; id < 4 + WINDOWS; id++) {
          await filesThatRan();
          assert.equal(await post(port, token, id), 200);
          const ran = await filesThatRan();
          files = files === null ? ran : files.filter((file) => ran.includes(file));
        }
        files = files!;
        console.log(`POST /plants on ${engine.name}: ${files.length} files\n  ${files.join('\n  ')}`);
        assert.ok(files.length <= MOST[engine.name as keyof typeof MOST], `${files.length} files: ${files.join(', ')}`);
      } finally {
        await t.close();
      }
    });
  }
});

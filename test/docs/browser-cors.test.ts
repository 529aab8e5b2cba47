import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PlantStore } from 'plant-store-client';
import { chromium, type Browser } from 'playwright-core';
import { assertPresent, CHROMIUM } from '../helpers/binaries.js';
import { sqlite } from '../helpers/engines.js';
import { createToken, startServer, type RunningServer } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';
// @ts-expect-error: plain JavaScript, so that the page can import it as it is
import { EXPECTED, runSteps } from './browser-app/steps.js';

/**
 * The contract's "Proven in a real browser": a page served from an allowed origin uses the built
 * client library (client/dist) against the API, and the same page from an origin not on the list
 * is refused. Chromium as in browser.test.ts (skipped outside CI when it is missing, saying why).
 */
const TIMEOUT = 60_000;

const file = (path: string) => fileURLToPath(new URL(path, import.meta.url));
/** What the page's origin serves: the page, the built client, its one dependency, the steps. */
const FILES: Record<string, [string, string]> = {
  '/steps.js': [file('./browser-app/steps.js'), 'text/javascript'],
  '/lossless-json.js': [file('../../node_modules/lossless-json/lib/umd/lossless-json.js'), 'text/javascript'],
};
const PAGE = `<!doctype html><html><head><meta charset="utf-8">
<script type="importmap">{"imports": {"lossless-json": "/lossless-json-esm.js"}}</script></head><body>app</body></html>`;

function serveApp(): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]!;
    if (path === '/') return response.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    if (path === '/lossless-json-esm.js') {
      // The UMD build as a module: it sets globalThis.LosslessJSON; re-export what the client imports.
      const umd = readFileSync(FILES['/lossless-json.js']![0], 'utf8');
      const body = `${umd}\nconst L = globalThis.LosslessJSON;\nexport const { isInteger, isSafeNumber, parse, stringify } = L;\n`;
      return response.writeHead(200, { 'content-type': 'text/javascript' }).end(body);
    }
    if (path.startsWith('/client/')) {
      const source = file(`../../client/dist/${path.slice('/client/'.length)}`);
      if (existsSync(source))
        return response.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(source));
    }
    const known = FILES[path];
    if (known) return response.writeHead(200, { 'content-type': known[1] }).end(readFileSync(known[0]));
    response.writeHead(404).end();
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })),
  );
}

/** The page's script: the built client, the steps, against the API; resolves with their results or the error. */
async function inPage([api, token, probe]: readonly [string, string, boolean]): Promise<unknown> {
  const { PlantStore: Client } = await import('/client/index.js' as string);
  const { runSteps: run } = await import('/steps.js' as string);
  const client = new Client({ baseUrl: api, token, retries: 0 });
  try {
    // A probe is one create: from a refused origin the browser hides every answer (a network error).
    const results = probe ? await client.addPlant({ id: 1n, name: 'probe' }) : await run(client);
    // bigint does not cross into the test: the results are strings and numbers already.
    return { ok: true, results };
  } catch (error) {
    return { ok: false, error: String((error as Error).message ?? error) };
  }
}

describe('the client library in a real browser, through CORS (headless Chromium)', { skip: CHROMIUM.skip }, () => {
  let app: { server: Server; port: number };
  let api: RunningServer;
  let browser: Browser;
  let drop = async () => {};
  let database = '';

  before(async () => {
    assertPresent(CHROMIUM);
    app = await serveApp();
    const store = await sqlite.fresh();
    drop = store.drop;
    database = store.url;
    // The page's origin is allowed; the same page under the name localhost is another origin.
    api = await startServer({ database: store.url, args: ['--cors-origins', `http://127.0.0.1:${app.port}`] });
    browser = await chromium.launch({ executablePath: CHROMIUM.path, timeout: TIMEOUT });
  });
  after(async () => {
    await browser?.close();
    await api?.stop();
    app?.server.close();
    await drop();
  });

  async function runPage(origin: string, token: string, probe = false) {
    const context = await browser.newContext();
    context.setDefaultTimeout(TIMEOUT);
    const page = await context.newPage();
    try {
      await page.goto(`${origin}/`);
      return await page.evaluate(inPage, [api.url, token, probe] as const);
    } finally {
      await context.close();
    }
  }

  it('a page from an allowed origin creates, lists, pages, updates with If-Match, deletes and follows the feed', async () => {
    const token = (await createToken(database, 'browser-app')).token;
    const outcome = (await runPage(`http://127.0.0.1:${app.port}`, token)) as {
      ok: boolean;
      results?: unknown;
      error?: string;
    };
    assert.ok(outcome.ok, outcome.error);
    assert.deepEqual(outcome.results, EXPECTED);
  });

  it('the same page from an origin not on the list is refused by the browser', async () => {
    const token = (await createToken(database, 'browser-stranger')).token;
    const outcome = (await runPage(`http://localhost:${app.port}`, token, true)) as { ok: boolean; error?: string };
    assert.equal(outcome.ok, false);
    assert.match(outcome.error ?? '', /fetch/i);
  });
});

describe('the browser steps themselves, run in Node against a real server', () => {
  const s = realServer(sqlite);
  it('give what the browser test expects', async () => {
    const client = new PlantStore({ baseUrl: s.url, token: (await createToken(s.database, 'steps-in-node')).token });
    const results = JSON.parse(
      JSON.stringify(await runSteps(client), (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
    );
    assert.deepEqual(results, EXPECTED);
  });
});

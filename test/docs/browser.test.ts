import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { assertPresent, CHROMIUM } from '../helpers/binaries.js';
import { sqlite } from '../helpers/engines.js';
import { call } from '../helpers/http.js';
import { realServer } from '../helpers/suite.js';

/**
 * GET /docs in a real browser: Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it),
 * driven by playwright-core, which never downloads a browser. CHROMIUM_PATH points elsewhere.
 * Under CI=true a missing browser fails the run; elsewhere these tests are skipped, saying why
 * (helpers/binaries.ts).
 */
/**
 * Outside the checkout, so that running the tests leaves it as it was; copied over
 * docs/docs-page.png by hand when the page's look changes (docs/api.md says so).
 */
const SCREENSHOT = join(tmpdir(), 'plant-store-docs-page.png');
/** Generous: two cores shared by several test runs. */
const TIMEOUT = 60_000;

interface Operation {
  operationId: string;
  tags: string[];
}

interface DocsPage {
  page: Page;
  /** Console errors and uncaught exceptions of the page. */
  errors: string[];
  /** Every request the page tried to send anywhere but 127.0.0.1 (each one refused). */
  outside: string[];
}

describe('GET /docs in a real browser (headless Chromium)', { skip: CHROMIUM.skip }, () => {
  const s = realServer(sqlite);
  let browser: Browser;

  before(async () => {
    assertPresent(CHROMIUM);
    browser = await chromium.launch({ executablePath: CHROMIUM.path, timeout: TIMEOUT });
  });
  after(async () => browser?.close());

  async function openDocs(): Promise<DocsPage> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(TIMEOUT);
    const docs: DocsPage = { page: await context.newPage(), errors: [], outside: [] };
    await context.route('**/*', (route) => {
      if (new URL(route.request().url()).hostname === '127.0.0.1') return route.continue();
      docs.outside.push(route.request().url());
      return route.abort();
    });
    docs.page.on('console', (message) => {
      if (message.type() === 'error') docs.errors.push(message.text());
    });
    docs.page.on('pageerror', (error) => docs.errors.push(error.message));
    await docs.page.goto(`${s.url}/docs`);
    await docs.page.locator('.opblock').first().waitFor();
    return docs;
  }

  async function authorize(page: Page, token: string) {
    await page.getByRole('button', { name: 'Authorize' }).first().click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('input').fill(token);
    await dialog.getByRole('button', { name: 'Apply credentials' }).click();
    await dialog.getByRole('button', { name: 'Remove authorization' }).waitFor();
    await dialog.getByRole('button', { name: 'Close' }).click();
  }

  /** Opens an operation, fills the JSON body if given, runs it; resolves with the response shown. */
  async function tryItOut(page: Page, operation: string, body?: string) {
    const block = page.locator(`#operations-plants-${operation}`);
    await block.locator('.opblock-summary').first().click();
    await block.getByRole('button', { name: 'Try it out' }).click();
    if (body !== undefined) await block.locator('textarea.body-param__text').fill(body);
    const answered = page.waitForResponse((response) => new URL(response.url()).pathname === '/plants');
    await block.getByRole('button', { name: 'Execute' }).click();
    const response = await answered;
    const shown: Locator = block.locator('.live-responses-table .response');
    await shown.locator('.response-col_status').waitFor();
    return {
      network: response,
      // biome-ignore lint/performance/useDomNodeTextContent: the text as the reader sees it, rendered.
      status: (await shown.locator('.response-col_status').innerText()).trim(),
      // biome-ignore lint/performance/useDomNodeTextContent: the text as the reader sees it, rendered.
      body: await shown.locator('.response-col_description pre').first().innerText(),
    };
  }

  describe('loads with no console error, nothing from outside 127.0.0.1, as Plant Store', () => {
    it('shows the title, /openapi.json in the top bar, and no error', { timeout: 4 * TIMEOUT }, async () => {
      const { page, errors, outside } = await openDocs();
      await page.waitForLoadState('networkidle');
      assert.equal(await page.title(), 'Plant Store API reference');
      assert.equal(await page.locator('.topbar input').inputValue(), '/openapi.json');
      assert.deepEqual(errors, []);
      assert.deepEqual(outside, []);
      await page.screenshot({ path: SCREENSHOT, fullPage: true, animations: 'disabled' });
      await page.context().close();
    });
  });

  describe('lists every operation of the served document under its tag', () => {
    it('has one block per operation and no "default" tag', { timeout: 4 * TIMEOUT }, async () => {
      const document = (await call(`${s.url}/openapi.json`)).json as {
        paths: Record<string, Record<string, Operation>>;
      };
      const operations = Object.values(document.paths).flatMap((item) => Object.values(item));
      assert.ok(operations.length >= 5);
      const { page, errors } = await openDocs();
      for (const { tags, operationId } of operations) {
        assert.equal(await page.locator(`#operations-${tags[0]}-${operationId}`).count(), 1, operationId);
      }
      assert.equal(await page.locator('.opblock').count(), operations.length);
      assert.equal(await page.locator('#operations-tag-default').count(), 0);
      assert.deepEqual(errors, []);
      await page.context().close();
    });
  });

  describe('Authorize with a token, then Try it out: POST /plants answers 200 with the plant, GET /plants shows it', () => {
    it('creates and lists through the page', { timeout: 4 * TIMEOUT }, async () => {
      const { page, errors, outside } = await openDocs();
      await authorize(page, s.token);

      const created = await tryItOut(page, 'addPlant', '{"id": 4242, "name": "Fiddle-leaf fig", "tag": "ficus"}');
      assert.equal(created.network.status(), 200);
      assert.equal(created.network.request().headers().authorization, `Bearer ${s.token}`);
      assert.equal(created.status, '200');
      assert.deepEqual(JSON.parse(created.body), { name: 'Fiddle-leaf fig', tag: 'ficus' });

      const listed = await tryItOut(page, 'listPlants');
      assert.equal(listed.status, '200');
      assert.deepEqual(JSON.parse(listed.body), [{ name: 'Fiddle-leaf fig', tag: 'ficus' }]);
      assert.deepEqual(errors, []);
      assert.deepEqual(outside, []);
      await page.context().close();
    });
  });

  describe('without the token, Try it out shows the 401 Error', () => {
    it('shows the status and the Error body', { timeout: 4 * TIMEOUT }, async () => {
      const { page, errors } = await openDocs();
      const listed = await tryItOut(page, 'listPlants');
      assert.equal(listed.network.request().headers().authorization, undefined);
      assert.equal(listed.status, '401');
      const body = JSON.parse(listed.body) as { error: number; message: string };
      assert.equal(body.error, 401);
      assert.match(body.message, /Authorization/);
      // Chromium logs every 4xx answer; that one is the only error.
      assert.deepEqual(errors, ['Failed to load resource: the server responded with a status of 401 (Unauthorized)']);
      await page.context().close();
    });
  });
});

/**
 * `npm run client:generate`: starts the built server on a throw-away SQLite store, fetches its
 * /openapi.json, writes the generated types to client/src/schema.d.ts, and stops the server.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../../test/helpers/server.js';
import { schemaSource } from './schema-source.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-schema-'));
const server = await startServer({ database: `sqlite:${join(dir, 'store.db')}` });
try {
  const response = await fetch(`${server.url}/openapi.json`);
  if (!response.ok) throw new Error(`GET /openapi.json answered ${response.status}`);
  const target = new URL('../src/schema.d.ts', import.meta.url);
  writeFileSync(target, await schemaSource(await response.json()));
  console.log(`wrote ${target.pathname}`);
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

/**
 * `npm run client:generate`: starts the built server on a throw-away SQLite store, fetches its
 * /openapi.json, writes the generated types to client/src/schema.d.ts, and stops the server.
 */
import { writeFileSync } from 'node:fs';
import { schemaSource } from './schema-source.js';
import { servedDocument } from './served-document.js';

const target = new URL('../src/schema.d.ts', import.meta.url);
writeFileSync(target, await schemaSource(await servedDocument()));
console.log(`wrote ${target.pathname}`);

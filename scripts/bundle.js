/**
 * `npm run build`'s step after tsc: the service bundled, dist/cli.js (the CLI and server, in
 * place of tsc's module of that name) and its two threads beside it (dist/writer-worker.js,
 * dist/delivery-worker.js, which src/thread-module.ts finds next to the module that starts them),
 * plus the chunks they share or load late.
 *
 * Why: Node 20 loads an ES module graph file by file, and the server's was about 1,000 files
 * (TypeBox alone 250, then ajv, yaml, OpenTelemetry's API through prom-client, Fastify). Loading
 * them cost each start about 0.7 s of CPU, nearly half of it (docs/operating.md, "The production
 * command"). The code is the same: tsc still type-checks it and writes the rest of dist/ module by
 * module, which tests of single modules import.
 *
 * Left out of the bundle, loaded from node_modules as before: packages that find files of their
 * own beside their code (better-sqlite3's native addon, swagger-ui's pages, pino's transports), and
 * those a setting loads late (OpenTelemetry for traces, jose for JWTs, ioredis for a shared rate
 * limit). A bundle would not start those any faster, and as packages they load as their authors
 * ship them (ioredis's CommonJS exports, bundled, lost the named `Redis`).
 */
import { readdirSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

// Chunks are named by their content, so an earlier build's would otherwise stay behind.
for (const file of readdirSync('dist')) if (file.startsWith('chunk-')) rmSync(`dist/${file}`);

const external = ['better-sqlite3', '@fastify/swagger-ui', 'pino', '@opentelemetry/*', 'jose', 'ioredis'];

await build({
  entryPoints: {
    cli: 'src/cli.ts',
    'writer-worker': 'src/storage/sqlite/writer-worker.ts',
    'delivery-worker': 'src/webhooks/delivery-worker.ts',
  },
  outdir: 'dist',
  bundle: true,
  // What a setting loads late (tracing, JWTs, Redis) stays late: in chunks of its own, imported
  // only when asked for.
  splitting: true,
  // Beside the entries: src/version.ts finds package.json one folder up from its module.
  chunkNames: '[name]-[hash]',
  platform: 'node',
  target: 'node20',
  format: 'esm',
  external,
  sourcemap: 'linked',
  // Bundled CommonJS packages call require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);",
  },
  logLevel: 'warning',
});

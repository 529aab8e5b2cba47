/**
 * `npm run build`'s step after tsc: the service bundled, dist/cli.js (the CLI and server, in
 * place of tsc's module of that name) and its two threads beside it (dist/writer-worker.js,
 * dist/delivery-worker.js, which src/thread-module.ts finds next to the module that starts them),
 * plus the chunks they share or load late.
 *
 * Why: Node 20 loads an ES module graph file by file, and the server's was about 1,000 files
 * (TypeBox alone 250, then ajv, yaml, Fastify); a start from the bundle takes less CPU (measured in
 * bench/analysis.md, "the server bundled"; docs/operating.md, "The production command"). The code is the same:
 * tsc still type-checks it and writes the rest of dist/ module by module, which tests of single
 * modules import.
 *
 * Left out of the bundle, loaded from node_modules as before: packages that find files of their
 * own beside their code (better-sqlite3's native addon, swagger-ui's pages, pino's transports), and
 * those a setting loads late (OpenTelemetry for traces, jose for JWTs, ioredis for a shared rate
 * limit; OpenTelemetry's API loads at every start all the same, required by prom-client). A
 * bundle would not start those any faster, and as packages they load as their authors ship them
 * (ioredis's CommonJS exports, bundled, lost the named `Redis`).
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;

// The driver's fixes (patches/, applied by patch-package at install) must be in what is bundled: an
// install that skipped them (`npm ci --ignore-scripts`) would otherwise ship the unpatched driver
// without a word. Each patched file must hold as many of the patch's markers as the patch adds.
const MARKER = 'Patched by plant-store';
for (const patch of readdirSync(`${root}patches`).filter((file) => file.endsWith('.patch'))) {
  for (const part of readFileSync(`${root}patches/${patch}`, 'utf8')
    .split(/^diff --git /m)
    .slice(1)) {
    const file = /^a\/(\S+)/.exec(part)[1];
    const expected = part.split('\n').filter((line) => line.startsWith('+') && line.includes(MARKER)).length;
    const found = readFileSync(`${root}${file}`, 'utf8').split(MARKER).length - 1;
    if (found !== expected) {
      console.error(
        `${file} lacks the fixes of patches/${patch} (${found} of ${expected} marks): run \`npx patch-package\` (npm install does), then build again.`,
      );
      process.exit(1);
    }
  }
}
const external = ['better-sqlite3', '@fastify/swagger-ui', 'pino', '@opentelemetry/*', 'jose', 'ioredis'];

const { metafile } = await build({
  absWorkingDir: root,
  entryPoints: {
    cli: 'src/cli.ts',
    'writer-worker': 'src/storage/sqlite/writer-worker.ts',
    'delivery-worker': 'src/webhooks/delivery-worker.ts',
  },
  // Every output side by side in dist/, as the modules expect: src/thread-module.ts looks for a
  // thread's entry beside the module that starts it, src/version.ts for package.json one folder up.
  outdir: 'dist',
  bundle: true,
  // What a setting loads late (tracing, JWTs, Redis) stays late: in files of its own, imported
  // only when asked for.
  splitting: true,
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
  metafile: true,
});

// Files other than the entries are named by their content: an earlier build's stay behind unless
// removed, and only once this build's are written, so that a server running from dist/ can still
// start a thread or a worker process in between.
const written = new Set(Object.keys(metafile.outputs));
for (const file of readdirSync(`${root}dist`)) {
  if (/-[A-Z0-9]{8}\.js(\.map)?$/.test(file) && !written.has(`dist/${file}`)) rmSync(`${root}dist/${file}`);
}

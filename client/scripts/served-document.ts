import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built server (`npm run build` makes it), from the root of the checkout. */
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/**
 * The OpenAPI document as the built server serves it: started on a throw-away SQLite store and
 * any free port, asked for /openapi.json, and stopped.
 */
export async function servedDocument(): Promise<object> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-schema-'));
  const server = spawn(
    process.execPath,
    [CLI, 'serve', '--port', '0', '--database', `sqlite:${join(dir, 'store.db')}`],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let output = '';
      server.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) resolve(match[1]!);
      });
      server.on('exit', (code) => reject(new Error(`the server exited (${code}) before listening:\n${output}`)));
    });
    const response = await fetch(`${url}/openapi.json`);
    if (!response.ok) throw new Error(`GET /openapi.json answered ${response.status}`);
    return (await response.json()) as object;
  } finally {
    if (server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
